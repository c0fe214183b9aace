"""Stream-K for the last round of a persistent kernel: which cluster multiplies which stretch of K of which unit.

A persistent kernel runs `clusters` clusters at once, each looping over units (a unit: the tiles of C one cluster
computes together). With `units = rounds x clusters + left`, the first `rounds` rounds keep every cluster busy, but
in the last one only `left` clusters have a unit and the others wait for them. **Stream-K** cuts that last round
along K instead: its `left x k_tiles` stages of K (one stage: BK of K for one unit) are laid end to end and dealt out
in equal stretches, one per cluster, so that every cluster ends at about the same time. A stretch can start or end
inside a unit, which is then shared by several clusters:

- the cluster whose stretch holds the unit's first stage (`k_begin == 0`) is the unit's **finisher**: when its
  own stages are done, it waits for the others' partial sums, adds them to its accumulators, and stores C;
- a cluster whose stretch *starts* inside a unit is a **contributor**: it writes its partial sums (fp32) to a
  workspace in global memory, and raises a flag that the finisher waits for. Only a stretch's first piece can start
  inside a unit, so a cluster contributes at most once per launch: one workspace slot per block is enough.

A contributor's piece is the first of its stretch and a finisher's the last of its own, so by the time a finisher
waits, its contributors have long written their sums, and no cluster ever waits for one that waits in turn.

Handing partial sums over costs time: a contributor writes 128 KB per block, a finisher reads them back and adds
them, and every block of the GPU does so at about the same moment, so they share the L2 cache's bandwidth.
`HANDOVER_STAGES` is that cost in stages of K: writing and reading one partial result, the model charging half of
it to the contributor and half to the finisher (per contributor). A stretch shorter than a unit starts inside one
unit and ends inside the next, so its cluster typically pays both halves. Stream-K is used only where a stretch plus
the hand-over is shorter than the whole unit the last round would otherwise take, and stretches are kept at least
`MIN_STRETCH` stages long. `plan` is that rule; the launcher of notebook 12's step 8 applies the same rule with the
same numbers (formatted into its C++ from here).

The hand-over's cost is a measurement, not a derivation. From the bytes alone (17 MB written, then read, through an
L2 cache that moves a few TB/s, the writes partly hidden under other blocks' multiplies) it would be a few stages.
On the H100, notebook 12's step 8 with that estimate (4
stages) ended 4096³ about 9 µs (13 stages of 0.69 µs) after step 7, where this model said 2 stages before it; in
the model that takes a hand-over of about 14 stages; another run, the one saved in notebook 12, ended about 8 stages
later, a hand-over of about 10. `HANDOVER_STAGES` is 20, erring towards whole units: sharing
where it does not pay cost 5% in the first of those runs (3% in the second), while the cases the margin gives up would save at most 6 stages a round.
"""
from typing import NamedTuple

MIN_STRETCH = 8          # stages of K: a shorter stretch would spend more on its partial sums than on multiplying
HANDOVER_STAGES = 20     # writing one partial result, then reading and adding it, in stages of K (measured, with a margin: above)


class Plan(NamedTuple):
    whole_units: int     # units done whole, round after round: unit u by cluster u % clusters
    sk_clusters: int     # clusters that share the rest along K (0: no stream-K)
    sk_stages: int       # stages of K in that rest: (units - whole_units) x k_tiles


class Piece(NamedTuple):
    unit: int
    k_begin: int         # stages of K [k_begin, k_end) of the unit
    k_end: int
    role: str            # 'whole', 'finisher' (adds the others' sums, stores C) or 'contributor' (writes its sums)


def plan(units, clusters, k_tiles, min_stretch=MIN_STRETCH, handover=HANDOVER_STAGES):
    "The Plan of `units` units of `k_tiles` stages of K each on `clusters` clusters."
    for name, v in (('units', units), ('clusters', clusters), ('k_tiles', k_tiles)):
        if not isinstance(v, int) or v < 1: raise ValueError(f"{name} must be a positive int, got {v!r}")
    left = units % clusters
    sk_stages = left * k_tiles
    sk_clusters = min(clusters, sk_stages // min_stretch)
    if left == 0 or sk_clusters < 2 or -(-sk_stages // sk_clusters) + handover >= k_tiles:
        return Plan(units, 0, 0)               # a last round of whole units is as fast: no stream-K
    return Plan(units - left, sk_clusters, sk_stages)


def stretch_start(p, cluster):
    "Where `cluster`'s stretch starts, in stages of K counted from the first stream-K unit's first stage."
    return cluster * p.sk_stages // p.sk_clusters


def piece_role(k_begin, k_end, k_tiles):
    "The role a piece's ends give it: starting inside its unit, a contributor; else ending before its end, a finisher."
    return 'contributor' if k_begin > 0 else 'finisher' if k_end < k_tiles else 'whole'


def stretch_pieces(start, end, k_tiles, first_unit):
    """The Pieces of a stretch [start, end) of the stages laid end to end from unit `first_unit`: one per unit the
    stretch touches, cut where it crosses from one unit into the next, each with the role its ends give it."""
    out, at = [], start
    while at < end:
        unit, k0 = first_unit + at // k_tiles, at % k_tiles
        k1 = min(k_tiles, k0 + end - at)
        out.append(Piece(unit, k0, k1, piece_role(k0, k1, k_tiles)))
        at += k1 - k0
    return out


def pieces(units, clusters, k_tiles, **rule):
    "[[Piece, ...] for each cluster]: every cluster's work in the order it does it, whole units first."
    p = plan(units, clusters, k_tiles, **rule)
    out = [[Piece(u, 0, k_tiles, 'whole') for u in range(c, p.whole_units, clusters)] for c in range(clusters)]
    for c in range(p.sk_clusters):
        out[c] += stretch_pieces(stretch_start(p, c), stretch_start(p, c + 1), k_tiles, p.whole_units)
    return out


def contributors(p, cluster, unit, k_tiles):
    "The clusters whose partial sums the finisher `cluster` of `unit` adds: those whose stretch starts inside it."
    end = (unit - p.whole_units + 1) * k_tiles
    found, c = [], cluster + 1
    while c < p.sk_clusters and stretch_start(p, c) < end:
        found.append(c)
        c += 1
    return found


def stages_per_cluster(units, clusters, k_tiles, **rule):
    """Each cluster's busy time in stages of K, with half the hand-over for each partial result it writes and half for
    each it reads: the model's makespan is the largest."""
    return [sum(w + x for w, x in row) for row in timeline(units, clusters, k_tiles, **rule)]


def timeline(units, clusters, k_tiles, **rule):
    "[[(stages multiplied, stages handing partial sums over) of each piece] for each cluster]."
    write = read = rule.get('handover', HANDOVER_STAGES) / 2
    p = plan(units, clusters, k_tiles, **rule)
    return [[(piece.k_end - piece.k_begin,
              write if piece.role == 'contributor' else
              read * len(contributors(p, c, piece.unit, k_tiles)) if piece.role == 'finisher' else 0)
             for piece in work] for c, work in enumerate(pieces(units, clusters, k_tiles, **rule))]


def draw_schedule(units, clusters, k_tiles, title=None, **rule):
    """Each cluster's pieces along time (in stages of K), coloured by unit; hatched: pieces of a shared unit, with
    the fix-up (writing or adding partial sums) drawn as a dark bar after them."""
    import matplotlib.pyplot as plt
    p = plan(units, clusters, k_tiles, **rule)
    times = timeline(units, clusters, k_tiles, **rule)
    colors = [plt.get_cmap('tab20')(i) for i in range(20) if i not in (14, 15)]   # no greys: grey is the hand-over
    fig, ax = plt.subplots(figsize=(11, 0.22 * clusters + 1.6))
    for c, (row, row_times) in enumerate(zip(pieces(units, clusters, k_tiles, **rule), times)):
        t = 0
        for piece, (w, extra) in zip(row, row_times):
            ax.barh(c, w, left=t, color=colors[piece.unit % len(colors)], edgecolor='black', linewidth=0.3,
                    hatch='//' if piece.role != 'whole' else None)
            t += w
            if extra:
                ax.barh(c, extra, left=t, color='0.25')
                t += extra
    ax.set_xlabel("time, in stages of K (dark: writing or adding partial sums)")
    ax.set_ylabel("cluster")
    ax.invert_yaxis()
    makespan = max(sum(w + x for w, x in row) for row in times)
    ax.set_title(title or f"{units} units of {k_tiles} stages on {clusters} clusters: "
                          f"{'stream-K over ' + str(p.sk_clusters) + ' clusters' if p.sk_clusters else 'whole units only'}"
                          f", done at {makespan} stages")
    fig.tight_layout()
    return fig
