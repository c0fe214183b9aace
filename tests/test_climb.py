"""course.climb: the one list of the course's kernels (also notebook 15's), and the chart of the climb so far."""
import pytest

from course import climb
from course.timing import spread


def test_the_list_holds_each_notebooks_kernels_in_the_order_taught_and_no_later_ones():
    up_to_07 = climb.course_kernels('07', dtypes=('float32',))
    assert [k.name for k in up_to_07] == ['naive CUDA C (01)', 'dynamic shared, runtime tw (05)',
                                          'static shared, constexpr tw (06)', 'template tw=16 (07)', 'template tw=32 (07)']
    every = climb.course_kernels('11', dtypes=('float32',))
    assert [k.name for k in every[:len(up_to_07)]] == [k.name for k in up_to_07]
    assert all(k.name.endswith(f'({k.notebook})') and k.dtype == 'float32' for k in every)
    assert [k.notebook for k in every] == sorted(k.notebook for k in every)      # in the order they are taught
    assert {k.notebook for k in every} == {'01', '05', '06', '07', '08', '09', '10', '11'}
    assert climb.EVERY_SHAPE in {k.name for k in every}
    assert len({k.name for k in every}) == len(every)
    assert all(k.notebook <= '09' for k in climb.course_kernels('09', dtypes=('float32',)))


def test_tiles_are_known_where_fixed_and_asked_of_the_tuner_where_tuned():
    kernels = {k.name: k for k in climb.course_kernels('10', dtypes=('float32',))}
    assert kernels['template tw=32 (07)'].tile == (32, 32, 32)
    assert kernels['naive CUDA C (01)'].tile == (16, 16, 1)
    tuned = kernels['register-tiled, autotuned (10)'].tile
    assert callable(tuned) and tuned((12345, 7, 3)) is None                    # a shape never tuned: not known


def test_bf16_kernels_are_left_out_where_this_gpu_cannot_run_them():
    fake = climb.Kernel('x (13)', '13', None, 'bfloat16', None)
    import torch
    if not torch.cuda.is_available():
        assert not climb.runnable(fake)
        assert all(k.dtype == 'float32' for k in climb.course_kernels('13'))
    assert climb.runnable(climb.Kernel('y (05)', '05', None, 'float32', None))


def fake_bars():
    def bar(name, notebook, dtype, t): return climb.Bar(name, notebook, dtype, 2 * 4096**3 / t / 1e9, spread([t] * 5))
    return [bar('naive CUDA C (01)', '01', 'float32', 20.0), bar('template tw=32 (07)', '07', 'float32', 10.0),
            bar('step 8 (13)', '13', 'bfloat16', 0.2), bar('cuBLAS fp32 (TF32 off)', '', 'float32', 2.5),
            bar(climb.TF32_MARK, '', 'float32', 0.4), bar('cuBLAS bf16', '', 'bfloat16', 0.19)]


def test_the_chart_draws_one_bar_per_kernel_at_its_rate_and_a_line_per_reference():
    bars = fake_bars()
    fig = climb.climb_chart(bars)
    ax = fig.axes[0]
    drawn = [p.get_x() + p.get_width() for p in ax.patches]                   # each bar ends at its rate
    assert drawn == pytest.approx([b.tflops for b in bars if b.notebook])
    assert [t.get_text() for t in ax.get_yticklabels()] == ['naive CUDA C (01)', 'template tw=32 (07)', 'step 8 (13)']
    assert sorted(l.get_xdata()[0] for l in ax.lines) == pytest.approx(sorted(b.tflops for b in bars if not b.notebook))
    assert ax.get_xlabel().endswith('blue: float32, orange: bf16')
    fp32_only = climb.climb_chart([b for b in bars if b.dtype == 'float32'])      # no bf16 bar: no orange in the legend
    assert fp32_only.axes[0].get_xlabel().endswith('blue: float32')


def test_each_line_compares_a_kernel_with_cublas_in_its_own_precision():
    lines = climb.climb_lines(fake_bars())
    assert len(lines) == 3
    assert '0.12x cuBLAS fp32' in lines[0] and '0.25x cuBLAS fp32' in lines[1]     # 2.5 / 20 and 2.5 / 10
    assert '0.95x cuBLAS bf16' in lines[2]                                          # 0.19 / 0.2


def test_the_caller_can_share_its_modules_and_their_state():
    from utils import import_notebook
    nb10 = import_notebook('10')
    kernels = {k.name: k for k in climb.course_kernels('10', dtypes=('float32',), modules={'10': nb10})}
    nb10.TUNED[(12345, 7, 3)] = nb10.SEARCH_SPACE[0]          # a choice made through the caller's module ...
    assert kernels['register-tiled, autotuned (10)'].tile((12345, 7, 3)) == climb.tile_params(nb10.SEARCH_SPACE[0].params)
    assert kernels['register-tiled, autotuned (10)'].fn is nb10.matmul_autotuned      # ... is the list's
