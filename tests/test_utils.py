"Unit tests for utils.py, the helper module every notebook shares, and the course package behind it."
import ctypes, os, shutil, textwrap, time

import pytest
import torch

import course.cuda_toolkit
import utils
from course.cuda_library import c_type, extern_c_functions
from conftest import HAS_GPU, gpu
from utils import (CudaCompileError, CudaUnavailableError, cdiv, check_matmul_inputs, compile_cuda,
                   cuda_begin, cuda_prelude, dim3, get_sig, import_notebook, load_cuda)

HAS_NVCC = utils.nvcc_available()
nvcc_needed = pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc (the CUDA compiler), not found here")


def test_cdiv():
    assert [cdiv(a, 4) for a in (0, 1, 3, 4, 5, 8, 9)] == [0, 1, 1, 1, 2, 2, 3]
    assert cdiv(5120, 16) == 320 and cdiv(5121, 16) == 321


def test_dim3_defaults_and_fields():
    d = dim3(2, 3)
    assert (d.x, d.y, d.z) == (2, 3, 1)
    assert dim3(5) == (5, 1, 1) and dim3(1, 2, 3).z == 3


def test_cuda_begin_has_the_lecture_macros():
    for name in ['#include <ATen/core/Tensor.h>', 'namespace torch', 'CHECK_CUDA', 'CHECK_CONTIGUOUS', 'CHECK_INPUT',
                 'CUDA_ERR', 'cdiv(unsigned int a, unsigned int b)']:
        assert name in cuda_begin
    assert '#include <torch/extension.h>' not in cuda_begin  # the light headers are what makes load_cuda fast
    assert 'exit(' not in cuda_begin  # a failed CUDA call raises, it does not kill the Jupyter kernel


SRC = cuda_begin + r'''
__global__ void matmul_k(float* m, float* n, float* out, int h, int w, int k) {
    int r = blockIdx.y*blockDim.y + threadIdx.y;
}

torch::Tensor matmul(torch::Tensor m, torch::Tensor n) {
    matmul_k<<<blocks, tpb>>>(m.data_ptr<float>());
    return other_matmul(m, n);
}

template<int tw>
__global__ void tiled_k(float *m,
                        float *n, int k) {
}

torch::Tensor matmul_dyn1(torch::Tensor m,
                          torch::Tensor n)
{
    auto f = [&](auto kf) { kf<<<1, 1>>>(); };
    f(tiled_k<8>);
}
'''


def test_get_sig_single_line():
    assert get_sig('matmul', SRC) == 'torch::Tensor matmul(torch::Tensor m, torch::Tensor n);'
    assert get_sig('matmul_k', SRC) == '__global__ void matmul_k(float* m, float* n, float* out, int h, int w, int k);'


def test_get_sig_multi_line_and_brace_on_next_line():
    assert get_sig('matmul_dyn1', SRC) == 'torch::Tensor matmul_dyn1(torch::Tensor m, torch::Tensor n);'


def test_get_sig_template_keeps_its_header():
    assert get_sig('tiled_k', SRC) == 'template<int tw> __global__ void tiled_k(float *m, float *n, int k);'


def test_get_sig_absent_and_calls_are_not_definitions():
    assert get_sig('absent', SRC) is None
    assert get_sig('other_matmul', SRC) is None  # only called, never defined
    assert get_sig('atmul', SRC) is None         # a suffix of another name


def test_get_sig_matches_the_lecture_on_its_own_example():
    src = "torch::Tensor rgb_to_grayscale(torch::Tensor input) {\n  return input;\n}"
    assert get_sig('rgb_to_grayscale', src) == 'torch::Tensor rgb_to_grayscale(torch::Tensor input);'


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU-only path")
def test_load_cuda_without_gpu_fails_at_once_in_one_sentence():
    with pytest.raises(CudaUnavailableError) as e:
        load_cuda(SRC, get_sig('matmul', SRC), ['matmul'])
    msg = str(e.value)
    assert '\n' not in msg and len(msg) < 300 and ('GPU' in msg or 'CPU-only' in msg)


def test_load_cuda_without_nvcc_says_so(monkeypatch):
    monkeypatch.setattr(course.cuda_toolkit, 'nvcc_path', lambda: None)
    monkeypatch.setattr(torch.version, 'cuda', '13.0')
    monkeypatch.setattr(torch.cuda, 'is_available', lambda: True)
    with pytest.raises(CudaUnavailableError, match='nvcc'):
        load_cuda(SRC, get_sig('matmul', SRC), ['matmul'])


def test_check_matmul_inputs_accepts_and_returns_sizes():
    assert check_matmul_inputs(torch.rand(5, 7), torch.rand(7, 3), device='cpu') == (5, 7, 3)


@pytest.mark.parametrize('m,n,err,match', [
    (torch.rand(5, 7), torch.rand(6, 3), ValueError, 'size mismatch'),
    (torch.rand(5, 7).double(), torch.rand(7, 3), TypeError, 'float32'),
    (torch.rand(7, 5).t(), torch.rand(7, 3), ValueError, 'contiguous'),
    (torch.rand(0, 7), torch.rand(7, 3), ValueError, 'empty'),
    (torch.rand(5, 0), torch.rand(0, 3), ValueError, 'empty'),
    (torch.rand(5), torch.rand(5, 3), ValueError, '2-D'),
    ([[1.0]], torch.rand(1, 3), TypeError, 'torch.Tensor'),
])
def test_check_matmul_inputs_rejects(m, n, err, match):
    with pytest.raises(err, match=match):
        check_matmul_inputs(m, n, device='cpu')


def test_check_matmul_inputs_wants_the_right_device():
    with pytest.raises(ValueError, match='CUDA device'):
        check_matmul_inputs(torch.rand(2, 2), torch.rand(2, 2), device='cuda')


def test_extern_c_signatures_map_to_ctypes():
    src = cuda_prelude + r'''
extern "C" cudaError_t launch(const float* __restrict__ m, float *out, int h, size_t bytes, cudaStream_t stream) {
    return cudaSuccess;
}
extern "C" int pick(int device) { return 16; }
'''
    funcs = {name: (ret, params) for name, ret, params in extern_c_functions(src)}
    assert funcs['launch'][0] == 'cudaError_t' and len(funcs['launch'][1]) == 5
    assert [c_type(p) for p in funcs['launch'][1]] == [
        (ctypes.c_void_p, True), (ctypes.c_void_p, True), (ctypes.c_int, False), (ctypes.c_size_t, False),
        (ctypes.c_void_p, False)]
    assert funcs['pick'] == ('int', ['int device'])
    with pytest.raises(TypeError, match='cannot pass'):
        c_type('struct thing t')


@nvcc_needed
def test_compile_cuda_builds_and_caches(tmp_path, monkeypatch):
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + 'extern "C" int answer(int x) { return x + 41; }\n'
    mod = compile_cuda(src, arch='sm_90')
    assert mod.answer(1) == 42          # host code runs even without a GPU
    again = compile_cuda(src, arch='sm_90')
    assert again.path == mod.path        # same source: the cached library, no second compile
    assert len(list(tmp_path.glob('*.so'))) == 1


@nvcc_needed
def test_unchecked_function_returns_the_error_code_and_raise_if_error_names_it(tmp_path, monkeypatch):
    "The bare ctypes function returns a cudaError_t as it is; raise_if_error turns one into CudaError with CUDA's words."
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + 'extern "C" cudaError_t fails_if(int x, cudaStream_t stream) { return x ? cudaErrorInvalidValue : cudaSuccess; }\n'
    mod = compile_cuda(src, arch='sm_90')
    bare = mod.unchecked('fails_if')
    assert bare(0, None) == 0 and bare(1, None) == 1                   # cudaErrorInvalidValue is 1
    mod.raise_if_error('fails_if', 0)                                  # success: nothing raised
    with pytest.raises(utils.CudaError, match=r'fails_if: invalid argument \(CUDA error 1\)'):
        mod.raise_if_error('fails_if', bare(1, None))
    with pytest.raises(utils.CudaError, match='invalid argument'):
        mod.fails_if(1, None)                                          # the checked method raises the same way


@nvcc_needed
def test_compile_errors_are_short_and_point_at_the_line(tmp_path, monkeypatch):
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + textwrap.dedent('''
        __global__ void k(float* out) {
            out[threadIdx.x] = not_defined_anywhere;
        }
        ''')
    with pytest.raises(CudaCompileError) as e:
        compile_cuda(src, arch='sm_90')
    msg = str(e.value)
    line = src.splitlines().index('    out[threadIdx.x] = not_defined_anywhere;') + 1
    assert f'your source, line {line}' in msg and 'not_defined_anywhere' in msg
    assert len(msg.splitlines()) <= 4


def test_import_notebook_runs_only_export_cells():
    nb = import_notebook('01')
    assert callable(nb.matmul_2d) and 'matmul_k' in nb.naive_cuda_src
    assert not hasattr(nb, 'm1')  # data cells are not exported
    a, b = torch.rand(5, 7), torch.rand(7, 3)
    torch.testing.assert_close(nb.matmul_2d(a, b), a @ b)


def test_import_notebook_unknown_name():
    with pytest.raises(FileNotFoundError):
        import_notebook('99_no_such_notebook')


@gpu
def test_cuda_time_ms_measures_gpu_work():
    x = torch.rand(2048, 2048, device='cuda')
    small = utils.cuda_time_ms(torch.mm, x[:256, :256], x[:256, :256])
    big = utils.cuda_time_ms(torch.mm, x, x)
    assert 0 < small < big


@gpu
def test_cuda_time_ms_back_to_back_hides_cpu_time_before_the_kernel():
    x = torch.rand(4096, 4096, device='cuda')
    def slow_to_launch(a):
        time.sleep(0.002)          # 2 ms of CPU work before the kernel, which takes about as long
        return a @ a
    alone = utils.cuda_time_ms(slow_to_launch, x, reps=10)
    queued = utils.cuda_time_ms(slow_to_launch, x, reps=10, back_to_back=10)
    kernel = utils.cuda_time_ms(torch.mm, x, x, reps=10, back_to_back=10)
    assert alone > kernel + 1.5             # the sleep counts when each call starts on an idle GPU
    assert queued < alone


@gpu
def test_compile_cuda_launch_and_errors(tmp_path, monkeypatch):
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + r'''
__global__ void add_one_k(float* x, int n) { int i = blockIdx.x*blockDim.x + threadIdx.x; if (i < n) x[i] += 1; }
extern "C" cudaError_t add_one(float* x, int n, int threads, cudaStream_t stream) {
    add_one_k<<<cdiv(n, threads), threads, 0, stream>>>(x, n);
    return cudaGetLastError();
}
'''
    mod = compile_cuda(src)
    x = torch.zeros(1000, device='cuda')
    mod.add_one(x, x.numel(), 128)
    assert torch.equal(x, torch.ones(1000, device='cuda'))
    with pytest.raises(utils.CudaError, match='invalid'):
        mod.add_one(x, x.numel(), 4096)
    with pytest.raises(ValueError, match='CUDA tensor'):
        mod.add_one(torch.zeros(10), 10, 128)
    with pytest.raises(ValueError, match='contiguous'):
        mod.add_one(torch.zeros(10, 10, device='cuda').t(), 100, 128)


@gpu
def test_kernel_output_shows_printf(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + r'''
__global__ void hi_k() { printf("hi from thread %d\n", threadIdx.x); }
extern "C" cudaError_t hi(int n) { hi_k<<<1, n>>>(); return cudaGetLastError(); }
'''
    mod = compile_cuda(src)
    with utils.kernel_output():
        mod.hi(3)
    out = capsys.readouterr().out
    assert sorted(out.splitlines()) == [f'hi from thread {i}' for i in range(3)]


@gpu
def test_cuda_err_in_cuda_begin_raises_a_python_error():
    src = cuda_begin + 'void fail() { CUDA_ERR(cudaErrorInvalidValue); }\n'
    mod = load_cuda(src, get_sig('fail', src), ['fail'], name='course_cuda_err_test')
    with pytest.raises(RuntimeError, match=r'CUDA error: invalid argument at .*cuda\.cu:\d+'):
        mod.fail()


def test_innermost_loop_finds_the_shortest_loop_with_an_fma():
    from course.disassembly import innermost_loop
    ptx = """
$L__BB0_1:
	ld.global.f32 	%f1, [%rd1];
$L__BB0_2:
	ld.shared.f32 	%f2, [%r1];
	fma.rn.f32 	%f3, %f2, %f2, %f3;
	add.s32 	%r1, %r1, 4;
	@%p1 bra 	$L__BB0_2;
	bar.sync 	0;
	@%p2 bra 	$L__BB0_1;
"""
    assert innermost_loop(ptx) == ['ld.shared.f32 \t%f2, [%r1];', 'fma.rn.f32 \t%f3, %f2, %f2, %f3;',
                                   'add.s32 \t%r1, %r1, 4;', '@%p1 bra \t$L__BB0_2;']
    assert innermost_loop(ptx.replace('fma.rn.f32', 'mul.rn.f32')) == []


@pytest.mark.parametrize('tw,err', [(0, ValueError), (-1, ValueError), (33, ValueError), (16.0, TypeError),
                                    ('16', TypeError), (True, TypeError), (None, TypeError)])
def test_check_tile_width_rejects_in_one_sentence(tw, err):
    with pytest.raises(err, match='tile width') as e:
        utils.check_tile_width(tw)
    assert '\n' not in str(e.value)


def test_check_tile_width_accepts_and_knows_compiled_widths():
    import numpy as np
    assert utils.check_tile_width(1) == 1 and utils.check_tile_width(np.int64(32)) == 32
    assert utils.check_tile_width(16, allowed=(8, 16, 32)) == 16
    with pytest.raises(ValueError, match='not compiled in'):
        utils.check_tile_width(12, allowed=(8, 16, 32))


def test_row_chunks_cover_every_row_within_the_grid_limit():
    assert utils.row_chunks(100, 16) == [(0, 100)]
    chunks = utils.row_chunks(65535 * 16 * 2 + 5, 16)
    assert [r for r, _ in chunks] == [0, 65535 * 16, 2 * 65535 * 16] and sum(n for _, n in chunks) == 65535 * 32 + 5
    assert all(-(-n // 16) <= utils.MAX_GRID_Y for _, n in chunks)


def test_pointer_parameters_name_their_dtype():
    from course.cuda_library import pointee_dtype
    assert pointee_dtype('const float* __restrict__ m') == 'float32' and pointee_dtype('int *idx') == 'int32'
    assert pointee_dtype('double* out') == 'float64' and pointee_dtype('void* p') is None


@gpu
def test_cuda_module_checks_the_dtype_of_tensor_arguments(tmp_path, monkeypatch):
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_prelude + 'extern "C" cudaError_t touch(float* x, int n) { return cudaSuccess; }\n'
    mod = compile_cuda(src)
    mod.touch(torch.zeros(4, device='cuda'), 4)
    with pytest.raises(TypeError, match='float32'):
        mod.touch(torch.zeros(4, dtype=torch.int32, device='cuda'), 4)


@gpu
def test_load_cuda_builds_sources_that_use_more_of_torch_and_reports_typos_at_once(tmp_path, monkeypatch):
    "A source using a part of PyTorch the light prelude leaves out still builds; a typo is reported without a rebuild."
    monkeypatch.setenv('COURSE_CUDA_CACHE', str(tmp_path))
    src = cuda_begin + 'torch::Tensor count(int n) { return torch::arange(n, torch::dtype(torch::kFloat).device(torch::kCUDA)); }\n'
    mod = load_cuda(src, get_sig('count', src), ['count'])
    assert mod.count(5).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    with pytest.raises(CudaCompileError, match='your source'):
        load_cuda(src.replace('return torch::arange(n', 'return tourch::arange(n'), get_sig('count', src), ['count'])
    assert len(list(tmp_path.rglob('cuda.cu'))) == 3   # light, light + full header, the typo: no full-header retry for it


def test_counters_print_turned_with_a_row_per_counter(capsys):
    from course.profiling import print_counters
    profiles = {'a': {'m1': 1.0, 'm2': 2.5}, 'b': {'m1': 3.0, 'm2': 4.0}}
    print_counters(profiles, {'a': 'step a', 'b': 'step b'}, {'first': 'm1', 'second': 'm2'}, 10, 8, '.1f', by_counter=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines == ['  counter     step a  step b', '  first          1.0     3.0', '  second         2.5     4.0']
    print_counters(profiles, {'a': 'step a', 'b': 'step b'}, {'first': 'm1', 'second': 'm2'}, 10, 8, '.1f')
    assert capsys.readouterr().out.splitlines()[1] == '  step a         1.0     2.5'


def test_kernel_grids_reads_each_kernels_grid_from_the_trace_in_launch_order():
    import json
    from course.profiling import kernel_grids

    class Traced:                       # what torch's profiler writes: CPU events, and GPU kernels with their grids
        def export_chrome_trace(self, path):
            with open(path, 'w') as f:
                json.dump({'traceEvents': [
                    {'cat': 'kernel', 'name': 'second', 'ts': 20, 'args': {'grid': [16, 64, 1], 'block': [256, 1, 1]}},
                    {'cat': 'cpu_op', 'name': 'aten::mm', 'ts': 1, 'args': {}},
                    {'cat': 'kernel', 'name': 'first', 'ts': 10, 'args': {'grid': [513, 1, 1]}},
                    {'cat': 'gpu_memset', 'name': 'Memset', 'ts': 5, 'args': {}}]}, f)
    assert kernel_grids(Traced()) == [('first', (513, 1, 1)), ('second', (16, 64, 1))]


@gpu
def test_launched_kernels_names_what_a_call_launches_with_its_grid():
    from course.profiling import launched_kernels
    x = torch.zeros(3 * 2**20, device='cuda')
    kernels = launched_kernels(lambda: x.add_(1))
    assert len(kernels) == 1 and '(' not in kernels[0][0] and not kernels[0][0].startswith('void ')
    assert len(kernels[0][1]) == 3 and kernels[0][1][0] >= 1 and x[0].item() == 2   # called twice: warmed, profiled
