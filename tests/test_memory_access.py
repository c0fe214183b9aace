"""course/memory_access.py: access maps read from the simulator's trace, the sector model of coalescing,
the two drawings (checked by what they mark), and the table of memory traffic."""
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt   # noqa: E402
import pytest   # noqa: E402

from course.checked_simulator import Trace, dim3   # noqa: E402
from course.exercises.coalescing import first_uncoalesced   # noqa: E402
from course.memory_access import (TRAFFIC_COUNTERS, WarpAccess, accesses, draw_accesses, draw_coalescing,   # noqa: E402
                                  fewest_sectors, marked_cells, sector_counts, sectors_touched, tile_load_accesses, tile_load_sectors, traced_matmul,
                                  traffic, traffic_table, warp_accesses, with_x_and_y_swapped)
from utils import import_notebook   # noqa: E402

NB = {name: import_notebook(name) for name in ('01', '02', '03')}


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close('all')


def every_thread(h, w, block_dim):
    "((block, thread), (r, c)) for every thread of the grid covering h x w whose (r, c) lies inside it."
    for by in range(-(-h // block_dim.y)):
        for bx in range(-(-w // block_dim.x)):
            for ty in range(block_dim.y):
                for tx in range(block_dim.x):
                    r, c = by * block_dim.y + ty, bx * block_dim.x + tx
                    if r < h and c < w: yield ((bx, by), (tx, ty)), (r, c)


@pytest.mark.parametrize('h,k,w', [(8, 8, 8), (5, 7, 3)])
def test_a_naive_thread_reads_its_row_of_m_and_its_column_of_n_once_each(h, k, w):
    block_dim = dim3(4, 4)
    trace = traced_matmul(NB['01'].matmul_bk, h, k, w, block_dim)
    for (block, thread), (r, c) in every_thread(h, w, block_dim):
        assert accesses(trace, 'm', k, block, thread) == {(r, i): 1 for i in range(k)}
        assert accesses(trace, 'n', w, block, thread) == {(i, c): 1 for i in range(k)}
        assert accesses(trace, 'out', w, block, thread) == {(r, c): 1}
        assert accesses(trace, 'out', w, block, thread, kind='read') == {}


def test_a_naive_block_reads_each_element_of_its_bands_once_per_thread_of_a_row_or_column():
    trace = traced_matmul(NB['01'].matmul_bk, 8, 8, 8, dim3(4, 4))
    assert accesses(trace, 'm', 8, block=(1, 0)) == {(r, i): 4 for r in range(4) for i in range(8)}
    assert accesses(trace, 'n', 8, block=(1, 0)) == {(i, c): 4 for i in range(8) for c in range(4, 8)}


def test_the_map_comes_from_the_trace_not_from_the_indices():
    # With x and y swapped, thread (x, y) of block (bx, by) computes element (bx*4 + x, by*4 + y): the same
    # question now has another answer, which only a map read from the trace can give.
    trace = traced_matmul(with_x_and_y_swapped(NB['01'].matmul_bk), 8, 8, 8, dim3(4, 4))
    assert set(accesses(trace, 'm', 8, (1, 0), (2, 1))) == {(6, i) for i in range(8)}
    assert set(accesses(trace, 'n', 8, (1, 0), (2, 1))) == {(i, 1) for i in range(8)}
    # and a made-up trace is read as it is
    made_up = Trace()
    made_up.addresses[((0, 0), (0, 0))] = [('global', 'read', 'm', 5), ('global', 'read', 'm', 5),
                                           ('shared', 'read', 'm', 1), ('global', 'write', 'out', 2)]
    assert accesses(made_up, 'm', 4, (0, 0), (0, 0)) == {(1, 1): 2}
    assert accesses(made_up, 'out', 4, (0, 0), (0, 0), kind='read') == {}


@pytest.mark.parametrize('h,k,w,tw', [(8, 8, 8, 4), (5, 7, 6, 4)])
def test_a_tiled_block_reads_exactly_its_tile_row_band_and_tile_column_band_once(h, k, w, tw):
    trace = traced_matmul(NB['02'].matmul_tiled_bk, h, k, w, dim3(tw, tw), convention='block')
    for by in range(-(-h // tw)):
        for bx in range(-(-w // tw)):
            rows, cols = range(by * tw, min(h, by * tw + tw)), range(bx * tw, min(w, bx * tw + tw))
            assert accesses(trace, 'm', k, (bx, by), kind='read') == {(r, i): 1 for r in rows for i in range(k)}
            assert accesses(trace, 'n', w, (bx, by), kind='read') == {(i, c): 1 for i in range(k) for c in cols}


def test_a_tiled_thread_loads_one_element_of_each_tile():
    trace = traced_matmul(NB['03'].matmul_tiled_bk, 8, 8, 8, dim3(4, 4), convention='run_threads')
    for (block, thread), (r, c) in every_thread(8, 8, dim3(4, 4)):
        tc, tr = thread
        assert accesses(trace, 'm', 8, block, thread, kind='read') == {(r, tc): 1, (r, tc + 4): 1}
        assert accesses(trace, 'n', 8, block, thread, kind='read') == {(tr, c): 1, (tr + 4, c): 1}


def test_a_block_kernel_trace_cannot_answer_for_one_thread():
    trace = traced_matmul(NB['02'].matmul_tiled_bk, 8, 8, 8, dim3(4, 4), convention='block')
    with pytest.raises(ValueError, match='as a whole'):
        accesses(trace, 'm', 8, (0, 0), (1, 1))
    with pytest.raises(ValueError, match='no block'):
        accesses(trace, 'm', 8, (5, 5))


def test_a_wrong_kernel_is_not_drawn():
    def writes_zeros(blockIdx, threadIdx, blockDim, m, n, out, h, w, k):
        r, c = blockIdx.y * blockDim.y + threadIdx.y, blockIdx.x * blockDim.x + threadIdx.x
        if r < h and c < w: out[r * w + c] = 0.
    with pytest.raises(RuntimeError, match='wrong product'):
        traced_matmul(writes_zeros, 4, 4, 4, dim3(4, 4))


def test_the_access_drawing_marks_the_threads_cells_and_the_blocks():
    trace = traced_matmul(NB['01'].matmul_bk, 8, 8, 8, dim3(4, 4))
    fig = draw_accesses(trace, 8, 8, 8, block=(1, 0), thread=(2, 1))
    m_ax, n_ax, out_ax = fig.axes
    assert marked_cells(m_ax, 'thread') == {(1, i) for i in range(8)}
    assert marked_cells(n_ax, 'thread') == {(i, 6) for i in range(8)}
    assert marked_cells(out_ax, 'thread') == {(1, 6)}
    assert marked_cells(m_ax, 'block') == {(r, i) for r in range(4) for i in range(8)}
    assert marked_cells(out_ax, 'block') == {(r, c) for r in range(4) for c in range(4, 8)}
    assert {t.get_text() for t in m_ax.texts} == {'4'}       # each element of the band: by 4 threads of the block
    tiled = traced_matmul(NB['02'].matmul_tiled_bk, 8, 8, 8, dim3(4, 4), convention='block')
    m_ax, n_ax, _ = draw_accesses(tiled, 8, 8, 8, block=(1, 0)).axes
    assert marked_cells(m_ax, 'thread') == set() and {t.get_text() for t in m_ax.texts} == {'1'}
    assert marked_cells(n_ax, 'block') == {(i, c) for i in range(8) for c in range(4, 8)}


def lanes(indices): return WarpAccess((0, 0), 0, 'read', 'x', 1, tuple(enumerate(indices)), (32, 1))


def test_sectors_of_neighbouring_strided_and_broadcast_reads():
    assert sectors_touched(range(32)) == fewest_sectors(range(32)) == 4
    assert lanes(range(3, 35)).sectors == 5 and lanes(range(3, 35)).coalesced       # misaligned: one more, allowed
    assert lanes(range(0, 32 * 64, 64)).sectors == 32 and not lanes(range(0, 32 * 64, 64)).coalesced
    assert lanes(range(0, 64, 2)).sectors == 8 and not lanes(range(0, 64, 2)).coalesced
    assert lanes([7] * 32).sectors == 1 and lanes([7] * 32).fewest == 1


def test_the_naive_kernel_coalesces_and_its_swapped_twin_does_not():
    block = dim3(32, 4)
    counts = sector_counts(traced_matmul(NB['01'].matmul_bk, 8, 16, 64, block), block)
    per = {key: c.sectors / c.instructions for key, c in counts.items()}
    assert per == {('m', 'read'): 1, ('n', 'read'): 4, ('out', 'write'): 4}
    swapped = traced_matmul(with_x_and_y_swapped(NB['01'].matmul_bk), 64, 16, 8, block, blocks=dim3(2, 2))
    per = {key: c.sectors / c.instructions for key, c in sector_counts(swapped, block).items()}
    assert per == {('m', 'read'): 32, ('n', 'read'): 1, ('out', 'write'): 32}
    assert 'read of m touches 32 sectors' in first_uncoalesced(swapped, block)


def test_the_coalescing_drawing_shows_each_sector_and_each_used_element():
    block = dim3(32, 4)
    good = warp_accesses(traced_matmul(NB['01'].matmul_bk, 4, 16, 32, block), block)
    bad = warp_accesses(traced_matmul(with_x_and_y_swapped(NB['01'].matmul_bk), 32, 16, 4, block,
                                      blocks=dim3(1, 1)), block)
    row = next(a for a in good if a.buffer == 'n')
    column = next(a for a in bad if a.buffer == 'm')
    fig = draw_coalescing([row, column], ['row', 'column'])
    for ax, access, sectors in zip(fig.axes, (row, column), (4, 32)):
        gids = [p.get_gid() for p in ax.patches]
        assert gids.count('lane') == 32 and gids.count('sector') == sectors and gids.count('used') == 32
    assert 'in 4 sectors (128 bytes moved)' in fig.axes[0].get_title()
    assert 'in 32 sectors (1024 bytes moved)' in fig.axes[1].get_title()


def test_the_traffic_table():
    counters = {'gpu__time_duration.sum': 2.5e6, 'l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum': 1e9,
                'lts__t_sectors_srcunit_tex_op_read.sum': 1e8, 'dram__bytes_read.sum': 1.05e7,
                'smsp__inst_executed.sum': 3e8, 'sm__sass_thread_inst_executed_op_ffma_pred_on.sum': 3.2e9}
    assert set(counters) == set(TRAFFIC_COUNTERS)
    t = traffic(counters, 53.7e9)
    assert t == pytest.approx((53.7, 32.0, 3.2, 0.0105, 2.5, 3.0))
    head, line = traffic_table({'naive': t})
    assert line.split()[:3] == ['naive', '53.70', 'GB'] and line.split()[-1] == '3.00'


def test_tile_load_sectors_counts_each_loads_sectors():
    "B's tile of notebook 10 (rows of 128 floats, a warp a row): side by side, each float load spans the whole row."
    assert tile_load_sectors(128, 4096, 'side by side') == [16, 16, 16, 16]     # 4 floats apart: 512 bytes each
    assert tile_load_sectors(128, 4096, 'spread') == [4, 4, 4, 4]               # 32 neighbours: 128 bytes each
    # a row that does not start on a sector: one sector more, not four times as many
    assert tile_load_sectors(128, 4095, 'spread', first_column=3) == [5, 5, 5, 5]
    assert tile_load_sectors(128, 4095, 'side by side', first_column=3) == [16, 17, 17, 17]
    # rows of 16 floats (A's tile, BK = 16): side by side and spread, 4 threads a row, a warp 8 rows; down, 16 threads
    # a row, a warp 2 rows per load, 8 rows in its 4 loads
    assert sum(tile_load_sectors(16, 4096, 'side by side')) == 4 * 8 * 2
    assert sum(tile_load_sectors(16, 4096, 'spread')) == 4 * 8
    assert tile_load_sectors(16, 4096, 'down') == [4, 4, 4, 4]                  # 2 rows of 64 bytes: 2 sectors each
    # on unaligned rows, down touches each row's sectors once: the fewest there are (spread: 44, side by side: 80)
    starts = [row * 4095 + 3 for row in range(8)]
    assert sum(tile_load_sectors(16, 4095, 'down', first_column=3)) == sum((s + 15) // 8 - s // 8 + 1 for s in starts) == 23
    # the second warp reads the next rows: the same counts at another place
    for layout in ('spread', 'down'):
        assert tile_load_sectors(64, 1000, layout, warp=1) == tile_load_sectors(64, 1000, layout, warp=0)


def test_tile_load_sectors_rejects_impossible_tiles():
    with pytest.raises(ValueError, match='multiple of 4'): tile_load_sectors(6, 100, 'spread')
    with pytest.raises(ValueError, match='does not fit'): tile_load_sectors(128, 100, 'spread')
    with pytest.raises(ValueError, match='layout'): tile_load_sectors(128, 4096, True)


def test_tile_load_accesses_are_what_the_counts_and_the_picture_read():
    side, spread = (tile_load_accesses(128, 4095, layout, first_column=3) for layout in ('side by side', 'spread'))
    assert [a.nth for a in side] == [1, 2, 3, 4] and all(len(a.lanes) == 32 for a in side + spread)
    assert side[1].indices == [3 + 4 * j + 1 for j in range(32)]          # thread j's second float, side by side
    assert spread[1].indices == [3 + 32 + j for j in range(32)]           # 32 neighbours
    assert not side[1].coalesced and spread[1].coalesced
    down = tile_load_accesses(16, 4095, 'down', first_column=3)
    assert down[1].indices == [(1 if j < 16 else 5) * 4095 + 3 + j % 16 for j in range(32)]   # rows 1 and 5, 16 floats each
    fig = draw_coalescing([side[1], spread[1]], titles=['side by side', 'spread'])
    titles = [ax.get_title() for ax in fig.axes]
    assert '17 sectors' in titles[0] and '5 sectors' in titles[1]
    plt.close(fig)
