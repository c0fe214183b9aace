"""The stream-K model (course.stream_k) on a CPU: every stage of every unit done exactly once, each cluster
contributing at most once, finishers after their contributors, and the rule that says when stream-K pays."""
import itertools

import pytest

from course.stream_k import (HANDOVER_STAGES, MIN_STRETCH, contributors, draw_schedule, pieces, plan,
                             stages_per_cluster, stretch_pieces, stretch_start)

CASES = [(256, 66, 64), (1024, 66, 128), (16, 66, 128), (1, 66, 64), (81, 66, 16), (4, 66, 16), (8, 66, 11),
         (197, 66, 64), (66, 66, 64), (3, 5, 200), (7, 3, 9)]


@pytest.mark.parametrize('units, clusters, k_tiles', CASES)
def test_every_stage_of_every_unit_is_done_exactly_once(units, clusters, k_tiles):
    done = [(p.unit, k) for row in pieces(units, clusters, k_tiles) for p in row for k in range(p.k_begin, p.k_end)]
    assert sorted(done) == list(itertools.product(range(units), range(k_tiles)))


@pytest.mark.parametrize('units, clusters, k_tiles', CASES)
def test_a_cluster_contributes_at_most_once_and_only_with_its_stretchs_first_piece(units, clusters, k_tiles):
    whole_units = plan(units, clusters, k_tiles).whole_units
    for row in pieces(units, clusters, k_tiles):
        roles = [p.role for p in row if p.unit >= whole_units]     # the stretch: after the whole units
        assert roles.count('contributor') <= 1 and ('contributor' not in roles or roles.index('contributor') == 0)
        assert 'finisher' not in roles[:-1]                  # a finisher's piece ends its stretch


@pytest.mark.parametrize('units, clusters, k_tiles', CASES)
def test_each_shared_unit_has_one_finisher_whose_contributors_hold_the_rest(units, clusters, k_tiles):
    p, work = plan(units, clusters, k_tiles), pieces(units, clusters, k_tiles)
    for c, row in enumerate(work):
        for piece in row:
            if piece.role != 'finisher': continue
            helpers = contributors(p, c, piece.unit, k_tiles)
            assert helpers and all(h > c for h in helpers)   # later clusters: none waits for a cluster that waits
            parts = [piece] + [next(q for q in work[h] if q.unit >= p.whole_units) for h in helpers]
            assert all(q.unit == piece.unit for q in parts)
            assert sum(q.k_end - q.k_begin for q in parts) == k_tiles


def test_the_hand_over_decides_the_big_squares():
    # 4096³ and 8192³ in units of two 128 x 256 tiles: the last round's 58 of 66 units (64 stages each) are not worth
    # sharing at the measured hand-over; 34 of 66 units of 128 stages are
    assert plan(256, 66, 64).sk_clusters == 0 and plan(256, 66, 64, handover=4).sk_clusters == 66
    p = plan(1024, 66, 128)
    assert p.sk_clusters == 66 and p.whole_units == 1024 - 1024 % 66
    assert max(stages_per_cluster(1024, 66, 128)) < -(-1024 // 66) * 128


def test_a_skinny_problem_shares_its_few_long_units_with_every_cluster():
    p = plan(16, 66, 128)                                          # 256 x 8192 @ 8192 x 4096
    assert (p.whole_units, p.sk_clusters) == (0, 66)
    assert max(stages_per_cluster(16, 66, 128)) < 0.7 * 128


def test_stream_k_is_left_out_where_it_cannot_pay():
    assert plan(198, 66, 64).sk_clusters == 0                       # the last round is full
    assert plan(197, 66, 64, handover=4).sk_clusters == 0           # 65 of 66: a stretch + the hand-over >= a unit
    assert plan(8, 66, 11).sk_clusters == 0                         # too few stages to share
    assert plan(4, 66, 3).sk_clusters == 0


def test_stretches_are_even_and_never_shorter_than_the_minimum():
    p = plan(16, 66, 128)
    lengths = [stretch_start(p, c + 1) - stretch_start(p, c) for c in range(p.sk_clusters)]
    assert min(lengths) >= MIN_STRETCH and max(lengths) - min(lengths) <= 1
    assert plan(1, 66, 64).sk_clusters == 64 // MIN_STRETCH


def test_the_model_charges_the_hand_over():
    busy = stages_per_cluster(1024, 66, 128)
    work = pieces(1024, 66, 128)
    p = plan(1024, 66, 128)
    for c in (0, 30, 65):
        multiplied = sum(q.k_end - q.k_begin for q in work[c])
        handed = sum(HANDOVER_STAGES / 2 * (1 if q.role == 'contributor' else
                                            len(contributors(p, c, q.unit, 128)) if q.role == 'finisher' else 0) for q in work[c])
        assert busy[c] == multiplied + handed and handed > 0


@pytest.mark.parametrize('bad', [dict(units=0, clusters=66, k_tiles=4), dict(units=4, clusters=0, k_tiles=4),
                                 dict(units=4, clusters=66, k_tiles=2.5)])
def test_bad_sizes_are_refused(bad):
    with pytest.raises(ValueError, match='positive int'): plan(**bad)


def test_draw_schedule_draws_every_piece():
    import matplotlib
    matplotlib.use('Agg')
    fig = draw_schedule(10, 6, 128)
    bars = fig.axes[0].patches
    assert len(bars) >= sum(len(row) for row in pieces(10, 6, 128))
    assert 'stream-K' in fig.axes[0].get_title()
    legend = [text.get_text() for text in fig.axes[0].get_legend().get_texts()]      # what hatching, dark and colour mean
    assert any('shared along K' in t for t in legend) and any('partial sums' in t for t in legend)
    assert 'colour: the unit' in legend


def test_a_stretch_is_cut_at_every_unit_it_crosses():
    assert [tuple(p) for p in stretch_pieces(10, 200, 64, 5)] == [(5, 10, 64, 'contributor'), (6, 0, 64, 'whole'),
                                                                   (7, 0, 64, 'whole'), (8, 0, 8, 'finisher')]
    assert [tuple(p) for p in stretch_pieces(0, 64, 64, 0)] == [(0, 0, 64, 'whole')]
    assert [tuple(p) for p in stretch_pieces(70, 90, 64, 3)] == [(4, 6, 26, 'contributor')]


@pytest.mark.parametrize('units, clusters, k_tiles', [(16, 66, 128), (8, 66, 256), (1024, 66, 128), (5, 3, 40)])
def test_hand_over_any_arrival_order_finishes_each_unit_once_with_the_same_sum(units, clusters, k_tiles):
    """Whatever order the clusters sharing a unit reach its counter in, exactly one finishes it, it adds the same sums
    in the same order (first to last: C's bits do not depend on who came last), it reads only slots written before it
    finished, and the counter is back at 0 for the next launch or graph replay."""
    import random
    from course.stream_k import cluster_of_stage, hand_over
    p = plan(units, clusters, k_tiles, handover=4)
    assert p.sk_clusters > 0
    rng = random.Random(0)
    for unit in range(p.whole_units, units):
        begin = (unit - p.whole_units) * k_tiles
        first, last = cluster_of_stage(p, begin), cluster_of_stage(p, begin + k_tiles - 1)
        sharing = list(range(first, last + 1))
        orders = list(itertools.permutations(sharing)) if len(sharing) <= 5 else [rng.sample(sharing, len(sharing)) for _ in range(50)]
        for order in orders:
            h = hand_over(p, unit, k_tiles, list(order))
            assert h.counter_after == 0 and h.finisher in sharing
            assert [source[0] if source[0] != 'registers' else source[1] for source in h.added] == sharing
            assert all(source in h.written for source in h.added if source[0] != 'registers')
            assert (h.added[0][0] == 'registers') == (order[-1] == first)   # the first keeps its sums only when last
            if order[-1] != first: assert h.finisher == order[-1]           # else whoever counts in last finishes
            assert len(set(h.written)) == len(h.written)                    # no slot written twice


def test_cluster_of_stage_inverts_stretch_start():
    from course.stream_k import cluster_of_stage
    for units, clusters, k_tiles in [(16, 66, 128), (8, 66, 256), (1024, 66, 128), (5, 3, 40), (130, 66, 17)]:
        p = plan(units, clusters, k_tiles, handover=4)
        if not p.sk_clusters: continue
        for stage in range(p.sk_stages):
            c = cluster_of_stage(p, stage)
            assert stretch_start(p, c) <= stage and (c + 1 == p.sk_clusters or stretch_start(p, c + 1) > stage)


def test_hand_over_refuses_an_order_of_the_wrong_clusters():
    from course.stream_k import hand_over
    p = plan(16, 66, 128)
    with pytest.raises(ValueError, match='arrivals must order'): hand_over(p, 0, 128, [0, 1])
