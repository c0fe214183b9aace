"""Stream-K for the last round of a persistent kernel: which cluster multiplies which stretch of K of which unit.

A persistent kernel runs `clusters` clusters at once, each looping over units (a unit: the tiles of C one cluster
computes together). With `units = rounds x clusters + left`, the first `rounds` rounds keep every cluster busy, but
in the last one only `left` clusters have a unit and the others wait for them. **Stream-K** cuts that last round
along K instead: its `left x k_tiles` stages of K (one stage: BK of K for one unit) are laid end to end and dealt out
in equal stretches, one per cluster, so that every cluster ends at about the same time. A stretch can start or end
inside a unit, which is then shared by several clusters:

- the cluster whose stretch holds the unit's first stage (`k_begin == 0`) is the unit's **finisher**: its piece is
  the last of its stretch, so it usually ends after the others, and then adds their partial sums to its
  accumulators and stores C;
- a cluster whose stretch *starts* inside a unit is a **contributor**: it writes its partial sums (fp32) to a
  workspace in global memory and counts itself in on the unit's counter.

No cluster ever waits for another without end: a wait for a block that is not running (another stream's kernel may
hold the multiprocessors it needs) would never end. The finisher looks at the counter for a few microseconds at
most (`FIRST_CLUSTER_POLLS` reads); if a contributor is later than that, the finisher writes its own sums and counts
itself in too, and whichever comes last adds everyone's sums, in the same order, and stores C. A cluster can hand
sums over at both ends of its stretch (its first piece, as a contributor; its last, as a finisher that did not
wait), so each block has two workspace slots.

Handing partial sums over costs time: a contributor writes 128 KB per block, a finisher reads them back and adds
them, and every block of the GPU does so at about the same moment, so they share the L2 cache's bandwidth.
`HANDOVER_STAGES` is that cost in stages of K: writing and reading one partial result, the model charging half of
it to the contributor and half to the finisher (per contributor). A stretch shorter than a unit starts inside one
unit and ends inside the next, so its cluster typically pays both halves. Stream-K is used only where a stretch plus
the hand-over is shorter than the whole unit the last round would otherwise take, and stretches are kept at least
`MIN_STRETCH` stages long. `plan` is that rule; the launcher of notebook 13's step 8 applies the same rule with the
same numbers (formatted into its C++ from here).

The hand-over's cost is a measurement, not a derivation. From the bytes alone (17 MB written, then read, through an
L2 cache that moves a few TB/s, the writes partly hidden under other blocks' multiplies) it would be a few stages.
On the H100, notebook 13's step 8 with that estimate (4
stages) ended 4096³ about 9 µs (13 stages of 0.69 µs) after step 7, where this model said 2 stages before it; in
the model that takes a hand-over of about 14 stages (another run ended about 8 stages later: about 10). Notebook 13's
section 5 measures it again at every run. `HANDOVER_STAGES` is 20, erring towards whole units: sharing where it does
not pay cost 3 to 5% in those runs, while the cases the margin gives up would save at most 6 stages a round.
"""
from typing import NamedTuple

MIN_STRETCH = 8          # stages of K: a shorter stretch would spend more on its partial sums than on multiplying
HANDOVER_STAGES = 20     # writing one partial result, then reading and adding it, in stages of K (measured, with a margin: above)
FIRST_CLUSTER_POLLS = 16 # reads of a unit's counter, a few hundred ns apart, before its finisher stops looking (above)


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


def cluster_of_stage(p, stage):
    "The cluster whose stretch holds `stage` (counted as stretch_start counts): the last c with stretch_start(c) <= stage."
    return ((stage + 1) * p.sk_clusters + p.sk_stages - 1) // p.sk_stages - 1


class HandOver(NamedTuple):
    finisher: int        # the cluster that adds the sums and stores C
    written: tuple       # (cluster, slot) of every partial result written to the workspace, in the order written
    added: tuple         # where each addend of C came from, in the order added: ('registers', c) or (c, slot)
    counter_after: int   # the unit's counter once the launch is done (0: ready for the next launch)


def hand_over(p, unit, k_tiles, arrivals):
    """Step 8's protocol for one shared `unit`, as its kernel runs it, with the clusters that share it coming to the
    counter in the order `arrivals` (a permutation of them; for the unit's first cluster, the moment of its last look
    at the counter). A contributor writes its sums to its slot 0 and counts itself in. The first cluster (the one
    whose stretch holds the unit's first stage) keeps its sums in registers if every other is counted in when it
    looks; else it writes them to its slot 1 and counts itself in too. Whoever counts in when all the others are in
    finishes the unit (so does the first, when it keeps its sums): it adds the sums first to last, reading only
    slots written before it finished, and sets the counter back to 0."""
    begin = (unit - p.whole_units) * k_tiles
    first, last = cluster_of_stage(p, begin), cluster_of_stage(p, begin + k_tiles - 1)
    sharing = list(range(first, last + 1))
    if sorted(arrivals) != sharing: raise ValueError(f"arrivals must order the clusters {sharing}, got {arrivals}")
    others, counter, written, finisher, kept = last - first, 0, [], None, False
    for c in arrivals:
        if c == first and counter == others:
            finisher, kept = c, True                     # every other is in: the first keeps its sums
            continue
        written.append((c, 1 if c == first else 0))
        if counter == others: finisher = c               # count_in returned the number of the others
        counter += 1
    if finisher is None: raise AssertionError(f"no cluster finished unit {unit}")
    added = (('registers', first) if kept else (first, 1),) + tuple((c, 0) for c in sharing[1:])
    return HandOver(finisher, tuple(written), added, 0)    # the finisher sets the counter back to 0


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
    the fix-up (writing or adding partial sums) drawn as a dark bar after them. A legend beside the axes says so."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch
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
    ax.legend(handles=[Patch(facecolor=colors[0], edgecolor='black', linewidth=0.3, label='multiplying a whole unit'),
                       Patch(facecolor=colors[1], edgecolor='black', linewidth=0.3, hatch='//',
                             label='multiplying a piece of a unit\nshared along K'),
                       Patch(facecolor='0.25', label='writing or adding\npartial sums'),
                       Patch(facecolor='white', edgecolor='white', label='colour: the unit')],
              loc='upper left', bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    ax.set_ylabel("cluster")
    ax.invert_yaxis()
    makespan = max(sum(w + x for w, x in row) for row in times)
    ax.set_title(title or f"{units} units of {k_tiles} stages on {clusters} clusters: "
                          f"{'stream-K over ' + str(p.sk_clusters) + ' clusters' if p.sk_clusters else 'whole units only'}"
                          f", done at {makespan} stages")
    fig.tight_layout()
    return fig
