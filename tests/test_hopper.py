"""Notebook 13's Hopper kernels (TMA, wgmma, mbarrier pipelines, warp specialization, persistent clusters) and the
model of where TMA puts a tile and wgmma reads it.

On a CPU-only machine every step is compiled for sm_90a by nvcc, and the layout model is checked against the
descriptors the kernels use. On a Hopper GPU every step runs against float64 on awkward shapes (shapes TMA cannot
copy go to the fallback), rejects bad input, and uses no local memory."""
import pytest
import torch

from course import hopper_ladder, stream_k
from course.correctness import bad_matmul_inputs
from course.cuda_library import CudaError
from course.cuda_toolkit import CudaUnavailableError, hopper_available
from course.reduced_precision import check_reduced_precision, random_inputs
from course.tensor_core_fragments import swizzled_offset
from course.wgmma_layout import (a_stage_offset, b_stage_offset, descriptor, descriptor_fields, mismatches, swizzle_128,
                                 tma_offset, wgmma_offset)
from utils import import_notebook, nvcc_available

nb = import_notebook('13')
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")
hopper = pytest.mark.skipif(not hopper_available(), reason="needs a Hopper GPU (compute capability 9.0)")


def test_tma_swizzle_is_notebook_11s_swizzle():
    assert all(tma_offset(r, c) == 2 * swizzled_offset(r, c) for r in range(16) for c in range(64))
    assert swizzle_128(0x1000 + 3 * 128 + 16) == 0x1000 + 3 * 128 + (1 ^ 3) * 16
    with pytest.raises(ValueError): tma_offset(0, 64)


def test_the_kernels_descriptors_read_every_value_from_its_place():
    "A: K-major, SBO = 1024; B: MN-major, LBO = one box (64 rows of K x 128 bytes), SBO = 1024: no value misplaced."
    assert mismatches('A', 16, 1024) == 0 and mismatches('A', 1024 * 7, 1024) == 0     # LBO unused for K-major
    for bk in (16, 32, 64, 128):
        assert mismatches('B', bk * 128, 1024, bn=128, bk=bk) == 0


@pytest.mark.parametrize('operand, lbo, sbo', [('A', 16, 128), ('A', 16, 2048), ('B', 1024, 8192), ('B', 128, 1024),
                                               ('B', 8192, 128), ('B', 4096, 1024)])
def test_wrong_strides_misplace_values(operand, lbo, sbo):
    assert mismatches(operand, lbo, sbo) > 0


def test_the_layout_model_places_values_as_the_kernel_stores_them():
    "Row k of B's box j starts at j * box bytes + k * 128 (before the swizzle); a wgmma's start moves 16 rows of K on."
    assert b_stage_offset(0, 64) == 64 * 128 and b_stage_offset(1, 0) == swizzle_128(128) == 128 + 16 and b_stage_offset(8, 0) == 1024
    assert a_stage_offset(9, 3) == swizzle_128(9 * 128 + 6)
    assert wgmma_offset(0, 0, 'MN', 8192, 1024, start=2048) == b_stage_offset(16, 0)
    with pytest.raises(ValueError): wgmma_offset(0, 64, 'K', 16, 1024)
    with pytest.raises(ValueError): wgmma_offset(0, 0, 'X', 16, 1024)


def test_descriptor_fields_round_trip():
    d = descriptor(0x2400, 8192, 1024)
    assert descriptor_fields(d) == {'address': 0x2400, 'LBO': 8192, 'SBO': 1024, 'swizzle': 1}
    assert d >> 62 == 1 and d & 0x3FFF == 0x2400 >> 4
    with pytest.raises(ValueError): descriptor(0x2408, 8192, 1024)


def test_unknown_step_is_refused():
    with pytest.raises(ValueError, match='step must be one of'): nb.hopper_kernel('fastest')


def test_step_2b_is_step_2_with_a_group_in_flight_between_steps_2_and_3():
    assert [label.split('.')[0] for label in nb.HOPPER_STEPS.values()] == ['1', '2', '2b', '3', '4', '5', '6', '7', '8']
    kernel = nb.hopper_kernel('in_flight')
    assert (kernel.params['STAGES'], kernel.params['IN_FLIGHT']) == (4, 1)
    assert kernel.source == nb.hopper_kernel('tma', STAGES=4, IN_FLIGHT=1).source
    assert nb.hopper_kernel('pipelined').params['IN_FLIGHT'] == nb.hopper_kernel('tma').params['IN_FLIGHT'] == 0


def test_the_kernel_files_are_what_the_steps_compile():
    "Each file of course/kernels/hopper/ opens with a comment on what it holds; the rest is compiled as it is."
    import re
    from course.hopper_ladder import TF32_FILES                       # notebook 14's (their tests: test_hopper_tf32.py)
    assert nb.HOPPER_KERNEL_DIR.is_dir() and sorted(p.name for p in nb.HOPPER_KERNEL_DIR.iterdir()) == sorted(nb.HOPPER_FILES + TF32_FILES)
    for name in nb.HOPPER_FILES:
        text = (nb.HOPPER_KERNEL_DIR / name).read_text()
        opening, _, _ = text.partition('\n\n')
        assert all(line.startswith('// ') for line in opening.splitlines()), name
        assert re.search(r'notebook.13', opening, re.I) and 'step' in opening, name
        assert text == opening + '\n' + nb.read_kernel(name)                  # only the opening comment is left out
    assert nb.HOPPER_PIECES == nb.read_kernel('pieces.cuh') and nb.HOPPER_COMMON == nb.read_kernel('common.cuh')
    assert nb.TMA_WGMMA_KERNEL == nb.read_kernel('tma_wgmma.cu') and nb.SPECIALIZED_KERNEL == nb.read_kernel('specialized.cu')
    assert nb.STREAM_K_PIECES.endswith(nb.read_kernel('stream_k.cuh'))
    for step, kernel in (('tma', 'tma_wgmma.cu'), ('streamk', 'specialized.cu')):     # the launcher's braces come back single
        source = nb.hopper_kernel(step).source
        assert all(nb.read_kernel(name) in source for name in ('pieces.cuh', 'common.cuh', 'stream_k.cuh', kernel, 'launcher.cu'))


def test_the_kernel_files_are_found_from_anywhere_and_installed(tmp_path, monkeypatch):
    import fnmatch
    from conftest import ROOT
    tomllib = pytest.importorskip('tomllib')                      # Python 3.11 on
    monkeypatch.chdir(tmp_path)
    assert nb.read_kernel('pieces.cuh') == nb.HOPPER_PIECES
    patterns = tomllib.loads((ROOT / 'pyproject.toml').read_text())['tool']['setuptools']['package-data']['course']
    assert all(any(fnmatch.fnmatch(f'kernels/hopper/{name}', p) for p in patterns) for name in nb.HOPPER_FILES)
    (tmp_path / 'bare.cu').write_text('int x;\n\nint y;\n')
    monkeypatch.setattr(hopper_ladder, 'HOPPER_KERNEL_DIR', tmp_path)      # where the notebook's read_kernel comes from
    with pytest.raises(ValueError, match='must open with a comment'): nb.read_kernel('bare.cu')


def test_kernel_piece_takes_a_function_whole_with_its_comment():
    file, text = nb.kernel_piece('barrier_wait')
    assert file == 'pieces.cuh' and text.startswith('// Wait until the phase') and text.endswith('\n}\n')
    assert 'mbarrier.try_wait.parity' in text and text in nb.read_kernel(file)
    assert nb.kernel_piece('wgmma_commit')[1].count('\n') == 1                          # a one-liner alone
    stage = nb.kernel_piece('multiply_stage')[1]
    assert stage.startswith('// One warpgroup') and 'template <int BN>\n__device__ inline void multiply_stage' in stage
    wait = nb.kernel_piece('tma_store_wait')[1]                  # a one-line template right after another
    assert wait.startswith('template <int PENDING> __device__ inline void tma_store_wait()') and 'read' not in wait
    file, text = nb.kernel_piece('StreamK')
    assert file == 'stream_k.cuh' and 'struct StreamK {' in text
    file, text = nb.kernel_piece('matmul')
    assert file == 'launcher.cu' and 'cudaLaunchKernelEx(&launch.config' in text and '{{' not in text
    whole, plain = nb.kernel_piece('for_each_piece')[1], nb.kernel_piece('for_each_piece', STREAM_K=False)[1]
    assert 'if constexpr (!STREAM_K)' in whole and 'stretch_start' in whole
    assert '// here with STREAM_K = false\ntemplate <bool STREAM_K, class F>\n__device__ inline void for_each_piece' in plain
    assert 'if constexpr' not in plain and 'stretch_start' not in plain and 'unit += clusters) f(unit, 0, k_tiles);' in plain
    assert nb.kernel_piece('barrier_arrive', STREAM_K=False) == nb.kernel_piece('barrier_arrive')   # no switch of its own
    with pytest.raises(ValueError, match="no function or struct 'barrier_sleep'"): nb.kernel_piece('barrier_sleep')


def test_show_pieces_names_each_file_once(capsys):
    nb.show_pieces('wgmma_fence', 'wgmma_commit', 'count_in')
    out = capsys.readouterr().out
    assert out.startswith('// course/kernels/hopper/pieces.cuh\n' + nb.kernel_piece('wgmma_fence')[1] + nb.kernel_piece('wgmma_commit')[1])
    assert out.endswith('\n// course/kernels/hopper/stream_k.cuh\n' + nb.kernel_piece('count_in')[1])


def test_every_device_piece_is_shown_by_some_step():
    "The learner meets every function of pieces.cuh, common.cuh and stream_k.cuh in the step that first needs it."
    import json, re
    from conftest import ROOT
    cells = json.loads((ROOT / 'notebooks' / '13_hopper.ipynb').read_text())['cells']
    calls = re.findall(r'show_pieces\(([^)]*)\)', '\n'.join(''.join(c['source']) for c in cells if c['cell_type'] == 'code'))
    shown = {name for call in calls for name in re.findall(r"'(\w+)'", call)}
    for name in shown: nb.kernel_piece(name)                                             # each one found
    defined = {m for file in ('pieces.cuh', 'common.cuh', 'stream_k.cuh') for m in re.findall(
        r'^(?:template <[^>]*>\n?\s*)?(?:__device__ inline \S+ |struct )(\w+)', nb.read_kernel(file), re.M)}
    assert len(defined) > 30 and defined <= shown, sorted(defined - shown)


def test_tma_can_copy_asks_for_16_byte_rows():
    def bf16(h, w): return torch.zeros(h, w, dtype=torch.bfloat16)
    assert nb.tma_can_copy(bf16(5, 8), bf16(8, 16))
    assert not nb.tma_can_copy(bf16(5, 12), bf16(12, 16))       # K = 12: rows of A are 24 bytes
    assert not nb.tma_can_copy(bf16(5, 8), bf16(8, 20))         # N = 20
    shifted = torch.zeros(41, dtype=torch.bfloat16)[1:].view(5, 8)   # starts 2 bytes past an aligned address
    assert shifted.is_contiguous() and not nb.tma_can_copy(shifted, bf16(8, 16))


@needs_nvcc
def test_every_step_compiles_for_sm_90a():
    kernels = [nb.hopper_kernel(step) for step in nb.HOPPER_STEPS]
    kernels += [nb.hopper_kernel('tma', STAGES=s) for s in (2, 3)]
    for k in kernels: k.build()
    assert all(k._module is not None for k in kernels)


@hopper
@pytest.mark.parametrize('step', list(nb.HOPPER_STEPS))
def test_every_step_is_right_on_awkward_shapes(step, capsys):
    assert check_reduced_precision(nb.HopperMatmul(step), 'bf16', nb.HOPPER_SHAPES), capsys.readouterr().out


@hopper
@pytest.mark.parametrize('handover', [None, 4])
@pytest.mark.parametrize('h, k, w', [(4096, 4096, 4096), (8192, 8192, 8192), (256, 8192, 4096), (2100, 1000, 2100),
                                     (300, 1000, 264), (5120, 256, 5120), (129, 4096, 200)])
def test_the_launcher_plans_stream_k_as_the_model_does(h, k, w, handover):
    clusters, whole_units, sharing = nb.HopperMatmul('streamk', HANDOVER=handover).launch_plan(h, k, w)
    units = -(-h // 256) * -(-w // 256)                   # pairs of 128 x 256 tiles
    model = stream_k.plan(units, clusters, -(-k // 64), handover=handover or stream_k.HANDOVER_STAGES)
    assert (whole_units, sharing) == (model.whole_units, model.sk_clusters)
    if (h, k, w) == (8192, 8192, 8192) or handover == 4 and h == k == w: assert sharing > 0
    assert nb.HopperMatmul('overlap').launch_plan(h, k, w)[1:] == (units, 0)   # step 7: every unit whole


@hopper
@pytest.mark.parametrize('handover, shape', [(4, (4096, 4096, 4096)), (None, (2000, 2000, 2296))])
def test_stream_k_after_whole_rounds_is_right(handover, shape, capsys):
    kernel = nb.HopperMatmul('streamk', HANDOVER=handover)
    clusters, whole_units, sharing = kernel.launch_plan(*shape)
    assert whole_units > 0 and sharing > 0                # whole rounds first, then one shared along K
    assert check_reduced_precision(kernel, 'bf16', [shape]), capsys.readouterr().out


@hopper
def test_stream_k_adds_the_partial_sums_in_a_fixed_order():
    kernel = nb.HopperMatmul('streamk')
    m, n = random_inputs(256, 8192, 4096, 'bf16')      # 16 units of 128 stages of K, shared by every cluster
    first = kernel(m, n)
    assert all(torch.equal(first, kernel(m, n)) for _ in range(10))   # no race: the same sums in the same order


@hopper
@pytest.mark.parametrize('params', [dict(STAGES=2, IN_FLIGHT=1), dict(STAGES=4, IN_FLIGHT=1)])
def test_a_wgmma_group_kept_in_flight_is_right(params, capsys):
    kernel = nb.HopperMatmul('tma', **params)
    assert check_reduced_precision(kernel, 'bf16', nb.HOPPER_SHAPES), capsys.readouterr().out
    assert kernel.kernel.resources()['local_bytes'] == 0


@hopper
def test_step_4_with_step_5s_tile_order_is_right(capsys):
    assert check_reduced_precision(nb.HopperMatmul('persistent', GROUP=16), 'bf16', nb.HOPPER_SHAPES), capsys.readouterr().out


@needs_nvcc
def test_a_group_in_flight_needs_a_second_stage():
    from course.compile_errors import CudaCompileError
    with pytest.raises(CudaCompileError, match='a stage whose wgmmas still run'):
        nb.hopper_kernel('tma', STAGES=1, IN_FLIGHT=1).build()


@hopper
def test_rows_not_on_16_bytes_go_to_the_fallback_and_stay_right():
    kernel = nb.HopperMatmul('cluster')
    m, n = random_inputs(300, 264, 136, 'bf16')
    m = torch.cat([torch.zeros(1, device='cuda', dtype=m.dtype), m.flatten()])[1:].view(300, 264)
    assert not nb.tma_can_copy(m, n)
    from course.reduced_precision import error_against_float64
    assert error_against_float64(kernel(m, n), m, n, 'bf16')[0] <= 1
    with pytest.raises(CudaError, match='invalid argument'):       # the TMA kernel itself refuses such rows
        kernel.on_tma(m, n)
    torch.cuda.synchronize()


@hopper
def test_bad_input_is_rejected():
    kernel = nb.HopperMatmul('persistent')
    for what, (m, n) in bad_matmul_inputs().items():
        if what != 'float64': m, n = m.to(torch.bfloat16), n.to(torch.bfloat16)
        with pytest.raises((ValueError, TypeError)): kernel(m, n)
    other = torch.rand(8, 8, device='cuda')
    with pytest.raises(TypeError, match='bfloat16'): kernel(other, other)
    torch.cuda.synchronize()


@hopper
def test_a_gpu_that_is_not_hopper_gets_a_sentence(monkeypatch):
    monkeypatch.setattr(hopper_ladder, 'hopper_available', lambda: False)
    m, n = random_inputs(64, 64, 64, 'bf16')
    with pytest.raises(CudaUnavailableError, match='Hopper'): nb.HopperMatmul('tma')(m, n)


@hopper
@pytest.mark.parametrize('step', list(nb.HOPPER_STEPS))
def test_no_step_spills_to_local_memory(step):
    assert nb.hopper_kernel(step).resources()['local_bytes'] == 0


def test_gluon_says_in_one_line_why_it_cannot_run():
    from course.gluon_matmul import gluon_unavailable
    if not hopper_available():
        assert gluon_unavailable() and '\n' not in gluon_unavailable()
        m = torch.zeros(8, 8, dtype=torch.bfloat16)
        with pytest.raises((ValueError, CudaUnavailableError)): nb.matmul_gluon(m, m)


@hopper
def test_the_gluon_kernel_is_right_on_awkward_shapes(capsys):
    from course.gluon_matmul import gluon_unavailable
    if gluon_unavailable(): pytest.skip(gluon_unavailable())
    assert check_reduced_precision(nb.matmul_gluon, 'bf16', nb.HOPPER_SHAPES), capsys.readouterr().out
    for what, (m, n) in bad_matmul_inputs().items():
        if what != 'float64': m, n = m.to(torch.bfloat16), n.to(torch.bfloat16)
        with pytest.raises((ValueError, TypeError)): nb.matmul_gluon(m, n)


def test_profile_hopper_reads_each_kernel_in_a_fresh_process(monkeypatch):
    import course.profiling
    runs = []
    def fake_ncu(snippet, regex, counters, cwd=None, timeout=600):
        runs.append((snippet, regex, counters))
        return {c: 2000.0 for c in counters}
    monkeypatch.setattr(course.profiling, 'ncu_counters', fake_ncu)
    profiles = nb.profile_hopper(shape=(128, 64, 256))
    assert list(profiles) == list(nb.PROFILED) and set(nb.PROFILED) == {*nb.HOPPER_STEPS, 'order5'}
    assert [regex for _, regex, _ in runs] == ['tma_wgmma|specialized'] * len(nb.PROFILED)
    snippets = dict(zip(nb.PROFILED, (snippet for snippet, _, _ in runs)))
    assert "import_notebook('13')" in snippets['store'] and "nb.HopperMatmul('store')(m, n)" in snippets['store']
    assert "nb.HopperMatmul('persistent', GROUP=16)(m, n)" in snippets['order5']
    assert "random_inputs(*(128, 64, 256), 'bf16')" in snippets['store'] and runs[0][2] == list(nb.HOPPER_COUNTERS.values())
    counters = nb.HOPPER_COUNTERS
    assert profiles['tma'][counters['DRAM MB']] == 2000 / 1e6           # bytes to MB
    assert profiles['tma'][counters['ncu µs']] == 2.0             # ns to µs
    assert profiles['tma'][counters['L2 hit %']] == 2000.0                      # the others as read


def test_hopper_target_lines_weigh_cublas_across_runs_then_triton(monkeypatch):
    from course.timing import Spread
    monkeypatch.setattr(nb, 'gpu_clocks', lambda: None)
    best = nb.HOPPER_STEPS[nb.BEST_STEP]
    def s(ms): return Spread(ms, ms * 0.999, ms * 1.001, ())
    ladder = {best: s(1.47), 'cuBLAS bf16': s(1.57), 'Triton bf16, autotuned': s(2.0)}
    handover = {best: s(1.50), 'cuBLAS bf16': s(1.52)}
    staging = {'cuBLAS bf16': s(1.61)}
    [line] = nb.hopper_target_lines({(8192, 8192, 8192): [ladder, handover, staging]})
    assert line.startswith("8192³: 1.07x, 1.01x cuBLAS bf16's speed (2 measurement(s)); cuBLAS bf16's spread across "
                           "this run: 5.9% (its median moved 5.9% over 3 measurement(s), 1.520-1.610 ms")
    assert "target at least 1.00x: above it, by less than that spread: too close to call" in line
    assert line.endswith("; 1.36x Triton's speed (faster)")
    far = {best: s(1.20), 'cuBLAS bf16': s(1.57)}
    again = {'cuBLAS bf16': s(1.58)}
    assert "target at least 1.00x: met" in nb.hopper_target_lines({(8192,) * 3: [far, staging, again]})[0]
    assert "too few to know its spread" in nb.hopper_target_lines({(8192,) * 3: [far, staging]})[0]   # 2 of cuBLAS
    with pytest.raises(ValueError): nb.hopper_target_lines({(8192,) * 3: [staging]})


# dispatch_bf16 on a CPU: the input rules are the course's, with the device rule moved to the CPU for the test
@pytest.fixture
def dispatch_on_cpu(monkeypatch):
    import functools
    from course import hopper_dispatch
    from course.input_checks import check_matmul_inputs
    monkeypatch.setattr(hopper_dispatch, 'check_matmul_inputs', functools.partial(check_matmul_inputs, device='cpu'))
    return hopper_dispatch.dispatch_bf16


def test_dispatch_sends_shapes_tma_cannot_copy_to_the_fallback(dispatch_on_cpu):
    def bf16(h, w): return torch.zeros(h, w, dtype=torch.bfloat16)
    def kernel(m, n): return 'kernel'
    def fallback(m, n): return 'fallback'
    assert dispatch_on_cpu(bf16(5, 8), bf16(8, 16), kernel, fallback, lambda: None) == 'kernel'
    assert dispatch_on_cpu(bf16(5, 12), bf16(12, 16), kernel, fallback, lambda: None) == 'fallback'   # rows of 24 bytes


def test_dispatch_checks_inputs_before_it_asks_about_the_gpu(dispatch_on_cpu):
    asked = []
    def unavailable(): asked.append(1); return "no Hopper GPU here"
    m = torch.zeros(8, 8, dtype=torch.bfloat16)
    with pytest.raises(TypeError, match='must be bfloat16'): dispatch_on_cpu(m.float(), m, None, None, unavailable)
    with pytest.raises(ValueError, match='size mismatch'): dispatch_on_cpu(m, m[:4], None, None, unavailable)
    assert not asked
    with pytest.raises(CudaUnavailableError, match='^no Hopper GPU here$'): dispatch_on_cpu(m, m, None, None, unavailable)


def test_a_missing_hopper_is_said_before_anything_runs(dispatch_on_cpu, monkeypatch):
    "HopperMatmul and the Gluon wrapper both refuse to run where their kernels cannot, with their own sentence."
    from course import gluon_matmul
    monkeypatch.setattr(hopper_ladder, 'hopper_available', lambda: False)
    monkeypatch.setattr(torch.cuda, 'get_device_name', lambda *a: 'a test GPU')
    m = torch.zeros(8, 8, dtype=torch.bfloat16)
    with pytest.raises(CudaUnavailableError, match=r"step 'tma' uses wgmma, which needs a Hopper GPU.*this one is a test GPU"):
        nb.HopperMatmul('tma')(m, m)
    monkeypatch.setattr(gluon_matmul, 'gluon_unavailable', lambda: "no Gluon here")
    with pytest.raises(CudaUnavailableError, match='no Gluon here'): nb.matmul_gluon(m, m)


def test_the_registry_names_the_steps_the_ladder_module_builds():
    "HOPPER_STEPS (the notebook's registry) and course.hopper_ladder.step_variant know the same steps, in one order."
    assert tuple(nb.HOPPER_STEPS) == hopper_ladder.STEPS
    assert nb.hopper_kernel('cluster').params == hopper_ladder.step_variant('cluster', nb.HOPPER_SOURCE).params
    assert isinstance(nb.HopperMatmul('store', STORE_BUFFERS=2), hopper_ladder.StepMatmul)
    assert nb.HopperMatmul('store', STORE_BUFFERS=2).kernel.params['STORE_BUFFERS'] == 2


def test_step_lines_read_one_step_against_cublas_and_the_step_before(capsys):
    from course.timing import Spread
    def s(ms): return Spread(ms, ms * 0.99, ms * 1.01, ())
    labels = list(nb.HOPPER_STEPS.values())
    times = {(4096,) * 3: {'cuBLAS bf16': s(0.180), nb.NB12_STEP_D: s(0.40), labels[0]: s(0.30), labels[1]: s(0.33)}}
    nb.step_vs_previous(times, 'pipelined')
    out = capsys.readouterr().out
    assert out == (f"4096³: {labels[1]}: 0.330 ms, 416 TFLOP/s; 0.55x cuBLAS's speed (slower); "
                   "0.91x step 1's speed (slower)\n")
    nb.step_vs_previous(times, 'tma')
    assert "1.33x notebook 12's step d's speed (faster)" in capsys.readouterr().out
    nb.step_vs_previous({}, 'store')
    assert 'not measured in this run' in capsys.readouterr().out


def test_print_against_cublas_aligns_long_names(capsys):
    from course.timing import Spread
    times = {'cuBLAS bf16': Spread(1.0, 0.99, 1.01, ()), 'a box at a time: 1 buffer (step 6), long': Spread(2.0, 1.9, 2.1, ())}
    hopper_ladder.print_against_cublas((4096,) * 3, times, 989)
    rows = capsys.readouterr().out.splitlines()[1:]
    assert len({row.index(' ms (') for row in rows}) == 1                       # the times in one column


def test_the_k_major_drawing_shows_tma_and_the_descriptor_agreeing():
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    from course.wgmma_layout import draw_k_major_tile
    fig = draw_k_major_tile()
    assert isinstance(fig, matplotlib.figure.Figure) and len(fig.axes) == 2
    core, shared = ({p.get_gid(): p for p in ax.patches if p.get_gid()} for ax in fig.axes)
    assert len(core) == 64 and 'core 1 0 1024' in core and 'core 7 7 7280' in core      # g x SBO + c x 16
    for gid in shared:                                                                   # row r's chunk p holds chunk c
        _, r, p, c = gid.split()
        assert tma_offset(int(r), 8 * int(c)) == 128 * int(r) + 16 * int(p)
    assert len(shared) == 16 * 8
    plt.close(fig)
