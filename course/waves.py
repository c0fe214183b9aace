"""How a matmul's tiles fill a GPU: waves, tile quantization and split-K, as a model that runs on a CPU.

A kernel that gives each block one BM x BN tile of C launches ceil(M / BM) x ceil(N / BN) blocks, and the GPU runs
`sms x blocks_per_sm` of them at a time: a *wave*. Two things then waste the machine on awkward shapes:

- **waves**: when the tiles do not fill the last wave, part of the GPU's slots stay empty while it runs; with fewer
  tiles than slots (a skinny problem: few rows, a long K), some slots stay empty for the whole run (how much that
  costs depends on how fast a block runs with a multiprocessor to itself: the model below counts slots, not that);
- **tile quantization**: an edge tile still costs a whole tile's work, on values outside the matrix.

**Moved edge tiles** do not change that count: `tile_origins` gives each tile's first row and column as the
every-shape kernel computes them, the last row and column of tiles moved back inside C so that no tile crosses its
edge (they overlap their neighbours instead), and `draw_tile_origins` draws them.

**Split-K** cuts K into `splits` pieces, so that each tile becomes `splits` independent units (more of them to fill
the slots), at the price of adding the partial sums afterwards: each unit writes its BM x BN partial result in
fp32, and a second pass reads the `splits` partial results and writes C. `plan` counts all this for one shape and
one kernel; `modeled_ms` turns it into time with two rates (the arithmetic a slot does per second, the bytes
device memory moves per second); `best_splits` picks the split that the model says is fastest.
"""
import math
from typing import NamedTuple

H100_SMS = 132
H100_FP32_TFLOPS = 67.0          # datasheet: H100 SXM, fp32 on the CUDA cores
H100_HBM_TBPS = 3.35             # datasheet: HBM3 bandwidth


class Plan(NamedTuple):
    tiles: int          # BM x BN tiles of C
    splits: int         # pieces of K per tile
    units: int          # blocks' work: tiles x splits
    slots: int          # blocks the GPU runs at once: sms x blocks_per_sm
    waves: int          # ceil(units / slots)
    busy: float         # share of slot time that runs a unit: units / (waves x slots)
    useful: float       # share of the multiply-adds done inside the matrix (the rest: padding of edge tiles)
    k_per_unit: int     # K done by one unit, rounded up to whole BK steps


def plan(m, k, n, bm, bn, splits=1, sms=H100_SMS, blocks_per_sm=1, bk=8):
    """The Plan of an m x k @ k x n product (the course's (h, k, w) order) in bm x bn tiles, K cut into `splits`
    pieces, on `sms` x `blocks_per_sm` slots."""
    for name, v in (('m', m), ('k', k), ('n', n), ('bm', bm), ('bn', bn), ('splits', splits), ('sms', sms),
                    ('blocks_per_sm', blocks_per_sm), ('bk', bk)):
        if not isinstance(v, int) or v < 1: raise ValueError(f"{name} must be a positive int, got {v!r}")
    if splits > math.ceil(k / bk): raise ValueError(f"{splits} splits of K = {k} leave some piece without a step of {bk}")
    tiles = math.ceil(m / bm) * math.ceil(n / bn)
    units, slots = tiles * splits, sms * blocks_per_sm
    waves = math.ceil(units / slots)
    k_per_unit = math.ceil(math.ceil(k / splits) / bk) * bk
    useful = (m * n * k) / (tiles * bm * bn * k_per_unit * splits)
    return Plan(tiles, splits, units, slots, waves, units / (waves * slots), useful, k_per_unit)


def partial_sums_bytes(splits, m, n):
    "The extra traffic of split-K on an m x n output: each of the `splits` fp32 partial results written and read, C written."
    return 0 if splits == 1 else (2 * splits + 1) * m * n * 4


def modeled_ms(p, m, n, bm, bn, tflops=H100_FP32_TFLOPS, tbps=H100_HBM_TBPS):
    """The model's time of a Plan, in ms: its waves, each as long as one unit's multiply-adds at one slot's share of
    the peak rate, plus, with splits > 1, the bytes of the partial sums (each unit writes its fp32 partial tile, the
    second pass reads them all and writes C) at the memory rate. A model: it leaves out latency, caches and the inputs' own traffic,
    and it gives every unit a slot's share of a multiprocessor (1 / blocks_per_sm of it) even where a block has the
    multiprocessor to itself, so that it overstates what empty slots cost."""
    per_slot = tflops * 1e12 / p.slots
    unit_s = 2 * bm * bn * p.k_per_unit / per_slot
    reduce_s = partial_sums_bytes(p.splits, m, n) / (tbps * 1e12)
    return 1e3 * (p.waves * unit_s + reduce_s)


def best_splits(m, k, n, bm, bn, sms=H100_SMS, blocks_per_sm=1, bk=8, most=16, **rates):
    "The split of K (1 to `most`) with the smallest modeled time for m x k @ k x n, and that time in ms."
    options = [s for s in range(1, most + 1) if s <= math.ceil(k / bk)]
    times = {s: modeled_ms(plan(m, k, n, bm, bn, s, sms, blocks_per_sm, bk), m, n, bm, bn, **rates) for s in options}
    best = min(times, key=times.get)
    return best, times[best]


def draw_waves(p, title=None):
    """A Plan as a picture: one row per wave, one cell per slot, a unit's cell coloured by the split it belongs to
    (split 0 alone without split-K), idle slots white. The image's values: -1 idle, else the unit's split index."""
    import matplotlib.pyplot as plt
    import numpy as np
    grid = np.full((p.waves, p.slots), -1)
    for u in range(p.units):
        grid[u // p.slots, u % p.slots] = u % p.splits
    fig, ax = plt.subplots(figsize=(11, 0.45 * p.waves + 1.6))
    colors = plt.get_cmap('tab10')
    cmap = plt.matplotlib.colors.ListedColormap(['white'] + [colors(i % 10) for i in range(max(p.splits, 1))])
    ax.imshow(grid, cmap=cmap, vmin=-1.5, vmax=p.splits - 0.5, aspect='auto', interpolation='nearest')
    ax.set_xlabel(f"slot (multiprocessor x block): {p.slots} run at once")
    ax.set_ylabel("wave")
    ax.set_yticks(range(p.waves))
    ax.set_title(title or f"{p.tiles} tiles x {p.splits} split(s) = {p.units} units in {p.waves} wave(s): "
                          f"{p.busy:.0%} of slot time busy")
    fig.tight_layout()
    return fig


def tile_origins(m, n, bm, bn, moved=True):
    """The (first row, first column) of each bm x bn tile of an m x n C, row of tiles by row of tiles. With `moved`,
    as the every-shape kernel places them: a tile that would cross the bottom or right edge moves back to end on it
    (where C has at least bm rows, or bn columns), overlapping its neighbour; the tiles still cover C, and as many."""
    for name, v in (('m', m), ('n', n), ('bm', bm), ('bn', bn)):
        if not isinstance(v, int) or v < 1: raise ValueError(f"{name} must be a positive int, got {v!r}")
    def starts(size, tile):                  # along one side: every tile's start, the last one moved back
        return [min(s, size - tile) if moved and size >= tile else s for s in range(0, size, tile)]
    return [(r, c) for r in starts(m, bm) for c in starts(n, bn)]


def draw_tile_origins(m, n, bm, bn):
    """C's outline and its tiles, before (left: edge tiles hang over C's edge) and after they move inside (right: they
    overlap their neighbours, the overlap shaded darker). Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6))
    edge = plt.get_cmap('tab10')(1)
    for ax, moved in zip(axes, (False, True)):
        for r, c in tile_origins(m, n, bm, bn, moved):
            inside = r + bm <= m and c + bn <= n and (r % bm, c % bn) == (0, 0)
            ax.add_patch(Rectangle((c, r), bn, bm, facecolor='tab:blue' if inside else edge, alpha=0.35,
                                   edgecolor='black', linewidth=1))
        ax.add_patch(Rectangle((0, 0), n, m, fill=False, edgecolor='crimson', linewidth=2.5))
        ax.set_xlim(-4, math.ceil(n / bn) * bn + 4); ax.set_ylim(math.ceil(m / bm) * bm + 4, -4)
        ax.set_aspect('equal'); ax.set_xlabel('column'); ax.set_ylabel('row')
        ax.set_title("edge tiles cross C's edge (bounds checks)" if not moved else
                     "edge tiles moved inside, overlapping (no checks)", fontsize=10)
    fig.suptitle(f"{bm} x {bn} tiles on a {m} x {n} C (red outline): blue tiles whole, orange at an edge, darker where two overlap")
    fig.tight_layout()
    return fig
