"""The fair comparison's arithmetic (course/timing.py) and the parsing of Nsight Compute's CSV
(course/profiling.py): what every speed claim and counter of the course rests on, checked without a GPU (and, on a GPU, the loop that measures a call's cost)."""
import subprocess
import time

import pytest
import torch

from conftest import gpu

from course import profiling
from course.timing import Spread, rounds_to_run, spread, verdict


def test_spread_is_median_and_quartiles():
    s = spread([5.0, 1.0, 3.0, 2.0, 4.0])
    assert (s.median, s.q1, s.q3) == (3.0, 2.0, 4.0) and sorted(s.samples) == [1, 2, 3, 4, 5]
    assert str(s) == "3.000 ms (middle half 2.000-4.000)"


def test_verdict_needs_separate_middle_halves():
    fast, slow = spread([1.0, 1.01, 1.02, 1.03]), spread([1.10, 1.11, 1.12, 1.13])
    assert verdict(fast, slow) == 'faster' and verdict(slow, fast) == 'slower'
    overlapping = spread([1.0, 1.05, 1.15, 1.2])
    assert verdict(overlapping, slow) == 'on par' and verdict(slow, overlapping) == 'on par'


def test_verdict_calls_a_tiny_difference_on_par():
    "Middle halves apart but medians within 2%: a difference a rerun can reverse is not a claim."
    a, b = Spread(1.000, 0.999, 1.001, ()), Spread(1.010, 1.009, 1.011, ())
    assert verdict(a, b) == 'on par' and verdict(b, a) == 'on par'
    assert verdict(a, b, margin=0.005) == 'faster'


def test_rounds_to_run_stretches_only_short_comparisons():
    "Rounds of a 0.06 ms product (about 0.5 ms each) are added up to min_seconds; long rounds keep `rounds`."
    assert rounds_to_run(20, 0.0005, 0.2) == 400                 # 20 rounds would last 10 ms
    assert rounds_to_run(20, 0.08, 0.2) == 20                    # 6000³: 20 rounds already last 1.6 s
    assert rounds_to_run(20, 0.0005, 0.0) == 20                  # without min_seconds: as asked
    assert rounds_to_run(20, 1e-7, 0.2) == 1000                  # capped
    assert rounds_to_run(20, 1e-7, 0.2, most=50) == 50
    with pytest.raises(ValueError, match='at least 1'): rounds_to_run(0, 0.01, 0.2)


CSV = '''==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python","h","spin_kernel","1","7","Command line profiler metrics","dram__bytes_read.sum","byte","0"
"1","1","python","h","gemm_a","1","7","Command line profiler metrics","dram__bytes_read.sum","byte","10,485,760"
"1","1","python","h","gemm_a","1","7","Command line profiler metrics","dram__bytes_write.sum","byte","n/a"
"2","1","python","h","reduce","1","7","Command line profiler metrics","dram__bytes_read.sum","byte","2048"
'''


def fake_ncu(stdout, monkeypatch):
    monkeypatch.setattr(profiling, 'ncu_unavailable', lambda: None)
    monkeypatch.setattr(profiling, 'cuda_tool', lambda name: '/usr/bin/ncu')
    seen = {}
    def run(cmd, **kwargs):
        seen['cmd'] = cmd
        return subprocess.CompletedProcess(cmd, 0, stdout, '==ERROR== something went wrong\n')
    monkeypatch.setattr(profiling.subprocess, 'run', run)
    return seen


def test_ncu_launches_lists_every_launch_in_order(monkeypatch):
    seen = fake_ncu(CSV, monkeypatch)
    launches = profiling.ncu_launches('pass', '.', counters=['dram__bytes_read.sum', 'dram__bytes_write.sum'])
    assert [name for name, _ in launches] == ['spin_kernel', 'gemm_a', 'reduce']
    assert launches[1][1]['dram__bytes_read.sum'] == 10485760
    assert launches[1][1]['dram__bytes_write.sum'] != launches[1][1]['dram__bytes_write.sum']      # n/a: NaN
    assert seen['cmd'][seen['cmd'].index('--print-units') + 1] == 'base'      # bytes, not scaled to MB
    assert profiling.ncu_counters('pass', '.', counters=['dram__bytes_read.sum']) == {'dram__bytes_read.sum': 2048}


def test_ncu_that_reads_nothing_says_why(monkeypatch):
    fake_ncu('==PROF== Disconnected\n', monkeypatch)
    with pytest.raises(RuntimeError, match='something went wrong'):
        profiling.ncu_launches('pass', '.', counters=['dram__bytes_read.sum'])


@gpu
def test_cpu_us_per_call_counts_the_cpu_s_work_not_the_gpu_s():
    "A call that spends 200 µs on the CPU costs about 200 µs; one that queues 1 ms of GPU work costs far less than 1 ms."
    from course.timing import cpu_us_per_call
    x = torch.zeros(1000, device='cuda')
    def busy_cpu():
        until = time.perf_counter() + 200e-6
        while time.perf_counter() < until: pass
        x.add_(1)
    assert 200 <= cpu_us_per_call(busy_cpu, calls=50, warmup=5) < 400
    assert x[0].item() == 55
    def busy_gpu(): torch.cuda._sleep(2_000_000)                  # 2 million clock cycles: 1 to 2 ms on a GPU
    start = time.perf_counter()
    assert cpu_us_per_call(busy_gpu, calls=20, warmup=1) < 200
    assert time.perf_counter() - start > 20e-3                    # but the GPU's 21 calls were waited for


@gpu
def test_the_flushed_timer_hides_the_cpus_work_for_a_call_only_when_asked():
    "A call that spends 80 µs on the CPU before a tiny kernel: seen by the flushed timer, unless the GPU spins first."
    from course.timing import flushed_rounds_ms, spread
    x = torch.zeros(1000, device='cuda')
    def slow_to_launch(v):
        until = time.perf_counter() + 80e-6
        while time.perf_counter() < until: pass
        v.add_(1)
    plain, hidden = (spread(flushed_rounds_ms({'call': slow_to_launch}, [(x,)], rounds=20, hide_cpu=hide)['call']).median
                     for hide in (False, True))
    assert hidden < 0.02 < plain, (hidden, plain)          # a flush of twice L2 takes tens of µs; the add, a few


def test_a_comparison_is_told_in_two_short_lines():
    from course.timing import Spread, describe_against
    ours, ref = Spread(2.065, 2.064, 2.066, ()), Spread(2.555, 2.555, 2.556, ())
    first, second = describe_against('Numba, constant tw, unsigned indices (09)', ours, 'template tw=16 (07)', ref).split('\n')
    assert first == "Numba, constant tw, unsigned indices (09): 0.81x template tw=16 (07)'s time: faster"
    assert second == "    2.065 ms (middle half 2.064-2.066), against 2.555 ms (middle half 2.555-2.556)"


def test_a_step_is_told_against_the_reference_and_the_step_before():
    from course.timing import Spread, step_line
    times = {'cuBLAS': Spread(1.0, 0.99, 1.01, ()), 'a': Spread(2.0, 1.98, 2.02, ()),
             'b': Spread(1.0, 0.99, 1.01, ())}
    line = step_line(times, 'b', before='a', reference='cuBLAS', flop=2e12)
    assert line == ("b: 1.000 ms, 2000 TFLOP/s; 1.00x cuBLAS's speed (on par); 2.00x a's speed (faster)")
    assert step_line(times, 'a', before='missing', reference='cuBLAS') == "a: 2.000 ms; 0.50x cuBLAS's speed (slower)"
    assert step_line(times, 'a') == "a: 2.000 ms"
