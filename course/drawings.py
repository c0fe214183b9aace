"The figures the notebooks draw (returned, never saved: a notebook run changes no file of the course)."


def draw_tiling(tw=4, tiles=3, block=(1, 1), ph=1, thread=(2, 1)):
    """m, n and out as grids of tw x tw tiles, for one block (bx, by), one phase `ph` and one thread (tr, tc).

    Marks the tiles the block loads in phase `ph`, the elements the thread copies into shared memory
    (m[r, idx+tc] and n[idx+tr, c]), the row and column of the tiles it reads for its products, and its
    output element (r, c), with idx = ph*tw, r = by*tw + tr and c = bx*tw + tc."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    bx, by = block
    tr, tc = thread
    size, idx = tw * tiles, ph * tw
    r, c = by * tw + tr, bx * tw + tc
    fig, axs = plt.subplots(1, 3, figsize=(12, 4.6))

    def box(ax, x, y, w, h, **kw): ax.add_patch(Rectangle((x, y), w, h, **kw))

    for ax, name in zip(axs, ['m', 'n', 'out = m @ n']):
        ax.set_xlim(-0.2, size + 0.2); ax.set_ylim(size + 0.2, -0.2); ax.set_aspect('equal')
        ax.set_title(name, pad=22); ax.axis('off')
        for i in range(size + 1):
            lw = 1.6 if i % tw == 0 else 0.3
            ax.plot([i, i], [0, size], color='0.5', lw=lw); ax.plot([0, size], [i, i], color='0.5', lw=lw)
    m_ax, n_ax, o_ax = axs
    # the tiles this block loads in phase ph, the row / column of them this thread reads, its own elements
    box(m_ax, idx, by * tw, tw, tw, color='tab:blue', alpha=0.25)
    box(n_ax, bx * tw, idx, tw, tw, color='tab:orange', alpha=0.25)
    box(m_ax, idx, r, tw, 1, color='tab:blue', alpha=0.35)
    box(n_ax, c, idx, 1, tw, color='tab:orange', alpha=0.35)
    box(m_ax, idx + tc, r, 1, 1, color='tab:blue')
    box(n_ax, c, idx + tr, 1, 1, color='tab:orange')
    box(o_ax, bx * tw, by * tw, tw, tw, color='0.85')
    box(o_ax, c, r, 1, 1, color='0.2')
    # the names the kernel uses for these positions
    label = dict(fontsize=9, ha='center', va='center')
    m_ax.annotate('idx = ph*tw', (idx, 0), (idx, -1.0), arrowprops=dict(arrowstyle='->'), **label)
    m_ax.annotate('r = by*tw + tr', (0, r + 0.5), (-2.6, r + 0.5), arrowprops=dict(arrowstyle='->'), **label)
    m_ax.text(idx + tc + 0.5, r + 0.5, 'tc', color='w', **label)
    n_ax.annotate('c = bx*tw + tc', (c + 0.5, 0), (c + 0.5, -1.0), arrowprops=dict(arrowstyle='->'), **label)
    n_ax.annotate('idx', (0, idx), (-1.2, idx), arrowprops=dict(arrowstyle='->'), **label)
    n_ax.text(c + 0.5, idx + tr + 0.5, 'tr', color='w', **label)
    o_ax.text(c + 0.5, r + 0.5, 'r,c', color='w', fontsize=7, ha='center', va='center')
    o_ax.text(bx * tw + tw / 2, by * tw - 0.5, f'block ({bx}, {by})', **label)
    fig.suptitle(f"Phase ph={ph} of block (bx, by)=({bx}, {by}), tw={tw}: thread (tr, tc)=({tr}, {tc}) copies "
                 f"m[r, idx+tc] into ms[tr][tc] and n[idx+tr, c] into ns[tr][tc],\n"
                 f"then adds ms[tr][i] * ns[i][tc] for i < tw (the shaded row and column) to out[r, c]", fontsize=10)
    fig.tight_layout()
    return fig


def warp_tile_shape(WM, WN, WMITER, TM, TN):
    """The derived sizes of notebook 10's `warptiled` kernel: (WNITER, SUB_M, SUB_N, LANES_N), checked as its
    static_asserts check them (a warp's 32 lanes cover a SUB_M x SUB_N sub-tile with TM x TN tiles)."""
    WNITER = WM * WN // (32 * TM * TN * WMITER)
    if WNITER < 1 or WNITER * 32 * TM * TN * WMITER != WM * WN or WM % WMITER or WN % WNITER:
        raise ValueError(f"a {WM} x {WN} warp tile does not split into 32 lanes x {WMITER} rows of sub-tiles "
                         f"of {TM} x {TN} outputs")
    SUB_M, SUB_N = WM // WMITER, WN // WNITER
    LANES_N = SUB_N // TN
    if SUB_M % TM or SUB_N % TN or LANES_N * (SUB_M // TM) != 32:
        raise ValueError(f"a warp's 32 lanes must cover a {SUB_M} x {SUB_N} sub-tile with {TM} x {TN} tiles")
    return WNITER, SUB_M, SUB_N, LANES_N


def warp_tile_owner(BM, BN, WM, WN, WMITER, TM, TN):
    """Which warp and which lane compute each output of a BM x BN block tile in notebook 10's `warptiled`
    kernel: two int arrays of shape (BM, BN), computed with the kernel's own formulas (wm0, wn0 and the
    rows wm0 + i*SUB_M + r, columns wn0 + j*SUB_N + q of its final store). An output no lane computes
    stays -1."""
    import numpy as np
    WNITER, SUB_M, SUB_N, LANES_N = warp_tile_shape(WM, WN, WMITER, TM, TN)
    if BM % WM or BN % WN:
        raise ValueError(f"{WM} x {WN} warp tiles do not cover a {BM} x {BN} block tile")
    warp_of, lane_of = np.full((BM, BN), -1), np.full((BM, BN), -1)
    for warp in range(BM // WM * (BN // WN)):
        for lane in range(32):
            wm0 = warp // (BN // WN) * WM + lane // LANES_N * TM
            wn0 = warp % (BN // WN) * WN + lane % LANES_N * TN
            for i in range(WMITER):
                for j in range(WNITER):
                    rows = slice(wm0 + i * SUB_M, wm0 + i * SUB_M + TM)
                    cols = slice(wn0 + j * SUB_N, wn0 + j * SUB_N + TN)
                    warp_of[rows, cols], lane_of[rows, cols] = warp, lane
    return warp_of, lane_of


def draw_warp_tiles(BM=128, BN=128, WM=64, WN=32, WMITER=2, TM=4, TN=4, lane=0, warp=0):
    """Notebook 10's warp tiling, from the block tile down to one thread's registers.

    Left: the BM x BN block tile, each warp's WM x WN piece in its own colour, a thin grid of TM x TN lane
    tiles, the chosen warp's WMITER x WNITER sub-tiles outlined (dashed), and the chosen lane's TM x TN
    squares filled dark and labelled (i, j): the outputs it keeps in registers. Right: the chosen warp,
    enlarged, with the lane that computes each TM x TN tile written in it. Rectangles and labels carry a
    gid ('warp', 'subtile', 'lane-square', 'lane-label') so that what is marked can be read back."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    warp_of, lane_of = warp_tile_owner(BM, BN, WM, WN, WMITER, TM, TN)
    WNITER, SUB_M, SUB_N, LANES_N = warp_tile_shape(WM, WN, WMITER, TM, TN)
    warps_n, warps = BN // WN, BM // WM * (BN // WN)
    if not (0 <= warp < warps and 0 <= lane < 32):
        raise ValueError(f"warp must be in [0, {warps}) and lane in [0, 32)")
    colours = plt.get_cmap('tab20' if warps > 10 else 'tab10').colors
    fig, (block_ax, warp_ax) = plt.subplots(1, 2, figsize=(10.5, 6.2), width_ratios=[BN, min(WN * BM / WM, 1.2 * BN)])

    def grid(ax, rows, cols, row0=0, col0=0):
        for r in range(0, rows + 1, TM):
            ax.plot([col0, col0 + cols], [row0 + r, row0 + r], color='0.55', lw=0.3, zorder=1)
        for c in range(0, cols + 1, TN):
            ax.plot([col0 + c, col0 + c], [row0, row0 + rows], color='0.55', lw=0.3, zorder=1)

    def subtile_outlines(ax, row0, col0, lw):
        for i in range(WMITER):
            for j in range(WNITER):
                ax.add_patch(Rectangle((col0 + j * SUB_N, row0 + i * SUB_M), SUB_N, SUB_M, fill=False, ls='--',
                                       lw=lw, ec='k', zorder=3, gid='subtile'))

    # the block tile: warps in colour, lane-tile grid, warp borders
    for w in range(warps):
        row0, col0 = w // warps_n * WM, w % warps_n * WN
        block_ax.add_patch(Rectangle((col0, row0), WN, WM, color=colours[w % len(colours)], alpha=0.45, lw=0,
                                     zorder=0, gid='warp'))
        block_ax.add_patch(Rectangle((col0, row0), WN, WM, fill=False, ec='k', lw=1.4, zorder=2))
    grid(block_ax, BM, BN)
    warp_row0, warp_col0 = warp // warps_n * WM, warp % warps_n * WN
    subtile_outlines(block_ax, warp_row0, warp_col0, lw=1.6)
    # the chosen lane's registers: one TM x TN square per sub-tile
    mine = (warp_of == warp) & (lane_of == lane)
    rows, cols = mine.nonzero()
    for i in range(WMITER):
        for j in range(WNITER):
            in_sub = ((rows - warp_row0) // SUB_M == i) & ((cols - warp_col0) // SUB_N == j)
            row, col = rows[in_sub].min(), cols[in_sub].min()
            block_ax.add_patch(Rectangle((col, row), TN, TM, color='0.1', zorder=4, gid='lane-square'))
            block_ax.annotate(f'({i},{j})', (col + TN, row + TM / 2), (col + TN + 1, row + TM / 2), fontsize=7,
                              va='center', zorder=5, bbox=dict(boxstyle='round,pad=0.15', fc='w', ec='none', alpha=0.8))
    # warp numbers, placed where they hide none of the chosen lane's squares
    for w in range(warps):
        row0, col0 = w // warps_n * WM, w % warps_n * WN
        for row in (row0 + WM * 3 // 4, row0 + WM // 4, row0 + WM // 2):
            r_lo, r_hi = max(row - TM, row0), min(row + TM, row0 + WM)
            if not mine[r_lo:r_hi, col0:col0 + WN].any():
                break
        block_ax.text(col0 + WN / 2, row, f'warp {w}', ha='center', va='center', fontsize=8, zorder=5,
                      bbox=dict(boxstyle='round,pad=0.2', fc='w', ec='none', alpha=0.75))
    block_ax.add_patch(Rectangle((warp_col0, warp_row0), WN, WM, fill=False, ec='crimson', lw=2.5, zorder=6))
    block_ax.set_title(f'block tile {BM} x {BN}: {warps} warps of {WM} x {WN}', fontsize=10)
    block_ax.set_xticks(range(0, BN + 1, WN)); block_ax.set_yticks(range(0, BM + 1, WM))
    block_ax.set_xlabel('column in the block tile'); block_ax.set_ylabel('row in the block tile')

    # the chosen warp, enlarged: the lane of every TM x TN tile
    warp_ax.add_patch(Rectangle((0, 0), WN, WM, color=colours[warp % len(colours)], alpha=0.45, lw=0, zorder=0))
    grid(warp_ax, WM, WN)
    subtile_outlines(warp_ax, 0, 0, lw=1.8)
    for row in range(0, WM, TM):
        for col in range(0, WN, TN):
            owner = lane_of[warp_row0 + row, warp_col0 + col]
            if owner == lane:
                warp_ax.add_patch(Rectangle((col, row), TN, TM, color='0.1', zorder=2))
            warp_ax.text(col + TN / 2, row + TM / 2, str(owner), ha='center', va='center', zorder=3,
                         color='w' if owner == lane else 'k', gid='lane-label')
    warp_ax.set_title(f'warp {warp}: {WMITER} x {WNITER} sub-tiles of {SUB_M} x {SUB_N},\n'
                      f'lane numbers in each {TM} x {TN} tile', fontsize=10)
    warp_ax.set_xticks(range(0, WN + 1, SUB_N)); warp_ax.set_yticks(range(0, WM + 1, SUB_M))
    warp_ax.set_xlabel('column in the warp tile')
    for ax, (rows, cols) in ((block_ax, (BM, BN)), (warp_ax, (WM, WN))):
        ax.set_xlim(-0.5, cols + 0.5); ax.set_ylim(rows + 0.5, -0.5); ax.set_aspect('equal')
        ax.xaxis.tick_top(); ax.xaxis.set_label_position('top')
        for spine in ax.spines.values(): spine.set_visible(False)
    fig.suptitle(f'Warp tiling, BM={BM} BN={BN} WM={WM} WN={WN} WMITER={WMITER} (so WNITER={WNITER}) TM={TM} TN={TN}:\n'
                 f'lane {lane} of warp {warp} computes the {WMITER * WNITER} dark {TM} x {TN} squares, '
                 f'{WMITER * TM * WNITER * TN} outputs in registers', fontsize=10, y=0.02, va='bottom')
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    # lane numbers as large as the smaller side of a lane tile allows, at most 7 points
    box = warp_ax.get_position()
    points_per_unit = min(box.width * fig.get_figwidth() / (WN + 1), box.height * fig.get_figheight() / (WM + 1)) * 72
    for text in warp_ax.texts:
        text.set_fontsize(min(7.0, 0.42 * points_per_unit * min(TM, TN)))
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


# colours of the double-buffering timeline's events, and the rows they are drawn on
EVENT_STYLE = {'load': dict(color='tab:orange', label='load from global memory (latency, in flight)'),
               'store': dict(color='tab:green', label='store into shared memory'),
               'math': dict(color='tab:blue', label='math on the tile in shared memory'),
               'barrier': dict(color='0.15', label='barrier (__syncthreads)', hatch='////')}


def draw_double_buffering(tiles=4, load=None, math=None, store=None, barrier=None):
    """The timelines of one block of notebook 10's `warptiled` kernel with one buffer and with two
    (course.double_buffering's model; None takes its defaults). Each buffer count gets two rows: the
    global loads in flight, and what the block's threads do (store, math, barrier). The end of each is
    marked with its total time. The bar of event i of a timeline carries the gid 'STAGES:i' so that what is
    drawn can be read back."""
    import matplotlib.pyplot as plt
    from . import double_buffering as db
    times = dict(load=db.LOAD if load is None else load, math=db.MATH if math is None else math,
                 store=db.STORE if store is None else store, barrier=db.BARRIER if barrier is None else barrier)
    runs = {stages: db.timeline(tiles, stages=stages, **times) for stages in (1, 2)}
    fig, ax = plt.subplots(figsize=(11, 4.2))
    rows, labels = {}, []
    for stages, name in ((1, 'one buffer'), (2, 'two buffers')):
        base = (2 - stages) * 2.6      # one buffer drawn on top
        rows[stages, 'load'] = base + 1
        rows[stages, 'threads'] = base
        labels += [(base + 1, f'{name}: loads in flight'), (base, f'{name}: threads')]
    seen = set()
    for stages, run in runs.items():
        for index, e in enumerate(run.events):
            style = dict(EVENT_STYLE[e.what])
            label = style.pop('label')
            y = rows[stages, 'load' if e.what == 'load' else 'threads']
            bar = ax.barh(y, e.end - e.start, left=e.start, height=0.7, edgecolor='w', linewidth=0.8,
                          label=None if e.what in seen else label, **style)
            seen.add(e.what)
            bar.patches[0].set_gid(f'{stages}:{index}')
            if e.what in ('load', 'math') and e.end - e.start > 0:
                ax.text((e.start + e.end) / 2, y, f'{e.what} {e.tile}', ha='center', va='center', fontsize=8,
                        color='w' if e.what == 'math' else 'k')
        top = rows[stages, 'load'] + 0.45
        ax.plot([run.total, run.total], [rows[stages, 'threads'] - 0.45, top], color='crimson', lw=1.5)
        ax.text(run.total, top + 0.05, f' total {run.total:.1f}', color='crimson', fontsize=9, va='bottom',
                gid=f'total:{stages}')
    ax.set_yticks([y for y, _ in labels], [text for _, text in labels])
    ax.set_ylim(-0.6, 5.0)
    ax.set_xlim(0, max(run.total for run in runs.values()) * 1.1)
    ax.set_xlabel(f"time (abstract units: a tile's math takes {times['math']:g}, a global load's latency "
                  f"{times['load']:g}, a store {times['store']:g}, a barrier {times['barrier']:g})")
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_title(f'One block, {tiles} tiles of K: with two buffers, the load of tile t+1 is in flight '
                 f'while tile t is multiplied', fontsize=10)
    for side in ('top', 'right'): ax.spines[side].set_visible(False)
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


def draw_opcode_counts(counts, opcodes=None, title=None, xlabel='instructions in the whole kernel'):
    """Instruction counts of kernel variants as a horizontal grouped bar chart: one group of bars per kind of
    instruction, labelled with its opcode where `opcodes` names one, one bar per variant in the variant's colour, and
    each bar's count written at its end.

    counts: {variant: {kind of instruction: count}}, as notebook 07 makes with `opcode_counts` for each kernel (every
    variant with the same kinds); opcodes: {kind of instruction: opcode}, such as notebook 07's `OPCODES['SASS']`.
    The bar of a variant and a kind carries the gid 'VARIANT: KIND', and the count as its width, so that what is
    drawn can be read back."""
    import matplotlib.pyplot as plt
    variants = list(counts)
    if not variants: raise ValueError("no kernel variants to draw")
    kinds = list(counts[variants[0]])
    for variant in variants:
        if list(counts[variant]) != kinds:
            raise ValueError(f"{variant!r} counts {list(counts[variant])}, but {variants[0]!r} counts {kinds}: "
                             "every variant needs the same kinds of instruction, in the same order")
    opcodes = opcodes or {}
    colours = plt.get_cmap('tab10').colors
    bar_h = 0.8 / len(variants)
    fig, ax = plt.subplots(figsize=(9.5, 1.2 + 0.32 * len(kinds) * (len(variants) + 0.6)))
    top = max((counts[v][k] for v in variants for k in kinds), default=0) or 1
    for j, variant in enumerate(variants):
        for i, kind in enumerate(kinds):
            n = counts[variant][kind]
            y = i - 0.4 + bar_h * (j + 0.5)
            bar = ax.barh(y, n, height=bar_h * 0.92, color=colours[j % len(colours)],
                          label=variant if i == 0 else None)
            bar.patches[0].set_gid(f'{variant}: {kind}')
            ax.text(n + top * 0.01, y, str(n), va='center', ha='left', fontsize=9, gid=f'count: {variant}: {kind}')
    ax.set_yticks(range(len(kinds)), [f'{kind}\n{opcodes[kind]}' if kind in opcodes else kind for kind in kinds],
                  fontsize=9)
    ax.set_ylim(len(kinds) - 0.5, -0.5)           # the first kind on top, as in the table
    ax.set_xlim(0, top * 1.12)
    ax.set_xlabel(xlabel)
    ax.legend(loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)   # beside the bars, never on one
    for side in ('top', 'right'): ax.spines[side].set_visible(False)
    ax.grid(axis='x', color='0.9', lw=0.6); ax.set_axisbelow(True)
    if title: ax.set_title(title, fontsize=10)
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


def draw_stored_tile(rows=6, cols=10, r0=2, c0=4, tile_rows=3, tile_cols=4):
    """Where a tile of a rows x cols matrix A lies in memory, two ways: A stored row-major (rows x cols in memory) and
    stored transposed (cols x rows in memory: A.T of a row-major matrix). Each panel draws memory as the stored matrix,
    row after row, every cell holding its element's offset from the first; the tile_rows x tile_cols tile of A at
    (r0, c0) is marked in both (patches with gid 'tile'), a block of stored rows either way, its rows along A's rows in
    one and along A's columns in the other (notebook 17, step 1)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    fig, axs = plt.subplots(1, 2, figsize=(12, 3.6), gridspec_kw={'width_ratios': [cols, rows + 2]})
    layouts = ((f"A stored row-major: memory holds {rows} rows of {cols} (A's rows)", False),
               (f"A stored transposed: memory holds {cols} rows of {rows} (A's columns)", True))
    for ax, (title, transposed) in zip(axs, layouts):
        stored_rows, stored_cols = (cols, rows) if transposed else (rows, cols)
        for sr in range(stored_rows):
            for sc in range(stored_cols):
                r, c = (sc, sr) if transposed else (sr, sc)          # the element of A in this memory cell
                inside = r0 <= r < r0 + tile_rows and c0 <= c < c0 + tile_cols
                ax.add_patch(Rectangle((sc, sr), 1, 1, facecolor='tab:orange' if inside else 'white', edgecolor='0.6',
                                       lw=0.5, gid='tile' if inside else None))
                ax.text(sc + 0.5, sr + 0.5, str(sr * stored_cols + sc), ha='center', va='center', fontsize=7,
                        gid=f'offset {r},{c}')
        ax.set_xlim(0, stored_cols); ax.set_ylim(stored_rows, 0); ax.set_aspect('equal'); ax.axis('off')
        ax.set_title(title, fontsize=10)
    fig.suptitle(f"A's {tile_rows} x {tile_cols} tile at ({r0}, {c0}), marked where it lies; each cell: its offset in memory",
                 fontsize=11)
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


def draw_batch_strides(entries=4, entry_floats=6, stride_a=8, stride_b=0):
    """Where each entry of a batch lies, for the drop-in's batched launch (notebook 17, step 3): memory drawn as a strip
    of floats, A's entry i from i x stride_a (a stride above the entry's size leaves gaps: every other matrix of a
    larger batch, say) and B's from i x stride_b (0: one matrix shared by every entry, a 2-D B broadcast). Each entry's
    span is a patch with gid 'A i' or 'B i', drawn on a row of its own, in the colour of the blocks with blockIdx.y = i."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    colours = plt.get_cmap('tab10').colors
    length = max((entries - 1) * max(stride_a, stride_b) + entry_floats, entry_floats)
    fig, axs = plt.subplots(2, 1, figsize=(12, 1.1 + 0.45 * 2 * entries), sharex=True)
    for ax, (name, stride) in zip(axs, (('A', stride_a), ('B', stride_b))):
        for i in range(entries):
            start = i * stride
            ax.add_patch(Rectangle((start, i), entry_floats, 0.8, facecolor=colours[i % len(colours)], alpha=0.75,
                                   edgecolor='black', lw=0.8, gid=f'{name} {i}'))
            ax.text(start + entry_floats / 2, i + 0.4, f"entry {i}: floats {start} to {start + entry_floats - 1}",
                    ha='center', va='center', fontsize=8)
        for x in range(length + 1): ax.axvline(x, color='0.9', lw=0.5, zorder=0)
        ax.set_xlim(0, length); ax.set_ylim(entries, -0.2)
        ax.set_yticks([i + 0.4 for i in range(entries)], [f'blockIdx.y = {i}' for i in range(entries)], fontsize=8)
        ax.set_title(f"{name}: entry i at i x {stride} floats" + (" (stride 0: every entry reads the same matrix)"
                                                                  if stride == 0 else ""), fontsize=10)
        for side in ('top', 'right'): ax.spines[side].set_visible(False)
    axs[-1].set_xlabel('offset in memory, in floats, from entry 0')
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


def draw_issue_slots(rows, title="A scheduler's cycles"):
    """What a warp scheduler's cycles hold, one bar per kernel: `rows` is {kernel: {share: fraction of cycles}} with
    the three shares of course.issue_model.issue_shares (an FFMA issued, another instruction issued, nothing issued),
    stacked from 0 to 100%, each segment a patch with gid '<kernel>: <share>' and its percentage written on it."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    colours = {'FFMA issued': 'tab:green', 'other instruction issued': 'tab:blue', 'nothing issued': '0.8'}
    fig, ax = plt.subplots(figsize=(12, 0.9 + 0.6 * len(rows)))
    for y, (kernel, shares) in enumerate(rows.items()):
        if abs(sum(shares.values()) - 1) > 1e-6: raise ValueError(f"{kernel}'s shares add up to {sum(shares.values())}, not 1")
        left = 0.0
        for share, fraction in shares.items():
            ax.add_patch(Rectangle((100 * left, y), 100 * fraction, 0.7, facecolor=colours.get(share, 'tab:orange'),
                                   edgecolor='black', lw=0.6, gid=f'{kernel}: {share}'))
            if fraction >= 0.03:
                ax.text(100 * (left + fraction / 2), y + 0.35, f"{100 * fraction:.0f}%", ha='center', va='center', fontsize=9)
            left += fraction
    ax.set_xlim(0, 100); ax.set_ylim(len(rows) - 0.1, -0.2)
    ax.set_yticks([y + 0.35 for y in range(len(rows))], list(rows), fontsize=9)
    ax.set_xlabel('% of cycles')
    ax.set_title(title, fontsize=10)
    ax.legend(handles=[Rectangle((0, 0), 1, 1, facecolor=c, edgecolor='black', lw=0.6) for c in colours.values()],
              labels=list(colours), fontsize=8, loc='center left', bbox_to_anchor=(1.01, 0.5), frameon=False)
    for side in ('top', 'right'): ax.spines[side].set_visible(False)
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig
