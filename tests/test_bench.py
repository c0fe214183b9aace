"""The benchmark: on a CPU-only machine the commands say in one line that they need a GPU, and exit 0; notebook 15's
tables, verdicts, charts and README block are checked on made-up timings; its FMA-ceiling kernel is compiled."""
import re, subprocess, sys

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

import utils  # noqa: E402
from conftest import HAS_GPU, ROOT, load_script  # noqa: E402
from course.timing import spread  # noqa: E402


@pytest.fixture(scope='module')
def nb():
    return utils.import_notebook('15')


@pytest.fixture(scope='module')
def bench():
    return load_script('bench/bench.py', 'bench_script')


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close('all')


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU-only path")
@pytest.mark.parametrize('script', ['bench/bench.py', 'bench/compile_time.py'])
def test_benchmarks_say_they_need_a_gpu(script):
    res = subprocess.run([sys.executable, str(ROOT / script)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and 'needs a CUDA GPU' in lines[0]


@pytest.mark.skipif(HAS_GPU, reason="checks the CPU-only path")
def test_the_hopper_shape_set_says_it_needs_a_hopper_gpu():
    res = subprocess.run([sys.executable, str(ROOT / 'bench' / 'hopper_shapes.py')], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    lines = res.stdout.strip().splitlines()
    assert len(lines) == 1 and 'needs a Hopper GPU' in lines[0]


def test_benchmark_uses_the_notebooks_kernels():
    "Notebook 15 builds its list of kernels from the teaching notebooks, not from copies: its one kernel is the FMA ceiling."
    from course.notebook_import import exported_cells, NOTEBOOK_DIR
    src = '\n'.join(exported_cells(NOTEBOOK_DIR / '15_benchmarks.ipynb'))
    for n in ('01', '05', '06', '07', '08', '09', '10'): assert f"'{n}'" in src
    assert re.findall(r'__global__\s+void\s+(\w+)', src) == ['fma_chains'] and '@cuda.jit' not in src


def fake_spreads(nb, medians, width=0.01):
    "{name: Spread} whose 25 rounds spread evenly over median +- width (relative)."
    return {name: spread([m * (1 + width * (i - 12) / 12) for i in range(25)]) for name, m in medians.items()}


MEDIANS = {'fast one': 0.30, 'close one': 0.3305, 'slow one': 0.60, 'Triton fp32 (IEEE), autotuned': 0.34,
           'cuBLAS fp32 (TF32 off)': 0.33, 'cuBLAS TF32 (tensor cores)': 0.07, 'torch.zeros of the output only': 0.04}


@pytest.fixture
def rows(nb):
    return nb.table(fake_spreads(nb, MEDIANS), 2 * 5120 * 256 * 5120)


def test_table_rows_are_medians_over_cublas_with_verdicts(nb, rows):
    assert [r.name for r in rows] == sorted(MEDIANS, key=MEDIANS.get)
    by_name = {r.name: r for r in rows}
    assert by_name['slow one'].vs_cublas == pytest.approx(0.60 / 0.33)
    assert by_name['slow one'].tflops == pytest.approx(2 * 5120 * 256 * 5120 / 0.60 / 1e9)
    assert by_name['fast one'].verdict == 'faster'                 # middle halves 0.2985-0.3015 and 0.328-0.332
    assert by_name['close one'].verdict == 'on par'                # overlapping middle halves
    assert by_name['slow one'].verdict == 'slower'
    assert by_name['cuBLAS fp32 (TF32 off)'].verdict == '-'


def test_targets_and_summary_state_the_verdicts(nb, rows):
    best, triton = nb.targets(rows)
    assert best.startswith('best course kernel: fast one') and best.split('\n')[0].endswith(': faster')
    assert triton.startswith('Triton: Triton fp32') and triton.split('\n')[0].endswith(': slower')
    summary = nb.verdict_summary(rows)
    assert summary[0] == 'faster than cuBLAS fp32 (2): cuBLAS TF32 (tensor cores), fast one'   # the zeros floor left out
    assert summary[1] == 'on par with cuBLAS fp32 (1): close one'
    assert summary[2] == 'slower than cuBLAS fp32 (2): Triton fp32 (IEEE), autotuned, slow one'


def test_step_comparisons_use_the_verdict(nb):
    spreads = fake_spreads(nb, {'naive CUDA C (01)': 2.6, 'dynamic shared, runtime tw (05)': 2.1,
                                'cuBLAS fp32 (TF32 off)': 0.33})
    lines = nb.verdict_summary(nb.table(spreads, 1e9))
    step = [l for l in lines if l.startswith('dynamic shared, runtime tw (05)')]
    assert len(step) == 1 and step[0].split('\n')[0].endswith(': faster') and "naive CUDA C (01)'s time" in step[0]


def test_print_table_shows_tiles_and_padding_for_a_shape(nb, rows, capsys):
    nb.TILES['slow one'] = (128, 128, 8)
    nb.TILES['fast one'] = lambda shape: (16, 16, 16)
    try:
        nb.print_table(rows, shape=(50000, 784, 10))
    finally:
        del nb.TILES['slow one'], nb.TILES['fast one']
    out = {line.split()[0] + ' ' + line.split()[1]: line for line in capsys.readouterr().out.splitlines()}
    assert out['slow one'].split()[-2:] == ['128x128x8', '92.2%']
    assert out['fast one'].split()[-2:] == ['16x16x16', '37.5%']
    assert out['close one'].split()[-2:] == ['-', '-']


def test_back_to_back_keeps_rounds_short():
    nb = utils.import_notebook('15')
    assert nb.back_to_back_for(5120, 256, 5120) == 10 and nb.back_to_back_for(256, 256, 256) == 10
    assert nb.back_to_back_for(4096, 4096, 4096) == 2 and nb.back_to_back_for(8192, 8192, 8192) == 1


def test_markdown_table_and_readme_block(nb, bench, rows):
    table = bench.markdown_table(rows).splitlines()
    assert 'median ms' in table[0] and 'middle half' in table[0] and 'vs cuBLAS fp32' in table[0]
    assert len(table) == 2 + len(rows)
    slow = next(l for l in table if l.startswith('| slow one'))
    cells = [c.strip() for c in slow.strip('|').split('|')]
    assert cells == ['slow one', '0.600', '0.597-0.603', f'{2 * 5120 * 256 * 5120 / 0.6 / 1e9:.1f}', '1.82', 'slower']
    block = bench.readme_block(nb, rows, rows, 'a made-up GPU')
    assert block.startswith('<!-- results:start -->') and block.endswith('<!-- results:end -->')
    assert block.count('| kernel |') == 2 and block.count('- best course kernel:') == 2 and 'a made-up GPU' in block


def test_bar_chart_colours_hatches_and_whiskers(nb, rows):
    styles = nb.kernel_styles(list(MEDIANS))
    fig = nb.bar_chart(rows, styles=styles)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == [r.name for r in rows][::-1]                  # the fastest at the top
    bars = [p for p in ax.patches]
    assert len(bars) == len(rows)
    for bar, name in zip(bars, labels):
        assert matplotlib.colors.to_hex(bar.get_facecolor()) == matplotlib.colors.to_hex(styles[name]['color'])
        assert bool(bar.get_hatch()) == (name in {'cuBLAS fp32 (TF32 off)', 'cuBLAS TF32 (tensor cores)',
                                                  'torch.zeros of the output only'})
        row = next(r for r in rows if r.name == name)
        assert bar.get_width() == pytest.approx(row.ms)
    whiskers = [c for c in ax.containers if isinstance(c, matplotlib.container.ErrorbarContainer)]
    (low, high), = [seg for seg in whiskers[-1][2][0].get_segments()]      # the top bar's whisker: its middle half
    assert (low[0], high[0]) == (pytest.approx(rows[0].time.q1), pytest.approx(rows[0].time.q3))


def test_sweep_chart_has_a_panel_per_group_with_the_references_in_each(nb):
    names = (['naive CUDA C (01)', 'template tw=16 (07)', 'Numba, constant tw (08)', 'Numba register-tiled (10)',
              '1: 1D block tiling (10)', '5: double buffering (10)', 'every shape, model-tuned (11)', 'a kernel of no group']
             + ['cuBLAS fp32 (TF32 off)', 'Triton fp32 (IEEE), autotuned'])
    sweep = {s: fake_spreads(nb, {n: 0.001 * s / 256 * (1 + i / 10) for i, n in enumerate(names)}) for s in (256, 512, 1024)}
    fig = nb.sweep_chart(sweep)
    panels = {ax.get_title(): {c.get_label(): c[0] for c in ax.containers} for ax in fig.axes}
    assert list(panels) == ["the lecture's CUDA C (01, 05-07)", 'Numba (08-10)', 'register tiling (10, 11)', 'others']
    assert set(panels['Numba (08-10)']) == {'Numba, constant tw (08)', 'Numba register-tiled (10)',
                                            'cuBLAS fp32 (TF32 off)', 'Triton fp32 (IEEE), autotuned'}
    assert {'1: 1D block tiling (10)', 'every shape, model-tuned (11)'} <= set(panels['register tiling (10, 11)']) and 'Numba register-tiled (10)' not in panels['register tiling (10, 11)']
    assert all('cuBLAS fp32 (TF32 off)' in lines for lines in panels.values())
    styles = {(matplotlib.colors.to_hex(l.get_color()), l.get_marker()) for lines in panels.values() for n, l in lines.items()}
    assert len(styles) == len(names)                                   # a kernel keeps its style across panels
    lines = panels['register tiling (10, 11)']
    assert lines['cuBLAS fp32 (TF32 off)'].get_linestyle() == '--' and lines['1: 1D block tiling (10)'].get_linestyle() == '-'
    s = 512
    assert lines['1: 1D block tiling (10)'].get_ydata()[1] == pytest.approx(2 * s**3 / sweep[s]['1: 1D block tiling (10)'].median / 1e9)


def test_traffic_snippet_is_python_that_calls_each_kernel_after_a_marker(nb):
    names = ["Numba, constant tw (08)", "naive CUDA C (01)"]
    snippet = nb.traffic_snippet(names, (5120, 256, 5120), {'variant': 3})
    compile(snippet, '<snippet>', 'exec')
    assert repr(names) in snippet and "{'variant': 3}" in snippet and 'torch.randn(5120, 256' in snippet
    assert snippet.count('torch.cuda._sleep') == 2      # before each call, and once after the last


def test_dram_traffic_splits_the_launches_at_the_markers(nb, monkeypatch):
    "Every launch between two markers is the call's: a kernel of two launches sums both; a call with none is missing."
    read, written = nb.DRAM_COUNTERS
    launch = lambda kernel, r, w: (kernel, {read: r, written: w})
    fake = [launch('distribution_kernel', 9e9, 9e9), launch(nb.MARKER, 0, 0), launch('naive', 2e7, 1e8),
            launch(nb.MARKER, 0, 0), launch('gemm_part', 1e7, 5e7), launch('reduce', 1e6, 5e7),
            launch(nb.MARKER, 0, 0), launch(nb.MARKER, 0, 0)]
    monkeypatch.setattr(nb, 'ncu_launches', lambda *a, **k: fake)
    monkeypatch.setattr(nb, 'tuning_choices', lambda shape: {'variant': 0, 'triton_config': 0})
    traffic, missing = nb.dram_traffic(['naive CUDA C (01)', 'cuBLAS fp32 (TF32 off)', 'template tw=16 (07)'])
    assert traffic == {'naive CUDA C (01)': (2e7, 1e8), 'cuBLAS fp32 (TF32 off)': (1.1e7, 1e8)}
    assert missing == {'template tw=16 (07)': 'no launch was recorded'}


@pytest.mark.skipif(not utils.nvcc_available(), reason="needs nvcc (the CUDA compiler), not found here")
def test_fma_ceiling_kernel_compiles_to_a_loop_of_fmas(nb):
    "The FMA-ceiling loop is one round of CHAINS x UNROLL multiply-adds and the few instructions that count rounds."
    from course.disassembly import cuda_ptx, innermost_loop
    module = utils.compile_cuda(nb.FMA_CEILING_SRC, arch='sm_90')
    assert {'fma_chains_launch', 'fma_chains_blocks', 'fma_chains_per_round'} <= set(module.functions)
    loop = innermost_loop(cuda_ptx(nb.FMA_CEILING_SRC, arch='sm_90'))
    fmas = sum(line.startswith('fma') for line in loop)
    assert fmas == 8 * 16 and fmas / len(loop) > 0.95


def test_kernel_styles_keep_black_and_greys_for_the_references(nb):
    names = [f'kernel {i}' for i in range(17)] + [nb.REFERENCE, nb.TF32, nb.FLOOR]
    styles = nb.kernel_styles(names)
    assert styles[nb.REFERENCE]['color'] == 'k' and styles[nb.FLOOR]['color'] == '0.75'
    colours = [matplotlib.colors.to_hex(styles[n]['color']) for n in names]
    assert len(set(colours)) == len(names)                                   # 20 series, 20 colours
    assert all(len(set(matplotlib.colors.to_rgb(c))) > 1 for c in colours[:17])   # greys only for the references


def shape_results(nb, ours_by_shape, triton_by_shape):
    "{name: (shape, rows)} with cuBLAS at 1 ms, the every-shape kernel and Triton at the given medians."
    return {name: ((8, 8, 8), nb.table(fake_spreads(nb, {nb.EVERY_SHAPE: ours_by_shape[name], nb.TRITON: triton_by_shape[name],
                                                          nb.REFERENCE: 1.0}), 1e9))
            for name in ours_by_shape}


def test_shape_set_targets_find_the_worst_shape_and_triton_wins(nb, bench):
    met = shape_results(nb, {'a': 0.9, 'b': 1.08, 'c': 1.0}, {'a': 1.2, 'b': 1.0, 'c': 1.3})
    lines = nb.shape_set_targets(met)
    assert lines[0].startswith('at most 1.10x') and ': met; the worst, b, at 1.08x' in lines[0]
    assert lines[1].endswith('met; Triton faster on 1 of 3 (b)')
    missed = shape_results(nb, {'a': 1.2, 'b': 1.0, 'c': 1.0}, {'a': 1.1, 'b': 0.9, 'c': 1.3})
    lines = nb.shape_set_targets(missed)
    assert ': missed; the worst, a, at 1.200x (9.1% over)' in lines[0] and lines[1].startswith('faster than Triton fp32 on all shapes but at most one: missed')
    just_over = shape_results(nb, {'a': 1.1004, 'b': 1.0}, {'a': 1.2, 'b': 1.2})
    assert ': missed; the worst, a, at 1.100x (0.036% over)' in nb.shape_set_targets(just_over)[0]   # not "1.10x (0% over)"
    md = bench.shape_set_markdown(nb, met).splitlines()
    assert md[0].startswith('**fp32 on every shape**') and sum(l.startswith('| a |') for l in md) == 1
    assert [c.strip() for c in next(l for l in md if l.startswith('| b |')).strip('|').split('|')] == ['b', '8x8x8', '1.000', '1.08', 'slower', '1.00']
