"""The Numba kernels of notebook 08, from its `#| export` cells: on the simulator where there is no
GPU (as in CI), on the GPU otherwise."""
import functools

import pytest
import torch

from utils import import_notebook

nb08 = import_notebook('08')
DEVICE = nb08.DEVICE
KERNELS = {'dynamic (lecture)': nb08.matmul_numba_dyn, 'static': nb08.matmul_numba_static,
           'static fastmath': functools.partial(nb08.matmul_numba_static, fastmath=True)}


def test_simulator_is_on_exactly_when_there_is_no_gpu():
    assert nb08.SIMULATOR == (not torch.cuda.is_available())


@pytest.mark.parametrize('name', KERNELS)
@pytest.mark.parametrize('h,k,w,tw', [(5, 7, 3, 4), (33, 64, 31, 16), (1, 37, 5, 8), (6, 37, 1, 8), (1, 9, 1, 4)])
def test_numba_kernels_match_torch(name, h, k, w, tw):
    m, n = torch.randn(h, k, device=DEVICE), torch.randn(k, w, device=DEVICE)
    torch.testing.assert_close(KERNELS[name](m, n, tw=tw), (m.double() @ n.double()).float(), rtol=1e-4, atol=1e-4)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="the lecture-size problem needs a GPU (the simulator would take hours)")
@pytest.mark.parametrize('name', KERNELS)
def test_numba_kernels_on_the_lecture_problem(name):
    torch.backends.cuda.matmul.allow_tf32 = False
    m, n = torch.rand(5120, 256, device='cuda'), torch.rand(256, 5120, device='cuda')
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
