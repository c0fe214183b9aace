"""The Numba kernels of notebooks 08 and 09, from their `#| export` cells: on the simulator where there
is no GPU (as in CI), on the GPU otherwise."""
import functools

import pytest
import torch

from course.disassembly import loop_cost

from utils import LECTURE_SHAPE, SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS, import_notebook

nb08, nb09 = import_notebook('08'), import_notebook('09')
numba = nb08.numba
DEVICE = nb08.DEVICE
KERNELS = {'dynamic (lecture)': nb08.matmul_numba_dyn, 'static': nb08.matmul_numba_static,
           'static fastmath': functools.partial(nb08.matmul_numba_static, fastmath=True),
           'static unsigned indices': nb09.matmul_numba_unsigned,
           'dynamic uint32 + while': nb09.matmul_numba_dyn_tuned,
           **{f'dynamic {name}': nb09.dynamic_variant(**sw) for name, sw in nb09.DYNAMIC_VARIANTS.items()}}
SHAPES = [(*shape, tw) for shape, tw in SMALL_AWKWARD_SHAPES_AND_TILE_WIDTHS]


def test_simulator_is_on_exactly_when_there_is_no_gpu():
    assert nb08.SIMULATOR == (not torch.cuda.is_available())


@pytest.mark.parametrize('name', KERNELS)
@pytest.mark.parametrize('h,k,w,tw', SHAPES)
def test_numba_kernels_match_torch(name, h, k, w, tw):
    m, n = torch.randn(h, k, device=DEVICE), torch.randn(k, w, device=DEVICE)
    torch.testing.assert_close(KERNELS[name](m, n, tw=tw), (m.double() @ n.double()).float(), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the lecture-size problem needs a GPU (the simulator would take hours)")
@pytest.mark.parametrize('name', KERNELS)
def test_numba_kernels_on_the_lecture_problem(name):
    torch.backends.cuda.matmul.allow_tf32 = False
    h, k, w = LECTURE_SHAPE
    m, n = torch.rand(h, k, device='cuda'), torch.rand(k, w, device='cuda')
    torch.testing.assert_close(KERNELS[name](m, n), m @ n, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize('name', KERNELS)
def test_numba_wrappers_reject_bad_input(name):
    f = KERNELS[name]
    good = torch.rand(4, 4, device=DEVICE)
    cases = [((good.t(), good), ValueError), ((good.double(), good), TypeError),
             ((torch.rand(4, 3, device=DEVICE), good), ValueError), ((torch.rand(0, 4, device=DEVICE), good), ValueError)]
    if DEVICE == 'cuda': cases.append(((torch.rand(4, 4), good), ValueError))  # a CPU tensor
    for args, err in cases:
        with pytest.raises(err):
            f(*args)


@pytest.mark.parametrize('name', KERNELS)
def test_numba_wrappers_check_the_tile_width_and_take_tensors_that_require_grad(name):
    f = KERNELS[name]
    m, n = torch.rand(5, 7, device=DEVICE), torch.rand(7, 3, device=DEVICE)
    for tw in (0, 33):
        with pytest.raises(ValueError, match='tile width'):
            f(m, n, tw=tw)
    torch.testing.assert_close(f(m.requires_grad_(), n, tw=4), (m @ n).detach(), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="a matrix this tall needs a GPU")
@pytest.mark.parametrize('name', ['dynamic (lecture)', 'static'])
def test_numba_rows_beyond_the_grid_limit_take_several_launches(name):
    m, n = torch.rand(65535 * 16 + 3, 3, device='cuda'), torch.rand(3, 5, device='cuda')
    torch.testing.assert_close(KERNELS[name](m, n), m @ n, rtol=1e-4, atol=1e-4)


def test_kernel_factories_compile_once_per_configuration():
    "However its arguments are passed, one configuration gives one kernel object, compiled once."
    assert nb08.static_numba_kernel(8) is nb08.static_numba_kernel(8, numba.int64, False)
    assert nb08.static_numba_kernel(8, index=numba.uint64) is nb08.static_numba_kernel(8, numba.uint64)
    assert nb08.static_numba_kernel(8) is not nb08.static_numba_kernel(8, numba.uint64)
    assert nb09.dynamic_numba_kernel(numba.uint32, while_loop=True) is nb09.dynamic_numba_kernel(numba.uint32, True)


gpu_only = pytest.mark.skipif(not torch.cuda.is_available(), reason="reads the PTX compiled for the GPU")


@gpu_only
def test_unsigned_indices_remove_the_negative_index_fix_up():
    "The evidence notebook 09 shows: signed indices get a sign test (shr.s64 by 63) in the PTX, unsigned ones none."
    m = torch.rand(40, 24, device='cuda')
    ptx = {}
    for index in (numba.int64, numba.uint64):
        nb08.matmul_numba_static(m, m.t().contiguous(), index=index)
        ptx[index] = nb09.ptx_of(nb08.static_numba_kernel(16, index))
    assert ', 63;' in ptx[numba.int64] and 'shr.s64' in ptx[numba.int64]
    assert 'shr.s64' not in ptx[numba.uint64]
    assert ptx[numba.int64].count('fma.rn') == ptx[numba.uint64].count('fma.rn') == 16


@gpu_only
def test_unsigned_while_loop_makes_the_inner_loop_as_short_as_cuda_c():
    "Notebook 09's finding: the lecture's loop costs over 15 PTX instructions per fma; unsigned + while, under 8."
    m = torch.rand(40, 24, device='cuda')
    nb08.matmul_numba_dyn(m, m.t().contiguous())
    nb09.matmul_numba_dyn_tuned(m, m.t().contiguous())
    assert loop_cost(nb09.ptx_of(nb08.matmul_dyn_numba_k)) > 15
    assert loop_cost(nb09.ptx_of(nb09.dynamic_numba_kernel(numba.uint32, while_loop=True))) < 8


@pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA graphs need a GPU")
def test_graphed_numba_call_replays_on_new_inputs():
    m, n = torch.rand(70, 33, device='cuda'), torch.rand(33, 45, device='cuda')
    replay, out = nb09.graphed(nb09.matmul_numba_unsigned, m, n)
    m.copy_(torch.rand_like(m)); n.copy_(torch.rand_like(n))
    replay()
    torch.testing.assert_close(out, (m.double() @ n.double()).float(), rtol=1e-4, atol=1e-4)
