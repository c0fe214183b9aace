"""The shared-memory bank model (course/shared_banks.py), its drawing, and notebook 06's transpose through a
shared tile, unpadded and padded. The drawing is checked by what it marks; the transpose compiles where nvcc
is, and on a GPU it must equal m.t() on awkward shapes and refuse bad input."""
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

import utils  # noqa: E402
from conftest import gpu  # noqa: E402
from course import shared_banks  # noqa: E402
from course.exercises import banks as exercise_banks  # noqa: E402
from course.shared_banks import (BANKS, CONFLICT_COLOUR, IDLE_COLOUR, ONE_WORD_COLOUR, bank_map, bank_of,  # noqa: E402
                                 column_ways, conflict_ways, draw_bank_map, passes, transpose_tile_words, warp_threads)

nvcc_needed = pytest.mark.skipif(not utils.nvcc_available(), reason="needs nvcc (the CUDA compiler), not found here")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close('all')


@pytest.fixture(scope='module')
def nb06():
    return utils.import_notebook('06')


# --------------------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize('stride,expected', [(1, 1), (2, 2), (4, 4), (16, 16), (32, 32), (33, 1), (31, 1), (64, 32), (3, 1)])
def test_a_warp_reading_words_stride_apart(stride, expected):
    "Word i*stride for lane i: the passes are how many of the 32 lanes land in one bank (32 / gcd(stride, 32))."
    assert passes([lane * stride for lane in range(32)]) == expected


def test_a_broadcast_is_not_a_conflict():
    assert passes([5] * 32) == 1
    assert passes([0] * 16 + [32] * 16) == 2                 # two different words of bank 0, each read by 16 lanes
    assert passes([lane % 16 for lane in range(32)]) == 1     # 16 words, each shared by two lanes


def test_conflict_ways_names_the_first_worst_bank_and_its_words():
    assert bank_of(0) == bank_of(32) == 0 and bank_of(33) == 1 and bank_of(31) == 31
    assert conflict_ways([1, 33, 65, 2, 34, 3]) == (3, 1, [1, 33, 65])
    assert conflict_ways([0, 32, 1, 33]) == (2, 0, [0, 32])   # two banks of two words: the first one
    assert column_ways(32, 32) == (32, 0, list(range(0, 1024, 32)))
    assert column_ways(32, 33)[0] == 1 and column_ways(8, 32)[0] == 8


def test_the_exercise_checker_uses_the_same_model():
    "One source of truth: course/exercises/banks.py takes the model from course/shared_banks.py."
    assert exercise_banks.conflict_ways is shared_banks.conflict_ways
    assert exercise_banks.column_ways is shared_banks.column_ways
    assert exercise_banks.WARP_SIZE == shared_banks.WARP_SIZE == 32


def test_warp_threads_count_x_fastest():
    assert warp_threads(32, 3) == [(x, 3) for x in range(32)]
    assert warp_threads(16) == [(x, 0) for x in range(16)] + [(x, 1) for x in range(16)]
    assert warp_threads(16, 1)[0] == (0, 2) and warp_threads(8, 1)[-1] == (7, 7)


@pytest.mark.parametrize('row_floats', [32, 33])
def test_transpose_tile_words_store_each_element_once_and_read_it_transposed(row_floats):
    warps = [transpose_tile_words(row_floats, warp) for warp in range(32)]
    stored = [w for ws in warps for w in ws['write a row of the tile']]
    read = [w for ws in warps for w in ws['read a column of the tile']]
    assert len(set(stored)) == 32 * 32 and sorted(stored) == sorted(read)
    # thread (tx, ty) of warp ty stores element (ty, tx) and reads element (tx, ty)
    assert warps[3]['write a row of the tile'][5] == 3 * row_floats + 5
    assert warps[3]['read a column of the tile'][5] == 5 * row_floats + 3


def test_padding_removes_the_transposes_conflict():
    for warp in range(32):
        unpadded, padded = transpose_tile_words(32, warp), transpose_tile_words(33, warp)
        assert passes(unpadded['write a row of the tile']) == 1 and passes(unpadded['read a column of the tile']) == 32
        assert passes(padded['write a row of the tile']) == 1 and passes(padded['read a column of the tile']) == 1


def test_bank_map():
    unpadded = bank_map([32 * lane for lane in range(32)])
    assert unpadded['passes'] == 32 and unpadded['crowded'] == [0] and unpadded['idle'] == list(range(1, 32))
    assert unpadded['words'] == {0: list(range(0, 1024, 32))} and set(unpadded['bank']) == {0}
    padded = bank_map([33 * lane for lane in range(32)])
    assert padded['passes'] == 1 and padded['crowded'] == [] and padded['idle'] == [] and padded['bank'] == list(range(32))
    even = bank_map([2 * lane for lane in range(32)])
    assert even['passes'] == 2 and even['crowded'] == list(range(0, 32, 2)) and even['idle'] == list(range(1, 32, 2))


# --------------------------------------------------------------------------------------------------
# The drawing, by what it marks
# --------------------------------------------------------------------------------------------------

def bank_colours(ax):
    "{bank: its box's colour} of one panel of draw_bank_map, read from the boxes' gids."
    return {int(p.get_gid().split()[1]): p.get_facecolor() for p in ax.patches if (p.get_gid() or '').startswith('bank ')}


def test_draw_bank_map_marks_the_crowded_bank_and_counts_passes():
    fig = draw_bank_map(row_floats=(32, 33))
    unpadded, padded = fig.axes
    assert '32 passes' in unpadded.get_title() and 'bank 0 serves 32 different words' in unpadded.get_title()
    assert '1 pass:' in padded.get_title() and 'rows of 33 floats' in padded.get_title()
    colours = bank_colours(unpadded)
    assert sorted(colours) == list(range(BANKS))
    assert colours[0] == to_rgba(CONFLICT_COLOUR)
    assert all(colours[b] == to_rgba(IDLE_COLOUR) for b in range(1, BANKS))
    assert all(c == to_rgba(ONE_WORD_COLOUR) for c in bank_colours(padded).values())
    # the lines from the words to the banks: 32 red ones converge on bank 0 unpadded, 32 green level ones padded
    word_to_bank = lambda ax: [l for l in ax.lines if tuple(l.get_xdata()) == (1.35, 2.65)]
    assert [tuple(l.get_ydata()) for l in word_to_bank(unpadded)] == [(lane, 0) for lane in range(32)]
    assert all(to_rgba(l.get_color()) == to_rgba(CONFLICT_COLOUR) for l in word_to_bank(unpadded))
    assert [tuple(l.get_ydata()) for l in word_to_bank(padded)] == [(lane, lane) for lane in range(32)]
    # the words each lane reads are written in its box
    assert [t.get_text() for t in unpadded.texts if t.get_position()[0] == 1][:3] == ['0', '32', '64']


def test_draw_bank_map_other_columns_and_strides():
    fig = draw_bank_map(row_floats=(16,), column=5)
    ax, = fig.axes
    colours = bank_colours(ax)
    crowded = [b for b, c in colours.items() if c == to_rgba(CONFLICT_COLOUR)]
    assert crowded == [5, 21] and '16 passes' in ax.get_title() and 'tile[i][5]' in ax.get_title()
    assert sum(c == to_rgba(IDLE_COLOUR) for c in colours.values()) == 30


def test_draw_bank_map_legend_is_outside_the_panels():
    fig = draw_bank_map()
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
    fig.canvas.draw()
    legend_box = fig.legends[0].get_window_extent()
    assert all(legend_box.y1 <= ax.get_window_extent().y0 + 1 for ax in fig.axes)
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert len(labels) == 4 and len({CONFLICT_COLOUR, ONE_WORD_COLOUR, IDLE_COLOUR}) == 3


# --------------------------------------------------------------------------------------------------
# Notebook 06's transpose
# --------------------------------------------------------------------------------------------------

@nvcc_needed
def test_transpose_compiles_both_tiles(nb06):
    mod = utils.compile_cuda(nb06.transpose_cuda_src, arch='sm_90')
    assert set(mod.functions) == {'transpose'}
    listing = utils.cuda_disassembly(nb06.transpose_cuda_src, arch='sm_90')
    for row_floats in (32, 33):
        assert utils.kernel_listing(listing, f'transpose_kILi{row_floats}E'), f"no code for transpose_k<{row_floats}>"


def test_transpose_refuses_bad_input_before_the_gpu(nb06):
    for bad, error in [([[1.0]], TypeError), (torch.rand(4), ValueError), (torch.rand(4, 4).double(), TypeError),
                       (torch.rand(4, 4), ValueError)]:
        with pytest.raises(error) as e:
            nb06.transpose(bad)
        assert str(e.value).strip()


@gpu
@pytest.mark.parametrize('padded', [False, True])
@pytest.mark.parametrize('h,w', [(1, 1), (33, 17), (1, 70), (70, 1), (31, 33), (1000, 700), (2048, 64)])
def test_transpose_equals_torch(nb06, h, w, padded):
    m = torch.rand(h, w, device='cuda')
    assert torch.equal(nb06.transpose(m, padded), m.t())


@gpu
def test_transpose_refuses_bad_cuda_input(nb06):
    good = torch.rand(8, 8, device='cuda')
    for bad in (good.t(), good[:0], good.double(), good[0]):
        with pytest.raises((ValueError, TypeError)):
            nb06.transpose(bad)
    too_tall = torch.empty(65535 * 32 + 1, 1, device='cuda')
    with pytest.raises(ValueError, match='blocks in y'):
        nb06.transpose(too_tall)
