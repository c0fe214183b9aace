"""Notebook 12's tensor-core kernels (WMMA, mma.sync, ldmatrix, cp.async pipeline) in bf16 and TF32, from its
`#| export` cells.

On a CPU-only machine (CI) every CUDA C variant, the ladder and the autotuner's whole search space, is compiled by
nvcc. On a GPU with tensor cores (sm_80 or newer) every step runs against float64 on awkward shapes, rejects bad
input, and its fragments, as the CUDA C loads them, are compared with the Python model of notebook 12."""
import numpy as np
import pytest
import torch

from course.correctness import bad_matmul_inputs
from course.cuda_library import compile_cuda, cuda_prelude
from course.reduced_precision import check_reduced_precision, error_against_float64, random_inputs
from course.tensor_core_fragments import M16N8K8, M16N8K16, round_to_tf32, to_registers
from utils import import_notebook, nvcc_available
from course.cuda_toolkit import tensor_cores_available

nb = import_notebook('12')
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")
tensor_cores = pytest.mark.skipif(not tensor_cores_available(), reason="needs a GPU of compute capability 8.0 or newer")
LADDER = {f'{step} {precision}': nb.tensor_core(step, precision) for precision in nb.PRECISIONS for step in nb.STEPS}


@needs_nvcc
def test_every_variant_compiles():
    "The four steps in both precisions and every variant the autotuner may pick compile (nvcc, also without a GPU)."
    variants = list(LADDER.values()) + nb.search_space('bf16') + nb.search_space('tf32')
    nb.compile_all(variants, progress=False)
    assert all(v._module is not None for v in variants)


def test_search_space_fits_shared_memory_and_covers_the_tiles():
    for precision in nb.PRECISIONS:
        space = nb.search_space(precision)
        assert len(space) >= 20
        for v in space:
            p = v.params
            assert v.shared_bytes <= 227 * 1024 and p['BM'] % p['WM'] == 0 and p['BN'] % p['WN'] == 0
            assert v.threads == p['BM'] // p['WM'] * (p['BN'] // p['WN']) * 32 and p['BK'] * (2 if precision == 'bf16' else 4) == 128


def test_the_bound_catches_a_dropped_product():
    "The error check is not too loose to see a kernel that skips one k: dropping the last product breaks the bound."
    for precision in ('bf16', 'tf32'):
        m, n = random_inputs(40, 17, 30, precision, device='cpu')
        right = (m.double() @ n.double()).to(m.dtype)
        assert error_against_float64(right, m, n, precision)[0] <= 1
        dropped = (m[:, :-1].double() @ n[:-1].double()).to(m.dtype)
        assert error_against_float64(dropped, m, n, precision)[0] > 1


@tensor_cores
@pytest.mark.parametrize('name', LADDER)
def test_every_step_is_right_on_awkward_shapes(name, capsys):
    precision = name.split()[1]
    assert check_reduced_precision(LADDER[name], precision, nb.TC_SHAPES), capsys.readouterr().out


@tensor_cores
@pytest.mark.parametrize('precision', ['bf16', 'tf32'])
def test_misaligned_rows_take_the_checked_path(precision):
    "A view 4 bytes into its storage cannot use 16-byte copies; the launcher sees it and stays right."
    dtype = torch.bfloat16 if precision == 'bf16' else torch.float32
    base = torch.randn(64 * 64 + 2, device='cuda').to(dtype)
    m, n = base[2:].view(64, 64), torch.randn(64, 64, device='cuda').to(dtype)
    assert m.data_ptr() % 16 != 0
    assert error_against_float64(nb.tensor_core('pipelined', precision)(m, n), m, n, precision)[0] <= 1


@tensor_cores
@pytest.mark.parametrize('precision', ['bf16', 'tf32'])
def test_bad_input_is_rejected(precision):
    kernel = nb.tensor_core('pipelined', precision)
    for what, (m, n) in bad_matmul_inputs().items():
        if precision == 'bf16' and what != 'float64': m, n = m.to(torch.bfloat16), n.to(torch.bfloat16)
        with pytest.raises((ValueError, TypeError)): kernel(m, n)
    other = torch.rand(8, 8, device='cuda')
    with pytest.raises(TypeError, match='bfloat16' if precision == 'bf16' else 'float32'):
        kernel(*((other, other) if precision == 'bf16' else (other.bfloat16(), other.bfloat16())))
    torch.cuda.synchronize()


# One warp loads the fragments of the first 16-row piece of a shared A tile and the first two 8-column tiles of a
# shared B tile (rows of 128 bytes), with either loader of notebook 12, and writes each lane's registers out.
FRAGMENT_DUMP = r'''
template <class P, class F, bool SWIZZLE>
__global__ void dump_fragments(const typename P::In* A, const typename P::In* B, int* a_out, int* b_out) {
    using T = typename P::In;
    constexpr int COLS = 128 / sizeof(T);
    using L = Layout<128, SWIZZLE>;
    __shared__ __align__(128) char As[16 * 128], Bs[COLS * 128];
    load_tile<L, 16, COLS, 32, true>(As, A, 16, COLS, 0, 0);
    load_tile<L, COLS, COLS, 32, true>(Bs, B, COLS, COLS, 0, 0);
    __syncthreads();
    uint32_t a[4], b0[2], b1[2];
    F::template a<P, L>(a, As, 0, 0);
    F::template b2<P, L>(b0, b1, Bs, 0, 0);
    for (int r = 0; r < 4; ++r) a_out[threadIdx.x * 4 + r] = a[r];
    for (int r = 0; r < 2; ++r) { b_out[threadIdx.x * 4 + r] = b0[r]; b_out[threadIdx.x * 4 + 2 + r] = b1[r]; }
}
template <class P, class F, bool SWIZZLE>
cudaError_t dump(const typename P::In* A, const typename P::In* B, int* a, int* b) {
    dump_fragments<P, F, SWIZZLE><<<1, 32>>>(A, B, a, b);
    return cudaGetLastError();
}
extern "C" cudaError_t scalar_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, int* a, int* b) { return dump<Bf16, ScalarFragments, false>(A, B, a, b); }
extern "C" cudaError_t ldmatrix_bf16(const __nv_bfloat16* A, const __nv_bfloat16* B, int* a, int* b) { return dump<Bf16, LdmatrixFragments, true>(A, B, a, b); }
extern "C" cudaError_t scalar_tf32(const float* A, const float* B, int* a, int* b) { return dump<Tf32, ScalarFragments, false>(A, B, a, b); }
extern "C" cudaError_t ldmatrix_tf32(const float* A, const float* B, int* a, int* b) { return dump<Tf32, LdmatrixFragments, true>(A, B, a, b); }
'''


def model_registers(shape, operand, tile):
    "The model's 32-bit registers of `tile` (a float32 array) for one lane after another: bf16 pairs packed low-high, tf32 rounded."
    regs = np.array(to_registers(shape, operand, tile), dtype=np.float32)          # [lane][element]
    if shape.inputs == 'tf32': return round_to_tf32(regs).view(np.uint32)
    halves = torch.from_numpy(regs).to(torch.bfloat16).view(torch.int16).numpy().astype(np.uint16).astype(np.uint32)
    return halves[:, 0::2] | halves[:, 1::2] << 16


@tensor_cores
@pytest.mark.parametrize('loader', ['scalar', 'ldmatrix'])
@pytest.mark.parametrize('shape', [M16N8K16, M16N8K8], ids=lambda s: s.inputs)
def test_cuda_fragments_agree_with_the_model(shape, loader):
    "Every register of every lane, as the CUDA C loads it (value by value, or by ldmatrix from a swizzled tile), is the model's."
    precision = shape.inputs
    mod = compile_cuda(cuda_prelude + nb.nb10.TILE_PRELUDE + nb.TC_PRELUDE + nb.MMA_PIECES + nb.LDMATRIX_PIECES + FRAGMENT_DUMP)
    cols = 64 if precision == 'bf16' else 32
    a, b = random_inputs(16, cols, cols, precision)
    a_out, b_out = torch.zeros(32 * 4, dtype=torch.int32, device='cuda'), torch.zeros(32 * 4, dtype=torch.int32, device='cuda')
    getattr(mod, f'{loader}_{precision}')(a, b, a_out, b_out)
    got_a, got_b = (x.cpu().numpy().view(np.uint32).reshape(32, 4) for x in (a_out, b_out))
    a_np, b_np = a.float().cpu().numpy(), b.float().cpu().numpy()
    np.testing.assert_array_equal(got_a, model_registers(shape, 'a', a_np[:, :shape.k]))
    np.testing.assert_array_equal(got_b[:, :2], model_registers(shape, 'b', b_np[:shape.k, 0:8]))
    np.testing.assert_array_equal(got_b[:, 2:], model_registers(shape, 'b', b_np[:shape.k, 8:16]))


@tensor_cores
def test_resources_come_from_the_runtime():
    r = nb.tensor_core('pipelined', 'bf16').resources()
    assert 64 <= r['registers'] <= 255 and r['blocks_per_sm'] >= 1 and r['local_bytes'] == 0
    assert r['shared_kib'] == pytest.approx(nb.tensor_core('pipelined', 'bf16').shared_bytes / 1024)


def test_cublas_in_a_precision_puts_torchs_switch_back():
    from course.reduced_precision import cublas
    with pytest.raises(ValueError): cublas('fp16')
    before = torch.backends.cuda.matmul.allow_tf32
    m = torch.rand(3, 3)
    for precision in ('fp32', 'tf32'):
        torch.testing.assert_close(cublas(precision)(m, m), m @ m)
        assert torch.backends.cuda.matmul.allow_tf32 == before


def test_profile_steps_reads_each_steps_own_kernel_in_a_fresh_process(monkeypatch):
    "One ncu run per step: a snippet that imports this notebook and calls that step's kernel, ncu told its kernel's name."
    import course.profiling
    runs = []
    monkeypatch.setattr(course.profiling, 'ncu_counters',
                        lambda snippet, regex, counters, cwd=None, timeout=600: runs.append((snippet, regex, cwd)) or {'c': len(runs)})
    profiles = nb.profile_steps('tf32', shape=(64, 32, 16), steps=('wmma', 'pipelined'))
    assert profiles == {'wmma': {'c': 1}, 'pipelined': {'c': 2}}
    assert [regex for _, regex, _ in runs] == ['wmma_tiled', 'mma_pipelined']
    snippet = runs[1][0]
    assert "import_notebook('12')" in snippet and "random_inputs(*(64, 32, 16), 'tf32')" in snippet
    assert "nb.tensor_core('pipelined', 'tf32')(m, n)" in snippet and runs[1][2] == nb.NOTEBOOK_DIR.parent


def test_print_resources_reads_through_the_getter_it_is_given(capsys):
    "One table for notebooks 12 and 13: each kernel's resources come from the getter (a kernel's own by default)."
    class Kernel:
        def __init__(self, registers, local): self.r = dict(registers=registers, local_bytes=local, shared_kib=32.0, threads=128, blocks_per_sm=2)
        def resources(self): return self.r
    class Wrapper:
        def __init__(self, kernel): self.kernel = kernel
    nb.print_resources({'plain': Kernel(200, 0)})
    nb.print_resources({'wrapped': Wrapper(Kernel(255, 176))}, resources=lambda w: w.kernel.resources())
    plain, wrapped = capsys.readouterr().out.splitlines()
    assert plain == f"  {'plain':34s} 200 registers,   0 B local,  32.0 KiB shared, 128 threads, 2 blocks per SM"
    assert wrapped.startswith(f"  {'wrapped':34s} 255 registers, 176 B local")


def test_the_counter_table_has_a_column_per_step_and_a_row_per_counter(capsys):
    profiles = {step: {counter: 1234567.0 + i + 10 * (step == 'pipelined') for i, counter in enumerate(nb.TC_COUNTERS.values())}
                for step in ('mma', 'pipelined')}
    nb.print_profile(profiles)
    header, *rows = capsys.readouterr().out.splitlines()
    assert header == f"  {'counter':30s}" + ''.join(f"{nb.LADDER_STEPS[step]:>25s}" for step in ('mma', 'pipelined'))
    assert [row[2:32].strip() for row in rows] == list(nb.TC_COUNTERS) + list(nb.DERIVED)
    assert rows[1][32:] == f"{'1,234,568':>25s}{'1,234,578':>25s}"                    # counts are whole
    assert rows[0][32:] == f"{'1,234,567.00':>25s}{'1,234,577.00':>25s}"              # shares and ratios: 2 decimals
    assert max(len(line) for line in [header, *rows]) <= 150       # fits the output area (tests/test_browser.py)


def test_the_derived_counters_are_the_waiting_and_the_share_of_reloads():
    profile = {nb.TC_COUNTERS['stall long scoreboard / issue']: 2.5, nb.TC_COUNTERS['instructions issued']: 1000.0,
               nb.TC_COUNTERS['local loads']: 50.0}
    assert nb.counter_value(profile, 'long-scoreboard warp-cycles') == 2500.0
    assert f"{nb.counter_value(profile, 'local loads / instructions'):{nb.counter_format('local loads / instructions')}}" == '5.00%'
    assert nb.counter_format('instructions issued') == ',.0f' and nb.counter_format('stall wait / issue') == ',.2f'


@pytest.mark.parametrize('precision', ['bf16', 'tf32'])
def test_each_steps_listing_is_its_kernel_whole(precision):
    "Steps a to c, each as one listing: the template's parameters as constants, the main loop of b and c written in."
    listings = {'wmma': nb.kernel_listing(nb.WMMA_KERNEL, precision, 'a'),
                'mma': nb.kernel_listing(nb.MMA_KERNEL, precision, 'b', inline=nb.MMA_PIECES),
                'ldmatrix': nb.kernel_listing(nb.LDMATRIX_KERNEL, precision, 'c', inline=nb.MMA_PIECES)}
    ctype = 'Bf16' if precision == 'bf16' else 'Tf32'
    for step, text in listings.items():
        lines = text.splitlines()
        assert f'__global__ void __launch_bounds__(THREADS)\n{nb.STEPS[step][0]}(' in text, step
        assert 'template <class P' not in text and f'P = {ctype}' in text and 'ALIGNED = true' in text
        assert text.count('{') == text.count('}') and len(lines) <= 60 and max(map(len, lines)) <= 150
    assert f'struct Wmma<{ctype}>' in listings['wmma'] and 'struct Wmma<' + ('Tf32' if ctype == 'Bf16' else 'Bf16') not in listings['wmma']
    for step, loader, swizzled in (('mma', 'ScalarFragments', 'false'), ('ldmatrix', 'LdmatrixFragments', 'true')):
        text = listings[step]
        assert 'one_stage_matmul' not in text.split('\n', 1)[1] and 'for (int k0 = 0; k0 < K; k0 += BK)' in text
        assert f'MmaWarpTile<P, {loader}, LA, LB' in text and f'Layout<BK * sizeof(T), {swizzled}>' in text
        assert 'SWIZZLE' not in text and 'class F' not in text


def test_the_sentence_says_whether_the_tuned_kernel_is_step_d(monkeypatch):
    shape = (4096, 4096, 4096)
    monkeypatch.setitem(nb.TUNED, ('bf16', *shape), nb.tensor_core('pipelined', 'bf16'))
    assert nb.tuned_is_step_d('bf16', shape).strip().startswith('the tuned kernel is step d:')
    monkeypatch.setitem(nb.TUNED, ('bf16', *shape), nb.tensor_core('pipelined', 'bf16', BN=256, STAGES=2))
    assert nb.tuned_is_step_d('bf16', shape).strip() == 'the tuned kernel is not step d: BN = 256 (step d: 128), STAGES = 2 (step d: 3)'


def test_a_labelled_check_prints_one_line_for_right_shapes_and_a_line_for_each_wrong_one(capsys):
    shapes = [(8, 16, 8), (5, 40, 3), (17, 8, 9)]
    bf16 = lambda m, n: (m.double() @ n.double()).to(torch.bfloat16)
    assert check_reduced_precision(bf16, 'bf16', shapes, device='cpu', label='the float64 product, rounded')
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith('the float64 product, rounded: ok on 3 shapes, worst error 0.')
    off = lambda m, n: bf16(m, n) + (torch.arange(n.shape[1]) == 2).to(torch.bfloat16)    # column 2 wrong by 1
    assert not check_reduced_precision(off, 'bf16', shapes, device='cpu', label='off by one in a column')
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 4 and all('WRONG' in line for line in lines)
    assert lines[-1].startswith('off by one in a column: WRONG on 3 shapes')
