"""A Python model of a warp's tensor-core fragments, for `mma.sync` on sm_80 and later.

One `mma.sync.aligned.m16n8kK` instruction is issued by a whole warp: together its 32 lanes hold an M x K tile
of A, a K x N tile of B and an M x N tile of C in registers, and the tensor core returns D = A.B + C into
registers laid out as C. No lane holds a row or a column: the PTX ISA ("Matrix Fragments for mma.m16n8k16 /
mma.m16n8k8") gives, for lane `l` and register element `i`, the row and column it holds, in terms of

    group = l >> 2        (groupID: 8 groups of 4 lanes)
    thread = l % 4        (threadID_in_group)

This module writes those maps down once (`element`), and builds on them what a learner checks a kernel
against on a CPU: the per-lane registers of a matrix (`to_registers`), the matrix back from them
(`from_registers`), and one warp's mma (`warp_mma`). `round_to_tf32` and `round_to_bf16` round float32
inputs as the tensor core reads them.
"""
from typing import NamedTuple

WARP = 32


class MmaShape(NamedTuple):
    "One mma.sync shape: the tile sizes and how many elements of A, B and C/D each lane holds."
    name: str
    inputs: str        # the input type: 'bf16' (or f16) or 'tf32'
    m: int
    n: int
    k: int

    def elements(self, operand):
        "Elements per lane of operand 'a', 'b' or 'c' (D is laid out as C)."
        rows, cols = self.size(operand)
        return rows * cols // WARP

    def size(self, operand):
        return {'a': (self.m, self.k), 'b': (self.k, self.n), 'c': (self.m, self.n), 'd': (self.m, self.n)}[operand]


M16N8K16 = MmaShape('m16n8k16', 'bf16', 16, 8, 16)   # 8 inputs of A, 4 of B per lane, two per 32-bit register
M16N8K8 = MmaShape('m16n8k8', 'tf32', 16, 8, 8)      # 4 of A, 2 of B per lane, one per register
SHAPES = (M16N8K16, M16N8K8)


def element(shape, operand, lane, i):
    "(row, col) of element `i` of `lane`'s fragment of operand 'a', 'b' or 'c'/'d', as the PTX ISA lays it out."
    if not 0 <= lane < WARP: raise ValueError(f"lane {lane} is not in 0..31")
    if not 0 <= i < shape.elements(operand): raise ValueError(f"{shape.name} {operand}: element {i} is not in "
                                                               f"0..{shape.elements(operand) - 1}")
    group, thread = lane >> 2, lane % 4
    if operand in ('c', 'd'):                                   # the same for both shapes: 2 rows, 2 neighbours each
        return group + 8 * (i >= 2), thread * 2 + (i & 1)
    if shape.inputs == 'bf16':                                  # 16-bit inputs, two per register
        if operand == 'a': return group + 8 * (i % 4 >= 2), thread * 2 + (i & 1) + 8 * (i >= 4)
        return thread * 2 + (i & 1) + 8 * (i >= 2), group      # b
    if operand == 'a': return group + 8 * (i & 1), thread + 4 * (i >= 2)      # tf32: one input per register
    return thread + 4 * i, group                                # b


def placements(shape, operand):
    "(lane, i, row, col) for every element i of every lane's fragment of `operand`: the map, walked once."
    for lane in range(WARP):
        for i in range(shape.elements(operand)):
            yield (lane, i, *element(shape, operand, lane, i))


def owners(shape, operand):
    "[[(lane, i)] for each column] for each row: which lane's element i holds each element of the tile."
    rows, cols = shape.size(operand)
    grid = [[None] * cols for _ in range(rows)]
    for lane, i, r, c in placements(shape, operand):
        if grid[r][c] is not None: raise AssertionError(f"({r}, {c}) held twice: {grid[r][c]} and {(lane, i)}")
        grid[r][c] = (lane, i)
    return grid


def to_registers(shape, operand, tile):
    "The warp's registers holding a rows x cols tile (a nested list or array): regs[lane][i]."
    regs = [[None] * shape.elements(operand) for _ in range(WARP)]
    for lane, i, r, c in placements(shape, operand): regs[lane][i] = tile[r][c]
    return regs


def from_registers(shape, operand, regs):
    "The tile that the warp's registers regs[lane][i] hold, as nested lists."
    rows, cols = shape.size(operand)
    tile = [[None] * cols for _ in range(rows)]
    for lane, i, r, c in placements(shape, operand): tile[r][c] = regs[lane][i]
    return tile


def warp_mma(shape, a_regs, b_regs, c_regs):
    """D = A.B + C for one warp, from registers to registers, laid out as mma.sync lays them out. The arithmetic is
    Python's (float64): the model checks where values go; round the inputs first (round_to_tf32, round_to_bf16)
    to see what the precision costs."""
    a, b, c = (from_registers(shape, op, regs) for op, regs in (('a', a_regs), ('b', b_regs), ('c', c_regs)))
    d = [[c[r][j] + sum(a[r][x] * b[x][j] for x in range(shape.k)) for j in range(shape.n)] for r in range(shape.m)]
    return to_registers(shape, 'd', d)


def round_to_tf32(x):
    """x (float32 values, numpy) rounded to TF32 as `cvt.rna.tf32.f32` does: the 13 low mantissa bits dropped,
    to nearest with ties away from zero; 10 mantissa bits remain. NaN and infinity pass through."""
    import numpy as np
    bits = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    finite = (bits & 0x7F800000) != 0x7F800000
    rounded = ((bits + 0x1000) & 0xFFFFE000).astype(np.uint32)       # add half of the dropped part, then drop it
    return np.where(finite, rounded, bits.astype(np.uint32)).view(np.float32)


def round_to_bf16(x):
    "x (float32, numpy) rounded to bfloat16 (7 mantissa bits, 8 significant; to nearest even, as torch converts), back in float32."
    import numpy as np, torch
    return torch.from_numpy(np.asarray(x, dtype=np.float32).copy()).to(torch.bfloat16).float().numpy()


def draw_fragments(shape=M16N8K16, operands=('a', 'b', 'c'), lane=None):
    """The tiles of A, B and C/D of `shape`, each element labelled with the lane (and element index) that holds
    it; the 8 groups of 4 lanes in 8 colours; with `lane`, only that lane's elements coloured."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    widths = [shape.size(op)[1] for op in operands]
    cell = 0.34                       # inches per element: the figure stays about as wide as a notebook's output area,
    fig, axs = plt.subplots(1, len(operands), figsize=(sum(widths) * cell + 1.2, shape.m * cell + 1.1),   # unscaled
                            gridspec_kw=dict(width_ratios=widths))
    colours = plt.get_cmap('tab10').colors
    for ax, op in zip(axs, operands):
        rows, cols = shape.size(op)
        for r, row in enumerate(owners(shape, op)):
            for c, (l, i) in enumerate(row):
                on = lane is None or l == lane
                ax.add_patch(Rectangle((c, r), 1, 1, facecolor=colours[(l >> 2) % 10] if on else '0.93',
                                       alpha=0.55 if on else 1, edgecolor='0.4', lw=0.5, gid=f'{op} {r} {c} lane {l}'))
                ax.text(c + 0.5, r + 0.5, f'{l}:{i}', ha='center', va='center', fontsize=7.5,
                        color='k' if on else '0.45')
        ax.set_xlim(0, cols); ax.set_ylim(rows, 0); ax.set_aspect('equal')
        ax.set_xticks([c + 0.5 for c in range(cols)], range(cols), fontsize=7)       # row and column numbers
        ax.set_yticks([r + 0.5 for r in range(rows)], range(rows), fontsize=7)
        ax.tick_params(length=0, pad=2)
        ax.set_title(f"{'C and D' if op == 'c' else op.upper()}: {rows} x {cols}", fontsize=10)
    who = f"lane {lane}'s elements coloured" if lane is not None else "colour: the lane's group (lane >> 2)"
    fig.suptitle(f"mma.sync.{shape.name} ({shape.inputs} inputs): 'lane:i' is element i of that lane's fragment; {who}",
                 fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig


# --------------------------------------------------------------------------------------------------
# ldmatrix: a warp loads 8 x 8 tiles of 16-bit values from shared memory straight into fragment layout
# --------------------------------------------------------------------------------------------------
LDMATRIX_ROW = 8          # a row of an 8 x 8 matrix of 16-bit values: 8 elements, 16 bytes


def ldmatrix(shared, row_starts, matrices=4, trans=False):
    """What `ldmatrix.sync.aligned.m8n8.x{matrices}{.trans}.shared.b16` loads: `shared` is shared memory as a flat
    sequence of 16-bit values, `row_starts[l]` the element offset of the row lane l points at (lanes 8j..8j+7
    give the 8 rows of matrix j). Returns regs[lane][j] = the two values of matrix j that lane holds: row
    lane >> 2, columns 2 (lane % 4) and the next; with `trans`, the matrix transposed first."""
    if len(row_starts) < 8 * matrices: raise ValueError(f"x{matrices} needs {8 * matrices} row addresses")
    regs = [[None] * matrices for _ in range(WARP)]
    for j in range(matrices):
        rows = [shared[row_starts[8 * j + r]: row_starts[8 * j + r] + LDMATRIX_ROW] for r in range(8)]
        if trans: rows = [list(col) for col in zip(*rows)]
        for lane in range(WARP):
            r, c = lane >> 2, 2 * (lane % 4)
            regs[lane][j] = (rows[r][c], rows[r][c + 1])
    return regs


def ldmatrix_passes(row_starts, matrices=4, element_bytes=2):
    """Shared-memory passes of one ldmatrix, matrix by matrix: the 8 rows of a matrix (16 bytes each) are read
    together, and the most different 4-byte words any bank must serve is the number of passes (course.shared_banks)."""
    from .shared_banks import passes
    per_matrix = []
    for j in range(matrices):
        words = [(row_starts[8 * j + r] * element_bytes) // 4 + w for r in range(8)
                 for w in range(LDMATRIX_ROW * element_bytes // 4)]
        per_matrix.append(passes(words))
    return per_matrix


def swizzled_offset(row, col, row_elements=64, element_bytes=2):
    """The element offset of (row, col) in a tile with `row_elements` 16-bit values per row, stored with its
    16-byte chunks XOR-swizzled by the row (chunk c of row r goes to chunk c ^ (r % 8)): the 8 rows an ldmatrix
    reads at one column then fall in 8 different groups of 4 banks."""
    per_chunk = 16 // element_bytes
    chunk, within = divmod(col, per_chunk)
    return row * row_elements + ((chunk ^ (row % 8)) * per_chunk) + within


def draw_swizzle(rows=8, chunks=8, read_chunk=0):
    """Where the 16-byte chunks of `rows` rows of a 128-byte-row tile are stored, as they are and XOR-swizzled (chunk c
    of row r at place c ^ (r % 8)): each cell is a place in its row, labelled with the chunk stored there; the places
    of chunk `read_chunk` of every row, which one ldmatrix matrix reads together, are red. A place spans 4 banks (place
    p: banks 4p .. 4p + 3), so red cells in one column share their banks. Each cell has the gid 'panel:row:place'."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    per_chunk = 8                                          # bf16 values per 16-byte chunk
    layouts = {'as it is': lambda r, c: c, 'XOR-swizzled': lambda r, c: swizzled_offset(r, c * per_chunk) % (chunks * per_chunk) // per_chunk}
    fig, axs = plt.subplots(1, 2, figsize=(11, 0.55 * rows + 1.8))
    for ax, (name, place_of) in zip(axs, layouts.items()):
        columns = {place_of(r, read_chunk) for r in range(rows)}
        for r in range(rows):
            for c in range(chunks):
                p = place_of(r, c)
                hit = c == read_chunk
                ax.add_patch(Rectangle((p, r), 1, 1, facecolor='#d62728' if hit else '0.93', edgecolor='0.4', lw=0.6,
                                       gid=f'{name}:{r}:{p}'))
                ax.text(p + 0.5, r + 0.5, str(c), ha='center', va='center', fontsize=8, color='w' if hit else 'k')
        ax.set_xlim(0, chunks); ax.set_ylim(rows, 0); ax.set_aspect('equal')
        ax.set_xticks([p + 0.5 for p in range(chunks)], [f'{4 * p}-{4 * p + 3}' for p in range(chunks)], fontsize=7)
        ax.set_yticks([r + 0.5 for r in range(rows)], [str(r) for r in range(rows)], fontsize=8)
        ax.set_xlabel('place in the row (its banks)'); ax.set_ylabel('row')
        ways = rows // len(columns)
        ax.set_title(f"{name}: chunk {read_chunk} of rows 0-{rows - 1} in {len(columns)} bank group"
                     f"{'s' if len(columns) > 1 else ''}: {ways} pass{'es' if ways > 1 else ''}", fontsize=10)
    fig.suptitle("a 128-byte row is 8 chunks of 16 bytes; the number in a cell is the chunk stored at that place", fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig
