"""Shared-memory banks: which bank a word lies in, and how many passes one warp's access takes.

Shared memory is split into 32 banks, each 4 bytes wide: the 4-byte word w lies in bank w % 32, and a
bank delivers one word per pass. A warp's shared-memory instruction, 4 bytes per lane, is served in one
pass when its 32 lanes touch 32 different banks. Lanes that touch the same word share it (a broadcast);
lanes that touch different words of one bank are served one word after another: n different words in one
bank make an n-way bank conflict, n passes instead of one. (Wider accesses, such as a 128-bit load per
lane, are split into several passes by design; this model covers the 4-byte ones.)

Notebook 06 uses this model before the GPU measures it; the exercise checker (course/exercises/banks.py)
uses it on the accesses its simulator records."""
from collections import defaultdict

BANKS = 32
WARP_SIZE = 32

# The colours of draw_bank_map: a bank serving several words, a bank serving one, a bank no lane touches.
CONFLICT_COLOUR, ONE_WORD_COLOUR, IDLE_COLOUR = 'tab:red', 'tab:green', '0.88'


def bank_of(word): return word % BANKS


def conflict_ways(words):
    """(ways, bank, the different words in that bank) for one warp's access to `words` (one per lane):
    the most different words any one bank must serve, the first such bank, and its words."""
    per_bank = defaultdict(set)
    for word in words: per_bank[bank_of(word)].add(word)
    bank = min(per_bank, key=lambda b: (-len(per_bank[b]), b))
    return len(per_bank[bank]), bank, sorted(per_bank[bank])


def passes(words):
    "How many passes one warp's access to `words` (one per lane) takes: 1 without a bank conflict."
    return conflict_ways(words)[0]


def column_ways(rows, row_stride):
    """The bank conflict of a warp reading one column of a tile of `rows` rows stored `row_stride` words
    apart, lane i in row i: (ways, bank, the different words in that bank). A row is always conflict-free."""
    return conflict_ways([lane * row_stride for lane in range(min(rows, WARP_SIZE))])


def warp_threads(block_x, warp=0):
    """(x, y) of the threads that make up warp `warp` of a block `block_x` threads wide, lane by lane:
    a warp is 32 consecutive threads, x counting fastest."""
    return [((warp * WARP_SIZE + lane) % block_x, (warp * WARP_SIZE + lane) // block_x) for lane in range(WARP_SIZE)]


def transpose_tile_words(row_floats, warp=0, tile=32):
    """The shared words warp `warp` touches in a transpose through a `tile` x `tile` shared array whose rows are
    `row_floats` floats apart, one thread per element (a tile x tile block): {'write a row of the tile':
    words of tile[ty][tx], 'read a column of the tile': words of tile[tx][ty]}, lane by lane."""
    lanes = warp_threads(tile, warp)
    return {'write a row of the tile': [ty * row_floats + tx for tx, ty in lanes],
            'read a column of the tile': [tx * row_floats + ty for tx, ty in lanes]}


def bank_map(words):
    """How one warp's access to `words` (the word of lane 0, 1, ...) falls on the banks: a dict with
    'bank' (the bank of each lane), 'words' ({bank: its different words}), 'passes', 'crowded' (the banks
    that serve more than one word, one after another) and 'idle' (the banks no lane touches)."""
    per_bank = defaultdict(set)
    for word in words: per_bank[bank_of(word)].add(word)
    return {'bank': [bank_of(w) for w in words], 'words': {b: sorted(ws) for b, ws in sorted(per_bank.items())},
            'passes': passes(words), 'crowded': sorted(b for b, ws in per_bank.items() if len(ws) > 1),
            'idle': [b for b in range(BANKS) if b not in per_bank]}


def bank_colour(bank, mapping):
    "The colour draw_bank_map gives a bank: CONFLICT_COLOUR, ONE_WORD_COLOUR or IDLE_COLOUR."
    if bank in mapping['crowded']: return CONFLICT_COLOUR
    return IDLE_COLOUR if bank in mapping['idle'] else ONE_WORD_COLOUR


def draw_bank_map(row_floats=(32, 33), column=0):
    """One panel per row length in `row_floats`: the 32 lanes of a warp reading column `column` of a 32-row
    shared tile (lane i reads tile[i][column], the word row_floats*i + column), each lane joined to its word
    and each word to its bank. Banks serving several words are red, those serving one green, unused ones
    grey; each title counts the passes. Each bank's box has the gid 'bank b' (the tests read it)."""
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch, Rectangle
    fig, axs = plt.subplots(1, len(row_floats), figsize=(5.2 * len(row_floats), 9.5), squeeze=False)
    label = dict(fontsize=6.5, ha='center', va='center')
    for ax, stride in zip(axs[0], row_floats):
        words = [lane * stride + column for lane in range(WARP_SIZE)]
        mapping = bank_map(words)
        for lane, word in enumerate(words):
            bank = mapping['bank'][lane]
            colour = CONFLICT_COLOUR if bank in mapping['crowded'] else ONE_WORD_COLOUR
            ax.plot([0, 1], [lane, lane], color='0.6', lw=0.6, zorder=1)
            ax.plot([1.35, 2.65], [lane, bank], color=colour, lw=0.9, zorder=1)
            ax.add_patch(Rectangle((0.65, lane - 0.4), 0.7, 0.8, facecolor='white', edgecolor='0.4', lw=0.6, zorder=2))
            ax.text(1, lane, str(word), zorder=3, **label)
        ax.scatter([0] * WARP_SIZE, range(WARP_SIZE), marker='o', s=14, color='0.25', zorder=2)
        for lane in range(WARP_SIZE): ax.text(-0.3, lane, str(lane), **label)
        for bank in range(BANKS):
            ax.add_patch(Rectangle((2.65, bank - 0.4), 0.7, 0.8, facecolor=bank_colour(bank, mapping), edgecolor='0.4',
                                   lw=0.6, zorder=2, gid=f'bank {bank}'))
            ax.text(3, bank, str(bank), zorder=3, **label)
        for x, head in ((-0.15, 'lane'), (1, 'word'), (3, 'bank')):
            ax.text(x, -1.6, head, fontsize=9, ha='center', va='center', fontweight='bold')
        n = mapping['passes']
        crowd = (f": bank {mapping['crowded'][0]} serves {len(mapping['words'][mapping['crowded'][0]])} different words"
                 if mapping['crowded'] else ": every lane in a bank of its own")
        ax.set_title(f"rows of {stride} floats: lane i reads tile[i][{column}], word {stride}*i{f' + {column}' if column else ''}\n"
                     f"{n} pass{'es' if n > 1 else ''}{crowd}", fontsize=10)
        ax.set_xlim(-0.7, 3.6); ax.set_ylim(WARP_SIZE, -2.4); ax.axis('off')
    handles = [Line2D([], [], color=CONFLICT_COLOUR, marker='s', markersize=8, lw=1.5,
                      label='bank serving several words: one pass per word'),
               Line2D([], [], color=ONE_WORD_COLOUR, marker='s', markersize=8, lw=1.5,
                      label='bank serving one word: all lanes in one pass'),
               Patch(facecolor=IDLE_COLOUR, edgecolor='0.4', label='bank no lane touches'),
               Line2D([], [], color='0.25', marker='o', lw=0, label='a lane of the warp')]
    fig.legend(handles=handles, loc='lower center', ncol=2, fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    return fig
