"""Property-based tests of every matmul wrapper of the course, with hypothesis.

Each draw is a random problem: shapes from 1 up to a size that suits where the kernel runs (Python
kernels and Numba's simulator on the CPU, a few hundred on a GPU), a tile width near the ones the course
uses (+-1 included) or an invalid one, and inputs that are right or wrong in one way (dtype, layout,
sizes, empty, device) or that require grad. Every draw must give torch's answer, or a ValueError or
TypeError with a message: never a crash, a hang, another exception or a silently wrong result."""
import functools, numbers

import pytest
import torch
from hypothesis import HealthCheck, given, settings, strategies as st

from utils import import_notebook, max_tile_width

HAS_GPU = torch.cuda.is_available()
DEVICE = 'cuda' if HAS_GPU else 'cpu'
SETTINGS = settings(max_examples=25 if HAS_GPU else 12, deadline=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


class Wrapper:
    "A wrapper of the course, how it takes its tile width, and how large a problem suits it."
    def __init__(self, fn, device, side, tw=None, tile_widths=None, max_tw=None):
        self.fn, self.device, self.side, self.tw = fn, device, side, tw
        self.tile_widths, self.max_tw = tile_widths, max_tw   # compiled-in widths; the largest valid tw to draw

    def call(self, m, n, tw):
        if self.tw == 'positional': return self.fn(m, n, tw)
        return self.fn(m, n, tw=tw) if self.tw else self.fn(m, n)


def cpu_wrappers():
    nb = {n: import_notebook(n) for n in ('01', '02', '03', '04', '08', '09')}
    out = {'01 Python naive': Wrapper(nb['01'].matmul_2d, 'cpu', 10)}
    out |= {f'{n} Python tiled': Wrapper(nb[n].matmul_2d, 'cpu', 14, tw='kw', max_tw=9) for n in ('02', '03', '04')}
    if not HAS_GPU: out |= numba_wrappers(nb['08'], nb['09'], side=12, max_tw=9)
    return out


def numba_wrappers(nb08, nb09, side, max_tw=None):
    return {'08 Numba dynamic': Wrapper(nb08.matmul_numba_dyn, DEVICE, side, tw='kw', max_tw=max_tw),
            '08 Numba static': Wrapper(nb08.matmul_numba_static, DEVICE, side, tw='kw', max_tw=max_tw),
            '09 Numba dynamic, uint32 + while': Wrapper(nb09.matmul_numba_dyn_tuned, DEVICE, side, tw='kw', max_tw=max_tw),
            '09 Numba static, unsigned': Wrapper(nb09.matmul_numba_unsigned, DEVICE, side, tw='kw', max_tw=max_tw)}


def gpu_wrappers():
    from utils import load_cuda
    nb = {n: import_notebook(n) for n in ('01', '05', '06', '07', '08', '09')}
    naive = load_cuda(nb['01'].naive_cuda_src, nb['01'].naive_cpp_src, nb['01'].naive_funcs)
    lecture = load_cuda(nb['05'].lecture_dyn_cuda_src, nb['05'].lecture_dyn_cpp_src, nb['05'].lecture_dyn_funcs)
    return {'01 CUDA C naive (load_cuda)': Wrapper(naive.matmul, 'cuda', 300),
            '05 CUDA C dynamic (load_cuda)': Wrapper(lecture.matmul_dyn_torch, 'cuda', 300, tw='positional'),
            '05 CUDA C dynamic': Wrapper(nb['05'].matmul_dyn, 'cuda', 300, tw='kw'),
            '06 CUDA C static': Wrapper(nb['06'].matmul_static, 'cuda', 300),
            '07 CUDA C template': Wrapper(nb['07'].matmul_tmpl, 'cuda', 300, tw='kw', tile_widths=nb['07'].TILE_WIDTHS),
            **numba_wrappers(nb['08'], nb['09'], side=300)}


WRAPPERS = cpu_wrappers() | (gpu_wrappers() if HAS_GPU else {})
INPUT_KINDS = ['right', 'right', 'right', 'requires grad', 'float64', 'not contiguous', 'sizes mismatch', 'empty',
               'on the wrong device']
BAD_TILE_WIDTHS = [0, -1, max_tile_width() + 1, 64, 16.0, '8', None]


def tile_widths(w):
    valid_max = w.max_tw or max_tile_width()
    near = sorted({t + d for t in (4, 8, 16, 32) for d in (-1, 0, 1) if 1 <= t + d <= valid_max} | {1, valid_max})
    return st.one_of(st.sampled_from(near), st.integers(1, valid_max), st.sampled_from(BAD_TILE_WIDTHS))


def tile_width_ok(w, tw):
    if isinstance(tw, bool) or not isinstance(tw, numbers.Integral): return False
    if w.tile_widths is not None: return tw in w.tile_widths
    return 1 <= tw <= max_tile_width()


def make_inputs(kind, h, k, w, device):
    other = 'cpu' if device == 'cuda' else 'cuda'
    m, n = torch.rand(h, k, device=device), torch.rand(k, w, device=device)
    if kind == 'requires grad': m.requires_grad_()
    elif kind == 'float64': m = m.double()
    elif kind == 'not contiguous': m = torch.rand(k, h, device=device).t()
    elif kind == 'sizes mismatch': n = torch.rand(k + 1, w, device=device)
    elif kind == 'empty': m = torch.rand(0, k, device=device)
    elif kind == 'on the wrong device': m = m.to(other)
    return m, n


@pytest.mark.parametrize('name', WRAPPERS)
def test_every_draw_is_right_or_a_clear_error(name):
    w = WRAPPERS[name]
    kinds = [k for k in INPUT_KINDS if k != 'on the wrong device' or HAS_GPU]   # no second device without a GPU

    @SETTINGS
    @given(h=st.integers(1, w.side), k=st.integers(1, w.side), n_cols=st.integers(1, w.side),
           tw=tile_widths(w) if w.tw else st.just(None), kind=st.sampled_from(kinds))
    def check(h, k, n_cols, tw, kind):
        m, n = make_inputs(kind, h, k, n_cols, w.device)
        # judged on the tensors themselves: a transposed 1 x K matrix, say, is still contiguous
        inputs_ok = (m.dtype == torch.float32 and m.is_contiguous() and m.numel() > 0 and m.shape[1] == n.shape[0]
                     and m.device.type == w.device)
        valid = inputs_ok and (not w.tw or tile_width_ok(w, tw))
        if valid:
            out = w.call(m, n, tw)
            torch.testing.assert_close(out.detach(), (m.detach().double() @ n.double()).float(), rtol=1e-4, atol=1e-4)
        else:
            with pytest.raises((ValueError, TypeError)) as e:
                w.call(m, n, tw)
            assert str(e.value).strip(), "an error without a message"
        if HAS_GPU: torch.cuda.synchronize()   # nothing went wrong on the GPU either

    check()
