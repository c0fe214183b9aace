"""The CUDA C kernels of notebooks 01 and 05-07, taken from the notebooks' `#| export` cells.

Where nvcc exists (CI has it, without a GPU) every fast-path source is compiled, which checks it.
On a GPU each kernel is checked against torch on the lecture problem and awkward shapes, and each
wrapper must reject bad input with a clear error."""
import functools

import pytest
import torch

import utils
from conftest import assert_matches_torch, gpu
from course.correctness import bad_matmul_inputs
from utils import LECTURE_AND_AWKWARD_SHAPES, import_notebook

NB = {name: import_notebook(name) for name in ('01', '05', '06', '07')}
SOURCES = {'05': NB['05'].dyn_cuda_src, '06': NB['06'].static_cuda_src, '07': NB['07'].tmpl_cuda_src}
nvcc_needed = pytest.mark.skipif(not utils.nvcc_available(), reason="needs nvcc (the CUDA compiler), not found here")


@nvcc_needed
@pytest.mark.parametrize('nb', sorted(SOURCES))
def test_fast_path_sources_compile(nb):
    mod = utils.compile_cuda(SOURCES[nb], arch='sm_90')
    assert set(mod.functions) >= {'05': {'matmul_dyn', 'largest_tile_width'}, '06': {'matmul_static'},
                                  '07': {'matmul_tmpl'}}[nb]


@nvcc_needed
def test_template_instantiations_are_all_compiled():
    kind, text = utils.cuda_disassembly(SOURCES['07'], arch='sm_90')
    for tw in (8, 16, 32):
        assert utils.kernel_listing((kind, text), f'matmul_tmpl_kILi{tw}E'), f"no code for matmul_tmpl_k<{tw}>"


@nvcc_needed
def test_constant_tile_width_unrolls_the_inner_loop():
    "The evidence of notebook 07: for tw=16 the inner loop is unrolled, with fewer branches and loads per FMA."
    nb07 = NB['07']
    dyn = utils.cuda_disassembly(SOURCES['05'], arch='sm_90')
    tmpl = utils.cuda_disassembly(SOURCES['07'], arch='sm_90')
    c_dyn = nb07.opcode_counts(dyn[0], utils.kernel_listing(dyn, 'matmul_dyn_k'))
    c_tmpl = nb07.opcode_counts(tmpl[0], utils.kernel_listing(tmpl, 'matmul_tmpl_kILi16E'))
    assert c_tmpl['fused multiply-add'] >= 16       # the whole tw=16 loop, unrolled
    assert c_tmpl['branch'] < c_dyn['branch']       # no loop left to branch back in
    loads = {name: c['shared-memory load, 32-bit'] + c['shared-memory load, 128-bit'] for name, c in (('dyn', c_dyn), ('tmpl', c_tmpl))}
    assert loads['tmpl'] / c_tmpl['fused multiply-add'] < loads['dyn'] / c_dyn['fused multiply-add']
    # what notebook 07 explains: the 16 reads of a row of ms become four 128-bit loads; the runtime-tw kernel has none
    assert c_tmpl['shared-memory load, 128-bit'] == 4 and c_dyn['shared-memory load, 128-bit'] == 0


@nvcc_needed
def test_cuda_c_inner_loop_is_short():
    "The yardstick of notebook 09: the runtime-tw CUDA C loop costs under 8 PTX instructions per fma."
    from course.disassembly import cuda_ptx, loop_cost
    assert loop_cost(cuda_ptx(SOURCES['05'], arch='sm_90')) < 8


def gpu_wrappers():
    return {'01 naive (load_cuda)': lambda m, n: naive_module().matmul(m, n),
            '05 dynamic (load_cuda)': lambda m, n: lecture_dyn_module().matmul_dyn_torch(m, n, 16),
            '05 dynamic': NB['05'].matmul_dyn, '06 static': NB['06'].matmul_static,
            '07 template tw=8': lambda m, n: NB['07'].matmul_tmpl(m, n, tw=8),
            '07 template tw=16': NB['07'].matmul_tmpl,
            '07 template tw=32': lambda m, n: NB['07'].matmul_tmpl(m, n, tw=32)}


@functools.cache
def naive_module():
    nb = NB['01']
    return utils.load_cuda(nb.naive_cuda_src, nb.naive_cpp_src, nb.naive_funcs)


@functools.cache
def lecture_dyn_module():
    nb = NB['05']
    return utils.load_cuda(nb.lecture_dyn_cuda_src, nb.lecture_dyn_cpp_src, nb.lecture_dyn_funcs)


SHAPES = list(LECTURE_AND_AWKWARD_SHAPES) + [(1, 1, 1)]
WRAPPERS = ['01 naive (load_cuda)', '05 dynamic (load_cuda)', '05 dynamic', '06 static', '07 template tw=8', '07 template tw=16', '07 template tw=32']


@gpu
@pytest.mark.parametrize('name', WRAPPERS)
@pytest.mark.parametrize('shape', SHAPES, ids=[f'{h}x{k}@{k}x{w}' for h, k, w in SHAPES])
def test_kernels_match_torch(name, shape):
    assert_matches_torch(gpu_wrappers()[name], *shape)


@gpu
@pytest.mark.parametrize('name', WRAPPERS)
def test_wrappers_reject_bad_input(name):
    f = gpu_wrappers()[name]
    for what, args in bad_matmul_inputs().items():
        with pytest.raises((ValueError, TypeError, RuntimeError)) as e:
            f(*args)
        assert len(str(e.value).splitlines()[0]) < 200, what
    torch.cuda.synchronize()  # nothing was launched wrongly: the context is healthy


@gpu
def test_template_rejects_an_uncompiled_tile_width():
    with pytest.raises(ValueError, match='not compiled in'):
        NB['07'].matmul_tmpl(torch.rand(8, 8, device='cuda'), torch.rand(8, 8, device='cuda'), tw=12)


TILED = {'05 dynamic': NB['05'].matmul_dyn, '07 template': NB['07'].matmul_tmpl}


@gpu
@pytest.mark.parametrize('name', TILED)
@pytest.mark.parametrize('tw', [0, -1, 33, 64, 16.0])
def test_bad_tile_widths_are_refused_before_launch(name, tw):
    "tw=0 used to divide by zero in the launcher and kill the process."
    with pytest.raises((ValueError, TypeError), match='tile width'):
        TILED[name](torch.rand(8, 8, device='cuda'), torch.rand(8, 8, device='cuda'), tw=tw)
    torch.cuda.synchronize()


TALL = 65535 * 16 + 3   # one row more than a grid of 16-row blocks can cover, and then some


@gpu
@pytest.mark.parametrize('name', ['05 dynamic', '06 static', '07 template tw=8', '07 template tw=16'])
def test_rows_beyond_the_grid_limit_take_several_launches(name):
    m, n = torch.rand(TALL, 3, device='cuda'), torch.rand(3, 5, device='cuda')
    torch.testing.assert_close(gpu_wrappers()[name](m, n), m @ n, rtol=1e-4, atol=1e-4)


@gpu
@pytest.mark.parametrize('name', ['01 naive (load_cuda)', '05 dynamic (load_cuda)'])
def test_lecture_wrappers_refuse_a_grid_they_cannot_launch(name):
    with pytest.raises(ValueError, match='too many rows'):
        gpu_wrappers()[name](torch.rand(TALL, 3, device='cuda'), torch.rand(3, 5, device='cuda'))
    torch.cuda.synchronize()


@gpu
def test_static_tile_width_matches_its_source():
    assert f"constexpr int tw = {NB['06'].TILE_WIDTH};" in NB['06'].static_cuda_src


@gpu
def test_largest_tile_width_fits_the_device():
    tw = NB['05'].dyn_module().largest_tile_width(0)
    p = torch.cuda.get_device_properties(0)
    assert tw * tw <= p.max_threads_per_block < (tw + 1) ** 2 or 2 * (tw + 1) ** 2 * 4 > p.shared_memory_per_block
