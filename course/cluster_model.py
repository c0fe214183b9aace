"""What the tile order and thread-block clusters buy in memory traffic: notebook 13's steps 4 and 5, on a CPU.

From step 3 on, notebook 13's kernel computes one BM x BN = 128 x 256 tile of C per block, a *stage* of BK = 64
values of K at a time, in bf16. For each stage, a block's shared memory receives A's BM x BK tile (16 KiB) and B's
BK x BN tile (32 KiB, copied by TMA as BN / 64 = 4 *boxes* of 64 columns).

**Step 4, persistent.** The launcher starts only the blocks that fit at once (on an H100 SXM one per
multiprocessor: 132), and block c computes tiles c, c + 132, c + 264, ...: the tiles are dealt out in **rounds** of
132 that run at the same time, in the order of notebook 10's `tile_origin` (`tile_origin` below is its Python twin):
groups of GROUP tile-rows, column after column inside a group; GROUP = 1 numbers them row after row. Every tile of
a round reads a BM-row panel of A and a BN-column panel of B. `round_footprint` counts the distinct panels one round
reads, and their bytes: the fewer, the more of a round's reads the L2 cache serves from what another block of the
round already brought in, and the fewer bytes come from device memory (DRAM). `dram_reads` adds that up over a
whole run, and `draw_round_footprint` colours C's tiles by round, with the panels the first round reads.

**Step 5, clusters of 2.** Two blocks on tiles one above the other (a *unit* of 2 x BM rows of C) form a cluster.
They need the same tile of B, so each copies half of its boxes (block `rank` copies boxes rank, rank + 2) with
`tma_load_multicast`, which writes them into the shared memory of both blocks; each block still copies its own A.
`operand_loads` counts the bytes a block asks L2 for and the bytes that land in its shared memory, per stage, with
and without the cluster; `draw_cluster_multicast` draws it. Multicast cuts the traffic between L2 and the
multiprocessors; the tile order cuts the traffic from DRAM into L2 (notebook 13's section 5 times the two apart).
Step 5's units are 2 tiles tall, so its GROUP = 8 units covers 16 tile-rows: the same order as step 4 with
GROUP = 16 (`cluster=2` in the functions below numbers units as the kernel does).

Where the numbers come from: HOPPER_BM, HOPPER_BN, HOPPER_GROUP and HOPPER_CLUSTER are the parameters of notebook
13's `hopper_kernel('persistent')` and `hopper_kernel('cluster')` (whose CLUSTER is 1 and 2); HOPPER_BK and HOPPER_BOX
are the `BK` and `BOX` of its HOPPER_COMMON; tests/test_cluster_model.py holds them to the notebook. The 132 blocks
of a round are the H100 SXM's 132 multiprocessors (datasheet), one block each.

A model: it counts bytes, not time. It assumes that the blocks of a round go through K together (they start
together, and every tile has the same K), so that at any moment L2 needs only the slices of K the round is working
on, and that each panel a round reads comes from DRAM once in that round and is not kept for the next.
"""
import math
from typing import NamedTuple

from .waves import H100_SMS

HOPPER_BM = 128          # notebook 13, hopper_kernel (steps 3 to 8): BM = 64 rows x CONSUMERS = 2 consumer warpgroups
HOPPER_BN = 256          # hopper_kernel: BN = 256 for steps 3 to 8
HOPPER_BK = 64           # HOPPER_COMMON's BK: K per stage, 64 bf16 = 128 bytes (one row of the 128-byte swizzle)
HOPPER_BOX = 64          # HOPPER_COMMON's BOX: columns of B per TMA box; a cluster's blocks deal B's boxes out
HOPPER_GROUP = 8         # hopper_kernel's default GROUP: tile-rows (step 5: units of 2 tiles) per group of the order
HOPPER_CLUSTER = 2       # hopper_kernel('cluster'): CLUSTER = 2 blocks per cluster (step 4: 1)
BF16_BYTES = 2           # the kernels' inputs are bf16
H100_BLOCKS = H100_SMS   # blocks of steps 4 and 5 resident at once on an H100 SXM: one per multiprocessor
                         # (__launch_bounds__(384, 1), about 193 KiB of shared memory); in step 5, 66 clusters of 2
H100_L2_BYTES = 50 * 2 ** 20   # H100 SXM datasheet: 50 MB of L2 (taken as MiB here)
KIB, MIB = 2 ** 10, 2 ** 20


def _check_positive(**values):
    "Raise a ValueError naming the first value that is not a positive int."
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def _check_whole_clusters(blocks, cluster):
    "Raise a ValueError unless `blocks` resident blocks make whole clusters of `cluster`."
    if blocks % cluster:
        raise ValueError(f"a round holds whole clusters: {blocks} blocks are not a multiple of {cluster}")


# ---- 1. multicast: what one block asks L2 for, and what lands in its shared memory ----

class OperandLoads(NamedTuple):
    cluster: int          # blocks per cluster (1: no cluster)
    shared: object        # the operand the cluster's blocks share and multicast, 'A' or 'B' (None without a cluster)
    a_issued: int         # bytes of A one block's TMA loads ask L2 for, per stage of K
    b_issued: int         # bytes of B one block's TMA loads ask L2 for, per stage of K
    issued: int           # a_issued + b_issued
    delivered: int        # bytes landing in one block's shared memory per stage: its whole A and B tiles, always
    ratio: float          # issued / delivered: the share of its shared-memory bytes a block asks L2 for itself
    blocks: int           # blocks in one round of the persistent grid
    round_issued: int     # blocks x issued: what the whole round asks L2 for per stage (L2 -> multiprocessors)
    round_delivered: int  # blocks x delivered: what lands in all the round's shared memories per stage


def operand_loads(bm=HOPPER_BM, bn=HOPPER_BN, bk=HOPPER_BK, cluster=1, shared='B', blocks=H100_BLOCKS,
                  element_bytes=BF16_BYTES):
    """The bytes one block asks L2 for (`issued`) and receives in shared memory (`delivered`) per stage of K, and the
    same for a round of `blocks` blocks, as an OperandLoads.

    Without a cluster (cluster = 1) each block copies its own bm x bk tile of A and bk x bn tile of B. With a cluster
    of `cluster` blocks that share one operand (`shared`: 'B' in notebook 13, whose clusters are tiles one above the
    other), each block copies 1 / cluster of that tile with a multicast copy, which lands in every block of the
    cluster: a block still receives the whole tile, but asks L2 for only its share. The other operand is unchanged."""
    _check_positive(bm=bm, bn=bn, bk=bk, cluster=cluster, blocks=blocks, element_bytes=element_bytes)
    if shared not in ('A', 'B'):
        raise ValueError(f"shared must be 'A' or 'B' (the operand a cluster multicasts), got {shared!r}")
    _check_whole_clusters(blocks, cluster)
    split = bn if shared == 'B' else bm          # B's tile splits along its columns, A's along its rows
    if split % cluster:
        raise ValueError(f"{shared}'s tile ({split} {'columns' if shared == 'B' else 'rows'}) does not split evenly "
                         f"between {cluster} blocks")
    a_tile, b_tile = bm * bk * element_bytes, bk * bn * element_bytes
    a_issued = a_tile // cluster if shared == 'A' else a_tile
    b_issued = b_tile // cluster if shared == 'B' else b_tile
    issued, delivered = a_issued + b_issued, a_tile + b_tile
    return OperandLoads(cluster, shared if cluster > 1 else None, a_issued, b_issued, issued, delivered,
                        issued / delivered, blocks, blocks * issued, blocks * delivered)


# ---- 2. the tile order: which tiles a round computes, and which panels of A and B it reads ----

def tile_origin(unit, m, n, bm, bn, group):
    """The (first row, first column) in C of unit `unit` of bm x bn units: notebook 10's `tile_origin` in Python.
    Units are numbered in groups of `group` rows of units, down each column inside a group; the last group may have
    fewer rows. group = 1 numbers them row after row."""
    _check_positive(m=m, n=n, bm=bm, bn=bn, group=group)
    tiles_m, tiles_n = math.ceil(m / bm), math.ceil(n / bn)
    if isinstance(unit, bool) or not isinstance(unit, int) or not 0 <= unit < tiles_m * tiles_n:
        raise ValueError(f"unit must be an int in [0, {tiles_m * tiles_n}), got {unit!r}")
    per_group = group * tiles_n
    first, i = unit // per_group * group, unit % per_group
    rows = min(tiles_m - first, group)
    return (first + i % rows) * bm, i // rows * bn


def tile_rounds(m, n, bm, bn, blocks, group, cluster=1):
    """The round in which each bm x bn tile of an m x n C is computed: an int array of ceil(m / bm) x ceil(n / bn).

    As notebook 13's persistent kernel deals them out: a unit is `cluster` tiles one above the other, numbered by
    tile_origin with bm x cluster rows; the grid's blocks // cluster clusters take units c, c + clusters, ..., so
    round r is units r x clusters to (r + 1) x clusters - 1."""
    import numpy as np
    _check_positive(m=m, n=n, bm=bm, bn=bn, blocks=blocks, group=group, cluster=cluster)
    _check_whole_clusters(blocks, cluster)
    clusters, tiles_m, tiles_n = blocks // cluster, math.ceil(m / bm), math.ceil(n / bn)
    rounds = np.full((tiles_m, tiles_n), -1)
    for unit in range(math.ceil(tiles_m / cluster) * tiles_n):
        row0, col0 = tile_origin(unit, m, n, bm * cluster, bn, group)
        for r in range(cluster):
            if row0 + r * bm < m:                    # a cluster's lower block past C's edge computes nothing
                rounds[row0 // bm + r, col0 // bn] = unit // clusters
    return rounds


class Footprint(NamedTuple):
    group: int            # tile-rows (units, with a cluster) per group of the order; 1: row after row
    tiles: tuple          # (tile row, tile column) of every bm x bn tile of C the round computes
    a_tiles: int          # distinct tile-rows among them: the bm-row panels of A the round reads
    b_tiles: int          # distinct tile-columns: the bn-column panels of B it reads
    a_bytes: int          # those panels of A over all of K (rows inside A only)
    b_bytes: int          # those panels of B over all of K
    bytes: int            # a_bytes + b_bytes: what the round reads from DRAM at least once
    step_bytes: int       # of it, one stage of K (bk): the round's L2 working set at a moment


class RoundFootprint(NamedTuple):
    grouped: Footprint    # in the order of `group`
    row_major: Footprint  # in the order of group = 1 (row after row)


def _footprint(rounds, which, group, m, n, bm, bn, k, bk, element_bytes):
    "The Footprint of round `which` in `rounds` (tile_rounds' array)."
    mine = rounds == which
    rows, cols = mine.any(axis=1).nonzero()[0], mine.any(axis=0).nonzero()[0]
    a_rows = sum(min(bm, m - r * bm) for r in rows)       # an edge panel has fewer rows (TMA fills the rest: no reads)
    b_cols = sum(min(bn, n - c * bn) for c in cols)
    a_bytes, b_bytes = a_rows * k * element_bytes, b_cols * k * element_bytes
    step = min(bk, k) * element_bytes * (a_rows + b_cols)
    tiles = tuple((int(r), int(c)) for r, c in zip(*mine.nonzero()))
    return Footprint(group, tiles, len(rows), len(cols), a_bytes, b_bytes, a_bytes + b_bytes, step)


def round_footprint(m, n, bm, bn, blocks, group, *, k, cluster=1, which=0, bk=HOPPER_BK, element_bytes=BF16_BYTES):
    """The tiles of C that round `which` (0: the first) of `blocks` resident blocks computes, and the panels of A and
    B it reads, in the order of `group` and row after row: a RoundFootprint of two Footprints.

    Row after row, a round's tiles lie along a few rows of tiles: it reads a few panels of A but every panel of B.
    Grouped, the same number of tiles lies in a squarer patch and reads fewer bytes of panels, as long as a group
    holds at least a round's tiles (with fewer, the round runs into the next group and reads every panel of B
    again). The bytes are for a K of `k`, in elements of `element_bytes`; with bm != bn a panel of A and one of B
    weigh differently, so compare the bytes, not the counts."""
    _check_positive(k=k, bk=bk, element_bytes=element_bytes)
    out = []
    for g in (group, 1):
        rounds = tile_rounds(m, n, bm, bn, blocks, g, cluster)
        if isinstance(which, bool) or not isinstance(which, int) or not 0 <= which <= rounds.max():
            raise ValueError(f"which must be a round in [0, {rounds.max()}], got {which!r}")
        out.append(_footprint(rounds, which, g, m, n, bm, bn, k, bk, element_bytes))
    return RoundFootprint(*out)


def dram_reads(m, n, bm, bn, blocks, group, *, k, cluster=1, element_bytes=BF16_BYTES):
    """The bytes of A and B a whole run reads from DRAM in the model: every round's footprint (Footprint.bytes), each
    panel once per round that reads it and kept for no later round. Compare it with (m + n) x k x element_bytes, each
    input read once. An estimate: where a round's panels fit in L2 (50 MB on an H100) some may stay for the next
    round, and the real reads are lower; notebook 13's ncu counters measure them."""
    _check_positive(k=k, element_bytes=element_bytes)
    rounds = tile_rounds(m, n, bm, bn, blocks, group, cluster)
    return sum(_footprint(rounds, r, group, m, n, bm, bn, k, k, element_bytes).bytes
               for r in range(rounds.max() + 1))


# ---- 3. the pictures ----

def _size(nbytes):
    "Bytes as a short label, in the largest of MiB, KiB and bytes that is not more than them (3 digits, or whole)."
    for unit, name in ((MIB, 'MiB'), (KIB, 'KiB')):
        if nbytes >= unit: return f"{nbytes / unit:,.0f} {name}" if nbytes >= 100 * unit else f"{nbytes / unit:.3g} {name}"
    return f"{nbytes} B"


ISSUER_COLORS = ('tab:blue', 'tab:orange')                           # block `rank` of the cluster: its boxes of B
A_COLOR = '0.6'                                                        # A's tiles: each block's own copy
B_BAR_COLOR = 'tab:purple'                                             # B's bytes in the bar chart (whoever copies them)


def draw_cluster_multicast(bm=HOPPER_BM, bn=HOPPER_BN, bk=HOPPER_BK, box=HOPPER_BOX, element_bytes=BF16_BYTES):
    """One stage of notebook 13's cluster of 2 blocks (HOPPER_CLUSTER), which share B's tile. Left: above, the tiles
    in global memory (each block's own A tile, grey; B's bk x bn tile as boxes of `box` columns, box j coloured by
    the block that copies it, j % 2); below, each block's shared memory for the stage, and an arrow from each box to
    both blocks. Right: the bytes one block asks L2 for per stage without and with the cluster (operand_loads),
    against the bytes it receives. Returns the figure (two axes). (operand_loads counts any cluster size; the
    picture stays legible for the kernel's 2.)"""
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, Patch, Rectangle
    _check_positive(bm=bm, bn=bn, bk=bk, box=box, element_bytes=element_bytes)
    cluster = HOPPER_CLUSTER
    if bn % box or bn // box % cluster:
        raise ValueError(f"B's {bn} columns must be whole boxes of {box}, as many for each of the {cluster} blocks "
                         "(the kernel's static_assert: BN / BOX % CLUSTER == 0)")
    boxes, gap = bn // box, box / 4
    width = bk + gap + boxes * (box + gap)                 # one block's shared memory: A's tile, then B's boxes
    span = cluster * (width + 2 * gap)
    top_width = cluster * (bk + gap) + gap + boxes * (box + gap)
    left0, low = (span - top_width) / 2, bm + 2.5 * bk        # where global memory starts; where shared memory does
    fig, (ax, bars) = plt.subplots(1, 2, figsize=(12, 5.2), width_ratios=[3, 1])

    def tile(x, y, w, h, color, text, **kw):
        ax.add_patch(Rectangle((x, y), w, h, facecolor=color, edgecolor='black', lw=0.8, **kw))
        ax.text(x + w / 2, y + h / 2, text, ha='center', va='center', fontsize=8)

    def arrow(x0, y0, x1, y1, color):
        ax.add_patch(FancyArrowPatch((x0, y0), (x1, y1), arrowstyle='-|>', mutation_scale=10, color=color, lw=1.2,
                                     alpha=0.85, shrinkA=1, shrinkB=1))

    b_left = left0 + cluster * (bk + gap) + gap
    for r in range(cluster):                               # global memory: each block's A, then B's boxes
        tile(left0 + r * (bk + gap), 0, bk, bm, A_COLOR, f"A\nrows of\nblock {r}")
    for j in range(boxes):
        tile(b_left + j * (box + gap), 0, box, bk, ISSUER_COLORS[j % cluster], f"B box {j}")
    ax.text(b_left, -gap, f"B's {bk} x {bn} tile, shared by the cluster", fontsize=9, va='bottom')
    for r in range(cluster):                               # shared memory, and the copies into it
        x = r * (width + 2 * gap) + gap
        ax.add_patch(Rectangle((x - gap / 2, low - gap / 2), width, bm + gap, fill=False, edgecolor='black', lw=1.5))
        ax.text(x + width / 2 - gap / 2, low + bm + gap, f"block {r} (rank {r}): shared memory, one stage",
                ha='center', va='top', fontsize=9)
        tile(x, low, bk, bm, A_COLOR, "A")
        arrow(left0 + r * (bk + gap) + bk / 2, bm, x + bk / 2, low, A_COLOR)
        for j in range(boxes):
            bx = x + bk + gap + j * (box + gap)
            tile(bx, low, box, bk, ISSUER_COLORS[j % cluster], f"box {j}", alpha=1 if j % cluster == r else 0.55)
            arrow(b_left + j * (box + gap) + box / 2, bk, bx + box / 2, low, ISSUER_COLORS[j % cluster])
    ax.set_xlim(-gap, span + gap); ax.set_ylim(low + bm + 3 * gap, -4 * gap)
    ax.set_aspect('equal'); ax.axis('off')
    ax.text(0, -3 * gap, "above: global memory (through L2); below: each block's shared memory (paler: the boxes "
            "the other block copied)", fontsize=9)
    handles = [Patch(facecolor=A_COLOR, edgecolor='black', label="A: each block copies its own tile (tma_load)")]
    handles += [Patch(facecolor=ISSUER_COLORS[r], edgecolor='black', label=f"B: copied by block {r}, "
                      f"lands in all {cluster} (tma_load_multicast)") for r in range(cluster)]
    ax.legend(handles=handles, loc='upper center', bbox_to_anchor=(0.5, 0.0), ncol=2, fontsize=8, frameon=False)
    ax.set_title(f"A cluster of {cluster}: tiles one above the other share B's tile; each block copies "
                 f"{boxes // cluster} of its {boxes} boxes into every block", fontsize=10)
    # the bytes, from the model
    alone = operand_loads(bm, bn, bk, 1, 'B', cluster, element_bytes)
    shared = operand_loads(bm, bn, bk, cluster, 'B', cluster, element_bytes)
    names = ['cluster of 1', f'cluster of {cluster}\n(multicast B)']
    for i, loads in enumerate((alone, shared)):
        bars.bar(i, loads.a_issued / KIB, color=A_COLOR, edgecolor='black', label='A' if i == 0 else None)
        bars.bar(i, loads.b_issued / KIB, bottom=loads.a_issued / KIB, color=B_BAR_COLOR, edgecolor='black',
                 label='B' if i == 0 else None)
        bars.text(i, loads.issued / KIB, f"{loads.issued / KIB:g} KiB", ha='center', va='bottom', fontsize=9)
    bars.axhline(alone.delivered / KIB, color='crimson', ls='--', lw=1.2,
                 label=f"received: {alone.delivered / KIB:g} KiB either way")
    bars.set_xticks([0, 1], names, fontsize=9)
    bars.set_ylim(0, alone.delivered / KIB * 1.3)
    bars.set_ylabel("KiB one block asks L2 for, per stage of K")
    bars.set_title(f"bytes issued per block\n({bm} x {bn} tiles, {bk} of K per stage)", fontsize=10)
    bars.legend(loc='upper right', fontsize=8, frameon=False)
    for side in ('top', 'right'): bars.spines[side].set_visible(False)
    fig.tight_layout()
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig


def draw_round_footprint(m, n, bm, bn, blocks, groups, *, k=None, cluster=1, element_bytes=BF16_BYTES):
    """C's bm x bn tiles coloured by the round that computes them (tile_rounds), one panel per order in `groups`
    (an int g draws g and row after row, g and 1, side by side): the first round in red, the later ones in blues,
    darker later. Beside each panel, green marks the tile-rows of A the first round reads and purple, above it, the
    tile-columns of B, with their counts (and, with `k`, their bytes) in the panel's title. Each panel's image holds
    tile_rounds' array. Returns the figure: one axes per order, and the colour bar's."""
    import matplotlib.pyplot as plt
    from matplotlib.colors import BoundaryNorm, ListedColormap
    from matplotlib.patches import Patch, Rectangle
    if isinstance(groups, int) and not isinstance(groups, bool): groups = (groups, 1) if groups > 1 else (1,)
    groups = tuple(groups)
    if not groups: raise ValueError("groups must name at least one order")
    footprints = [round_footprint(m, n, bm, bn, blocks, g, k=k or 1, cluster=cluster,
                                  element_bytes=element_bytes).grouped
                  for g in groups]                         # (checks every argument; the bytes are drawn only with k)
    rounds = [tile_rounds(m, n, bm, bn, blocks, g, cluster) for g in groups]
    count = int(rounds[0].max()) + 1
    later = plt.get_cmap('Blues')                          # round 0 red, then blues from light to dark
    cmap = ListedColormap(['crimson'] + [later(0.25 + 0.7 * r / max(count - 1, 1)) for r in range(1, count)])
    norm = BoundaryNorm([r - 0.5 for r in range(count + 1)], count)
    tiles_m, tiles_n = rounds[0].shape
    extent = (0, tiles_n * bn, tiles_m * bm, 0)
    strip = 0.035 * max(extent[1], extent[2])               # the width of the marks beside C
    fig, axes = plt.subplots(1, len(groups), figsize=(4.2 * len(groups) + 1.2, 5.6), squeeze=False,
                             layout='constrained')
    for ax, g, r, fp in zip(axes[0], groups, rounds, footprints):
        image = ax.imshow(r, cmap=cmap, norm=norm, extent=extent, interpolation='nearest')
        ax.vlines([c * bn for c in range(1, tiles_n)], 0, extent[2], color='white', lw=0.3)    # the tiles' edges
        ax.hlines([t * bm for t in range(1, tiles_m)], 0, extent[1], color='white', lw=0.3)
        for row in sorted({t[0] for t in fp.tiles}):
            ax.add_patch(Rectangle((-1.5 * strip, row * bm), strip, bm, color='tab:green', clip_on=False))
        for col in sorted({t[1] for t in fp.tiles}):
            ax.add_patch(Rectangle((col * bn, -1.5 * strip), bn, strip, color='tab:purple', clip_on=False))
        ax.set_xlim(-1.7 * strip, extent[1]); ax.set_ylim(extent[2], -1.7 * strip)
        ax.set_xlabel("column of C"); ax.set_ylabel("row of C")
        order = "row after row" if g == 1 else f"GROUP = {g} {'units' if cluster > 1 else 'tile-rows'}"
        size = f"\n= {_size(fp.a_bytes)} + {_size(fp.b_bytes)} over K = {k}" if k else ""
        ax.set_title(f"{order}: round 0 reads\n{fp.a_tiles} tile-rows of A, {fp.b_tiles} tile-columns of B{size}",
                     fontsize=9)
    bar = fig.colorbar(image, ax=list(axes[0]), shrink=0.8, label="round")
    bar.set_ticks(range(0, count, math.ceil(count / 8)))
    handles = [Patch(color='crimson', label=f"round 0: the first {blocks} blocks' tiles"),
               Patch(color='tab:green', label="A's tile-rows round 0 reads"),
               Patch(color='tab:purple', label="B's tile-columns round 0 reads")]
    fig.legend(handles=handles, loc='outside lower center', ncol=3, fontsize=8, frameon=False)
    unit = f"units of {cluster} tiles one above the other, " if cluster > 1 else ""
    fig.suptitle(f"{m} x {n} C in {bm} x {bn} tiles, {unit}{blocks} blocks a round ({count} rounds); "
                 f"L2: {H100_L2_BYTES / MIB:.0f} MiB on an H100", fontsize=10)
    plt.close(fig)          # shown once, as the cell's result, not again by the inline backend
    return fig
