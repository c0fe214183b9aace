"""The model of calls queued on a GPU stream: a call takes the CPU's time or the GPU's, whichever is longer."""
import pytest

from course.launch_queue import draw_timelines, gpu_idle_share, time_per_call, timeline


def test_a_gpu_slower_than_the_cpu_sets_the_pace_and_never_waits_once_started():
    run = timeline(cpu_us=20, gpu_us=60, calls=10)
    assert time_per_call(run) == 60
    assert all(b.start == a.end for a, b in zip(run, run[1:]))         # each kernel starts as the last one ends
    assert gpu_idle_share(run) == 0
    assert run[-1].enqueued < run[-2].end                              # the CPU is ahead: call 10 queued early


def test_a_cpu_slower_than_the_gpu_sets_the_pace_and_the_gpu_waits():
    run = timeline(cpu_us=25, gpu_us=10, calls=10)
    assert time_per_call(run) == 25
    assert all(c.start == c.enqueued for c in run)                     # each kernel starts as soon as it is queued
    assert all(b.start - a.end == 15 for a, b in zip(run, run[1:]))    # and the GPU waited 25 - 10 µs for it
    assert gpu_idle_share(run) == pytest.approx(1 - 10 * 10 / (9 * 25 + 10))


@pytest.mark.parametrize('cpu, gpu', [(1, 1), (3, 7), (7, 3), (0.5, 40), (33, 2.5)])
def test_every_call_starts_when_queued_and_after_the_one_before(cpu, gpu):
    run = timeline(cpu, gpu, calls=12)
    assert [c.enqueued for c in run] == pytest.approx([cpu * (i + 1) for i in range(12)])
    for i, c in enumerate(run):
        assert c.start >= c.enqueued and c.end == pytest.approx(c.start + gpu)
        if i: assert c.start >= run[i - 1].end
        assert c.start == pytest.approx(max(c.enqueued, run[i - 1].end if i else 0))   # and no later than that
    assert time_per_call(run) == pytest.approx(max(cpu, gpu))


@pytest.mark.parametrize('args', [(0, 5), (5, -1), ('5', 5), (True, 5), (5, 5, 0), (5, 5, 2.0)])
def test_bad_arguments_are_refused(args):
    with pytest.raises(ValueError):
        timeline(*args)
    with pytest.raises(ValueError):
        time_per_call(timeline(5, 5, calls=1))


def test_the_drawing_has_a_panel_per_run_with_both_lanes():
    fig = draw_timelines({'GPU-bound': (20, 60), 'CPU-bound': (25, 10)})
    axes = fig.axes
    assert len(axes) == 2
    for ax in axes:
        assert [t.get_text() for t in ax.get_yticklabels()] == ['GPU', 'CPU']
        assert len(ax.collections) == 12                               # 6 calls, on 2 lanes
    assert '60 µs a call' in axes[0].get_title() and '25 µs a call' in axes[1].get_title()
    assert 'waiting 0%' in axes[0].get_title() and 'waiting 0%' not in axes[1].get_title()
