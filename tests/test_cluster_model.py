"""The model of notebook 13's steps 4 and 5 (course.cluster_model) on a CPU: the bytes a block asks L2 for with and
without TMA multicast, the tiles a round of the persistent grid computes in each order and the panels of A and B it
reads, the drawings, and the model's constants held to the kernel's parameters in notebook 13."""
import re

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from course.cluster_model import (HOPPER_BK, HOPPER_BM, HOPPER_BN, HOPPER_BOX, HOPPER_CLUSTER,  # noqa: E402
                                  HOPPER_GROUP, KIB, MIB, draw_cluster_multicast, draw_round_footprint, dram_reads,
                                  operand_loads, round_footprint, tile_origin, tile_rounds)


def test_a_block_without_a_cluster_asks_for_all_it_receives():
    loads = operand_loads(bm=2, bn=4, bk=3, blocks=5, element_bytes=2)
    assert (loads.a_issued, loads.b_issued, loads.issued, loads.delivered) == (12, 24, 36, 36)
    assert loads.ratio == 1 and loads.shared is None
    assert (loads.round_issued, loads.round_delivered) == (5 * 36, 5 * 36)


def test_the_kernels_stage_with_and_without_multicast():
    alone, pair = operand_loads(), operand_loads(cluster=2)      # 128 x 256 tiles, 64 of K, bf16, 132 blocks
    assert (alone.a_issued, alone.b_issued, alone.delivered) == (16 * KIB, 32 * KIB, 48 * KIB)
    assert (pair.a_issued, pair.b_issued, pair.issued, pair.delivered) == (16 * KIB, 16 * KIB, 32 * KIB, 48 * KIB)
    assert pair.ratio == pytest.approx(2 / 3) and pair.shared == 'B'
    assert (alone.round_issued, pair.round_issued) == (132 * 48 * KIB, 132 * 32 * KIB)


@pytest.mark.parametrize('shared', ['A', 'B'])
@pytest.mark.parametrize('cluster', [2, 4])
def test_multicast_divides_the_shared_operand_and_leaves_the_other(shared, cluster):
    alone = operand_loads(bm=64, bn=128, bk=32, blocks=8)
    many = operand_loads(bm=64, bn=128, bk=32, cluster=cluster, shared=shared, blocks=8)
    same, cut = ('b_issued', 'a_issued') if shared == 'A' else ('a_issued', 'b_issued')
    assert getattr(many, same) == getattr(alone, same)
    assert getattr(many, cut) * cluster == getattr(alone, cut)
    assert many.delivered == alone.delivered                     # every block still receives whole tiles


@pytest.mark.parametrize('bad', [dict(bm=0), dict(bk=2.0), dict(cluster=0), dict(shared='C'),
                                 dict(cluster=3, blocks=6),       # 256 columns of B do not split in 3
                                 dict(cluster=2, blocks=131),     # a round of whole clusters only
                                 dict(element_bytes=True)])
def test_bad_operand_loads_are_refused(bad):
    with pytest.raises(ValueError): operand_loads(**bad)


def test_tile_origin_numbers_tiles_down_the_columns_of_each_group():
    # 3 x 2 tiles of 10 x 20 in groups of 2 tile-rows: the first group down its columns, the last (1 row) along it
    order = [tile_origin(u, 30, 40, 10, 20, 2) for u in range(6)]
    assert order == [(0, 0), (10, 0), (0, 20), (10, 20), (20, 0), (20, 20)]
    assert [tile_origin(u, 30, 40, 10, 20, 1) for u in range(6)] == [(0, 0), (0, 20), (10, 0), (10, 20), (20, 0), (20, 20)]
    with pytest.raises(ValueError): tile_origin(6, 30, 40, 10, 20, 2)


@pytest.mark.parametrize('m, n, bm, bn, blocks, group, cluster', [(4096, 4096, 128, 256, 132, 8, 1), (1000, 700, 128, 256, 6, 3, 2),
                                                                   (8192, 8192, 128, 256, 132, 8, 2), (300, 300, 64, 64, 4, 16, 4)])
def test_every_tile_is_computed_in_exactly_one_round_and_a_round_is_full_but_the_last(m, n, bm, bn, blocks, group, cluster):
    rounds = tile_rounds(m, n, bm, bn, blocks, group, cluster)
    assert rounds.min() >= 0
    counts = np.bincount(rounds.ravel())
    if -(-m // bm) % cluster == 0:                               # no cluster's lower block past C's edge
        assert (counts[:-1] == blocks).all() and counts[-1] <= blocks


def test_a_small_round_by_hand():
    # 4 x 4 tiles of 2 x 2, 4 blocks a round: grouped by 2, round 0 is the 2 x 2 square of tiles at the origin
    # (2 panels of A, 2 of B); row after row, the first row of tiles (1 panel of A, all 4 of B)
    fp = round_footprint(8, 8, 2, 2, 4, 2, k=3, element_bytes=2)
    assert fp.grouped.tiles == ((0, 0), (0, 1), (1, 0), (1, 1)) and fp.row_major.tiles == ((0, 0), (0, 1), (0, 2), (0, 3))
    assert (fp.grouped.a_tiles, fp.grouped.b_tiles, fp.grouped.a_bytes, fp.grouped.b_bytes) == (2, 2, 24, 24)
    assert (fp.row_major.a_tiles, fp.row_major.b_tiles, fp.row_major.a_bytes, fp.row_major.b_bytes) == (1, 4, 12, 48)
    assert fp.grouped.bytes == 48 and fp.grouped.step_bytes == 48      # k = 3 < bk: a stage is all of K
    second = round_footprint(8, 8, 2, 2, 4, 2, k=3, which=1).grouped
    assert second.tiles == ((0, 2), (0, 3), (1, 2), (1, 3))


def test_an_edge_panel_counts_only_the_rows_inside_a():
    fp = round_footprint(5, 4, 4, 4, 2, 1, k=1, element_bytes=1).grouped      # tiles (0, 0) and (1, 0): rows 4 + 1
    assert (fp.a_tiles, fp.a_bytes, fp.b_bytes) == (2, 5, 4)


@pytest.mark.parametrize('bm, bn', [(128, 256), (128, 128)])
@pytest.mark.parametrize('size, group', [(4096, 16), (8192, 8), (8192, 16), (16384, 8), (16384, 4)])
def test_grouping_reads_fewer_bytes_where_a_group_holds_a_round(bm, bn, size, group):
    assert group * (size // bn) >= 132                           # a group of tiles at least as large as a round
    fp = round_footprint(size, size, bm, bn, 132, group, k=size)
    assert len(fp.grouped.tiles) == len(fp.row_major.tiles) == 132
    assert fp.grouped.bytes < fp.row_major.bytes and fp.grouped.step_bytes < fp.row_major.step_bytes
    if bm == bn:                                                 # square tiles: panels of A and B weigh the same
        assert fp.grouped.a_tiles + fp.grouped.b_tiles < fp.row_major.a_tiles + fp.row_major.b_tiles


@pytest.mark.parametrize('size', [1024, 4096, 8192])
def test_group_1_is_row_after_row(size):
    fp = round_footprint(size, size, HOPPER_BM, HOPPER_BN, 132, 1, k=size)
    assert fp.grouped == fp.row_major
    assert fp.row_major.tiles == tuple(divmod(t, size // HOPPER_BN) for t in range(min(132, (size // HOPPER_BM) * (size // HOPPER_BN))))


def test_the_kernels_rounds_on_the_big_squares():
    # 4096³: 16 tile-columns. Step 4's group (8 tile-rows x 16 columns = 128 tiles) is smaller than a round of 132,
    # which runs into the next group: no fewer panels than row after row. Step 5's order (16 tile-rows) reads half of B.
    step4 = round_footprint(4096, 4096, 128, 256, 132, 8, k=4096)
    assert (step4.grouped.a_tiles, step4.grouped.b_tiles, step4.row_major.a_tiles, step4.row_major.b_tiles) == (12, 16, 9, 16)
    step5 = round_footprint(4096, 4096, 128, 256, 132, 8, k=4096, cluster=2).grouped
    assert (step5.a_tiles, step5.b_tiles, step5.bytes) == (16, 9, (16 * 1 + 9 * 2) * MIB)
    assert step5.step_bytes == (16 * 16 + 9 * 32) * KIB
    big = round_footprint(8192, 8192, 128, 256, 132, 8, k=8192)
    assert (big.grouped.a_tiles, big.grouped.b_tiles, big.row_major.a_tiles, big.row_major.b_tiles) == (8, 17, 5, 32)


@pytest.mark.parametrize('size', [4096, 8192, 3000])
def test_step_5s_order_is_step_4s_with_twice_the_group(size):
    "Notebook 13: step 5's units are 2 tiles tall, so its GROUP = 8 is step 4's GROUP = 16."
    pairs = tile_rounds(size, size, 128, 256, 132, 8, cluster=2)
    if -(-size // 128) % 2 == 0:
        assert (pairs == tile_rounds(size, size, 128, 256, 132, 16)).all()
    assert round_footprint(size, size, 128, 256, 132, 8, k=size, cluster=2).grouped.tiles == \
        round_footprint(size, size, 128, 256, 132, 16, k=size).grouped.tiles


def test_the_whole_runs_reads():
    ideal = 2 * 8192 * 8192 * 2                                  # A and B, each read once
    grouped, by_rows = (dram_reads(8192, 8192, 128, 256, 132, g, k=8192) for g in (8, 1))
    assert ideal < grouped < by_rows
    assert dram_reads(8, 8, 2, 2, 4, 2, k=3, element_bytes=2) == 4 * 48     # 4 rounds of 2 + 2 panels of 12 bytes
    assert dram_reads(8, 8, 2, 2, 16, 2, k=3, element_bytes=2) == (8 * 3 + 3 * 8) * 2   # one round: each input once


@pytest.mark.parametrize('bad', [dict(m=0), dict(bn=2.5), dict(blocks=131, cluster=2), dict(group=0), dict(k=0),
                                 dict(which=4), dict(which=-1), dict(cluster=0)])
def test_bad_rounds_are_refused(bad):
    args = dict(m=4096, n=4096, bm=128, bn=256, blocks=132, group=8, k=4096)     # 4 rounds: 0 to 3
    args.update(bad)
    with pytest.raises(ValueError): round_footprint(**args)


def test_the_multicast_drawing_has_the_diagram_and_the_bytes():
    fig = draw_cluster_multicast()
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    diagram, bars = fig.axes
    labels = [t.get_text() for t in diagram.texts]
    assert labels.count('box 0') == 2 and labels.count('B box 3') == 1        # every box in both blocks, once in global
    tops = sorted(round(p.get_y() + p.get_height()) for p in bars.patches)    # the stacked bars' tops, in KiB
    assert tops == [16, 16, 32, 48]
    plt.close(fig)
    with pytest.raises(ValueError): draw_cluster_multicast(bn=192)             # 3 boxes do not split in 2
    with pytest.raises(ValueError): draw_cluster_multicast(bn=100)             # not whole boxes of 64 columns
    with pytest.raises(ValueError): draw_cluster_multicast(bk=0)


def test_the_round_drawing_has_a_panel_per_order_and_a_colour_bar():
    fig = draw_round_footprint(4096, 4096, 128, 256, 132, (16, 8, 1), k=4096)
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 4
    for ax, group in zip(fig.axes, (16, 8, 1)):
        image = ax.images[0].get_array()
        assert (image == tile_rounds(4096, 4096, 128, 256, 132, group)).all() and (image == 0).sum() == 132
    assert '12 tile-rows of A, 16 tile-columns of B' in fig.axes[1].get_title()
    plt.close(fig)
    fig = draw_round_footprint(8192, 8192, 128, 256, 132, 8, cluster=2)        # an int: that order and row after row
    assert len(fig.axes) == 3 and 'row after row' in fig.axes[1].get_title()
    plt.close(fig)
    with pytest.raises(ValueError): draw_round_footprint(4096, 4096, 128, 256, 132, ())


def test_the_models_constants_are_the_kernels():
    from utils import import_notebook
    nb = import_notebook('13')
    for step, cluster in (('persistent', 1), ('cluster', HOPPER_CLUSTER)):
        params = nb.hopper_kernel(step).params
        assert (params['BM'], params['BN'], params['GROUP'], params['CLUSTER']) == (HOPPER_BM, HOPPER_BN, HOPPER_GROUP, cluster)
    constants = dict(re.findall(r'constexpr int (BK|BOX) = (\d+);', nb.HOPPER_COMMON))
    assert (int(constants['BK']), int(constants['BOX'])) == (HOPPER_BK, HOPPER_BOX)
    assert "j = rank; j < BN / BOX; j += CLUSTER" in nb.SPECIALIZED_KERNEL       # box j copied by block j % CLUSTER
    assert "tile_origin<BM * CLUSTER, BN, GROUP>" in nb.SPECIALIZED_KERNEL       # units CLUSTER tiles tall
