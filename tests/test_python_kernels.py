"""The pure-Python kernels of notebooks 01-04, imported from the notebooks themselves (their
`#| export` cells), checked against torch on the lecture sample and on awkward shapes."""
import time

import pytest
import torch

from utils import SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS, dim3, import_notebook

NB = {name: import_notebook(name) for name in ('01', '02', '03', '04')}

SHAPES = list(SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS)   # ((h, k, w), tw): not multiples of tw, 1 x K, K x 1


def lecture_sample():
    g = torch.Generator().manual_seed(42)
    m1, m2 = torch.rand(5120, 256, generator=g), torch.rand(256, 5120, generator=g)
    return m1[:4], m2[:, :4].contiguous()


def check(fn, h, k, w, **kw):
    m, n = torch.rand(h, k), torch.rand(k, w)
    torch.testing.assert_close(fn(m, n, **kw), m @ n, rtol=1e-5, atol=1e-5)


def test_naive_python_kernel():
    check(NB['01'].matmul_2d, 4, 256, 4)
    for (h, k, w), _ in SHAPES[:1] + SHAPES[2:]: check(NB['01'].matmul_2d, h, k, w)


@pytest.mark.parametrize('nb', ['02', '03', '04'])
def test_tiled_kernels_on_the_lecture_sample(nb):
    m, n = lecture_sample()
    torch.testing.assert_close(NB[nb].matmul_2d(m, n, tw=8 if nb == '04' else 16), m @ n, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize('nb', ['02', '03', '04'])
@pytest.mark.parametrize('shape,tw', SHAPES, ids=[f'{h}x{k}@{k}x{w}-tw{tw}' for (h, k, w), tw in SHAPES])
def test_tiled_kernels_on_awkward_shapes(nb, shape, tw):
    check(NB[nb].matmul_2d, *shape, tw=tw)


@pytest.mark.parametrize('nb', ['01', '02', '03', '04'])
def test_bad_input_is_rejected(nb):
    f = NB[nb].matmul_2d
    with pytest.raises(ValueError, match='size mismatch'): f(torch.rand(3, 4), torch.rand(5, 3))
    with pytest.raises(TypeError, match='float32'): f(torch.rand(3, 4).double(), torch.rand(4, 3))
    with pytest.raises(ValueError, match='empty'): f(torch.rand(0, 4), torch.rand(4, 3))
    with pytest.raises(ValueError, match='contiguous'): f(torch.rand(4, 3).t(), torch.rand(4, 3))


def test_lecture_guard_writes_into_other_threads_elements():
    nb = NB['02']
    assert nb.foreign_writes(nb.inside_buffer) == [((0, 7), 7), ((1, 7), 14), ((2, 7), 21), ((3, 7), 28)]
    assert nb.foreign_writes(nb.inside_matrix) == []
    m, n = torch.rand(5, 7), torch.rand(7, 7)  # right only because the stray threads add zeros
    torch.testing.assert_close(nb.matmul_2d(m, n, tw=4, guard=nb.inside_buffer), m @ n)


def test_missing_second_barrier_gives_a_wrong_answer_every_time():
    nb = NB['04']
    for _ in range(3):
        m, n = torch.rand(8, 32), torch.rand(32, 8)
        good = nb.matmul_2d(m, n, tw=8, late_thread_delay=0.05)
        torch.testing.assert_close(good, m @ n)
        bad = nb.matmul_2d(m, n, tw=8, late_thread_delay=0.05, second_barrier=False)
        assert (bad - m @ n)[0, 0].abs() > 1e-4


def test_barrier_deadlock_raises_quickly_naming_the_block():
    nb = NB['04']
    def early_return(blockIdx, threadIdx, blockDim, shared, syncb, *args):
        if threadIdx.x == 3: return
        syncb.wait()
    t0 = time.perf_counter()
    with pytest.raises(nb.BarrierDeadlock, match=r'block \(0, 0\): 12 thread\(s\) waited'):
        nb.blk_kernel2d_shar(early_return, dim3(1, 1), dim3(4, 4), 1)
    assert time.perf_counter() - t0 < 5


def test_barrier_timeout_is_the_backstop():
    nb = NB['04']
    b = nb.BlockBarrier(2, timeout=0.2)
    t0 = time.perf_counter()
    with pytest.raises(Exception):
        b.wait()  # the second party never comes and never returns
    assert time.perf_counter() - t0 < 2


def test_exception_in_a_thread_is_raised_with_block_and_thread():
    nb = NB['04']
    def faulty(blockIdx, threadIdx, blockDim, shared, syncb, *args):
        syncb.wait()
        if blockIdx.x == 1 and threadIdx.y == 2: raise IndexError('out of range')
        syncb.wait()
    with pytest.raises(RuntimeError, match=r'block \(1, 0\), thread \(\d, 2\): IndexError: out of range'):
        nb.blk_kernel2d_shar(faulty, dim3(2, 1), dim3(4, 4), 1)


def test_simple_runner_computes_the_lecture_sample():
    nb = NB['04']
    m, n = lecture_sample()
    out = NB['02'].matmul_2d(m, n, tw=8, kernel=nb.matmul_tiled_bk, runner=nb.blk_kernel2d_shar_simple)
    torch.testing.assert_close(out, m @ n, rtol=1e-5, atol=1e-5)


def test_wrong_guard_breaks_the_elements_that_blocks_run_earlier_own():
    "Notebook 04's explanation: which elements the stray stores destroy depends only on the order of the blocks."
    nb, nb02 = NB['04'], NB['02']
    m, n = torch.rand(5, 7), torch.rand(7, 7)
    def wrong(out): return ((out - m @ n).abs() > 1e-4).nonzero().tolist()
    assert wrong(nb.matmul_2d(m, n, tw=4, guard=nb02.inside_buffer)) == [[1, 0], [2, 0], [3, 0]]
    reversed_blocks = nb.blocks_in_reverse(nb.matmul_tiled_bk, dim3(2, 2))
    assert wrong(nb.matmul_2d(m, n, tw=4, guard=nb02.inside_buffer, kernel=reversed_blocks)) == [[4, 0]]
    assert wrong(nb.matmul_2d(m, n, tw=4)) == []
