"""The wave model: tiles, waves, tile quantization and split-K on a CPU. Shapes in the course's (h, k, w) order."""
import pytest

import numpy as np
from course.waves import best_splits, draw_tile_origins, draw_waves, modeled_ms, plan, tile_origins


def test_a_skinny_problem_leaves_most_slots_idle_and_split_k_fills_them():
    p = plan(256, 8192, 8192, 128, 128, blocks_per_sm=2)         # 2 x 64 = 128 tiles for 264 slots
    assert (p.tiles, p.waves) == (128, 1) and p.busy == pytest.approx(128 / 264)
    p2 = plan(256, 8192, 8192, 128, 128, splits=2, blocks_per_sm=2)
    assert p2.units == 256 and p2.busy == pytest.approx(256 / 264) and p2.k_per_unit == 4096
    split, _ = best_splits(256, 8192, 8192, 128, 128, blocks_per_sm=2)
    assert split >= 2


def test_a_problem_with_many_tiles_keeps_one_split():
    assert best_splits(5120, 256, 5120, 128, 128, blocks_per_sm=2)[0] == 1
    assert best_splits(4096, 4096, 4096, 128, 128, blocks_per_sm=2)[0] == 1


def test_the_partial_sums_cost_time_that_grows_with_the_splits():
    times = [modeled_ms(plan(256, 8192, 8192, 128, 128, s, sms=1), 256, 8192, 128, 128) for s in (1, 2, 4)]
    assert 0 < times[0] < times[1] < times[2]           # one slot: splitting only adds the partial sums' traffic


def test_tile_quantization_counts_the_padding():
    p = plan(777, 1234, 999, 128, 128)
    assert p.tiles == 7 * 8 and p.useful == pytest.approx(777 * 999 * 1234 / (7 * 128 * 8 * 128 * 1240))
    assert plan(1024, 1024, 1024, 128, 128).useful == 1


@pytest.mark.parametrize('bad', [dict(m=0), dict(bm=-1), dict(splits=0), dict(k=8, splits=2), dict(n=2.5)])
def test_bad_plans_are_refused(bad):
    args = dict(m=64, k=64, n=64, bm=32, bn=32)
    args.update(bad)
    with pytest.raises(ValueError): plan(**args)


def test_the_drawing_marks_busy_and_idle_slots():
    import matplotlib.pyplot as plt
    p = plan(256, 64, 1024, 128, 128, splits=2, sms=10)      # 16 tiles x 2 = 32 units on 10 slots: 4 waves
    fig = draw_waves(p)
    image = fig.axes[0].images[0].get_array()
    assert image.shape == (4, 10)
    assert (image >= 0).sum() == 32 and (image[3] == -1).sum() == 8
    assert set(image[image >= 0].ravel()) == {0, 1}
    plt.close(fig)


def covered(m, n, bm, bn, origins):
    "How many tiles cover each element of C, and whether any tile crosses C's edge."
    hits = np.zeros((m, n), int)
    for r, c in origins: hits[r:r + bm, c:c + bn] += 1
    return hits, any(r + bm > m or c + bn > n for r, c in origins)


@pytest.mark.parametrize('m, n, bm, bn', [(1000, 1000, 64, 128), (777, 999, 128, 256), (130, 260, 128, 128),
                                          (256, 512, 128, 128)])
def test_moved_edge_tiles_cover_c_inside_its_edges(m, n, bm, bn):
    moved, where = tile_origins(m, n, bm, bn), tile_origins(m, n, bm, bn, moved=False)
    assert len(moved) == len(where) == plan(m, 64, n, bm, bn).tiles           # as many tiles, as many blocks
    hits, crosses = covered(m, n, bm, bn, moved)
    assert hits.min() >= 1 and not crosses                                    # all of C, no index outside it
    ragged = m % bm or n % bn
    assert covered(m, n, bm, bn, where)[1] == bool(ragged)                    # unmoved: the edge tiles cross
    assert (hits.max() > 1) == bool(ragged)                                   # moved: they overlap instead
    assert len(set(moved)) == len(moved)


def test_a_c_smaller_than_a_tile_keeps_its_tile_at_the_origin():
    assert tile_origins(33, 64, 64, 128) == [(0, 0)]
    assert tile_origins(200, 64, 64, 128) == [(0, 0), (64, 0), (128, 0), (136, 0)]


def test_bad_tile_origins_are_refused():
    for bad in ((0, 5, 4, 4), (5, 5, 4, 0), (5.0, 5, 4, 4)):
        with pytest.raises(ValueError): tile_origins(*bad)


def test_the_tile_drawing_shows_both_placements():
    fig = draw_tile_origins(200, 300, 64, 128)
    before, after = fig.axes
    tiles = len(tile_origins(200, 300, 64, 128))
    assert len(before.patches) == len(after.patches) == tiles + 1             # the tiles and C's outline
    assert max(p.get_x() + p.get_width() for p in after.patches) == 300       # nothing past C's right edge
    assert max(p.get_x() + p.get_width() for p in before.patches) > 300
