"""Parts of the exercise checks tested on their own, on any machine: the reading of CUDA C loops that never end
(course/exercises/endless_loops.py), and 09.2's test of whether a timer waits for a GPU, run against the check's
stand-in GPU (lesson_09.FakeGPU) in place of torch.cuda."""
import statistics, time, types

import pytest
import torch

from course.exercises import lesson_09
from course.exercises.endless_loops import endless_loop_problems
from course.exercises.learner_code import Cell, register, solution_sections
from course.exercises.verdict import NotYet, Report
from wrong_answers import lesson_09 as wrong_09


@pytest.mark.parametrize('loop', [
    "for (int i = 0; i < n; ) acc += x[i];",
    "for (int i = 0; i < n; ++j) acc += x[i];",
    "for (int i = 0; i < n; i + 4) acc += x[i];",
    "int i = 0; while (i < n) acc += x[i];",
    "int i = 0; do { acc += x[i]; } while (i < n);",
    "for (;;) acc += 1.0f;",
])
def test_a_loop_that_never_advances_is_named(loop):
    found = endless_loop_problems(f"__global__ void k(const float* x, float* out, int n) {{\n    float acc = 0.0f;\n    {loop}\n}}\n")
    assert len(found) == 1 and 'at line 3' in found[0] and 'never' in found[0], found


@pytest.mark.parametrize('loop', [
    "for (int i = 0; i < n; ) { acc += x[i]; i += 4; }",
    "int i = 0; do { acc += x[i]; ++i; } while (i < n);",
    "for (;;) { acc += 1.0f; if (acc > 9.0f) break; }",
    "for (int i = 0; i < n; ) step(i);",                  # step takes an int&: it may advance i
    "int i = 0; while (i < n) acc += x[i++];",
    "while (flags[0] == 0) ;",                            # waits on memory another thread writes
    "#pragma unroll\n    for (int t = 0; t < 4; ++t) acc += x[t];",
])
def test_a_loop_that_advances_or_may_is_not_named(loop):
    src = ("__device__ void step(int& i) { i += 2; }\n"
           f"__global__ void k(const float* x, volatile int* flags, int n) {{\n    float acc = 0.0f;\n    {loop}\n}}\n")
    assert endless_loop_problems(src) == []


def timer_of(answer, torch_module):
    "time_ms of a 09.2 answer's cell (from its `# Exercise 09.2` line), defined where `torch` is `torch_module`."
    body = answer[answer.index('# Exercise 09.2'):]
    cell = Cell(body, "the `#| exercise 09.2` cell")
    register(cell)
    names = {'torch': torch_module, 'statistics': statistics, 'time': time}
    exec(compile(body, cell.filename, 'exec'), names)
    return names['time_ms']


@pytest.fixture
def stand_in_gpu(monkeypatch):
    "torch.cuda replaced by the check's FakeGPU: _sleep queues 20 ms of work, synchronize waits for it, events say 20 ms."
    gpu = lesson_09.FakeGPU()
    monkeypatch.setattr(torch.cuda, '_sleep', lambda cycles: gpu.launch(20), raising=False)
    monkeypatch.setattr(torch.cuda, 'synchronize', gpu.sync)
    monkeypatch.setattr('course.timing.cuda_time_ms', lambda fn, *args, **kwargs: 20.0)
    fake_cuda = types.SimpleNamespace(is_available=lambda: True, synchronize=gpu.sync,
                                      current_stream=lambda: types.SimpleNamespace(query=lambda: True))
    yield types.SimpleNamespace(torch=types.SimpleNamespace(cuda=fake_cuda))
    gpu.close()


def test_a_timer_that_waits_for_the_gpu_passes(stand_in_gpu):
    report = Report('09.2', 'a timer you can trust', None)
    lesson_09.waits_for_the_gpu(timer_of(solution_sections('09')[1]['09.2'], stand_in_gpu.torch), report)
    assert report.passed == ["time_ms waits for the GPU: for one kernel that spins 20.00 ms (CUDA events) it gives about "
                             "that, with sync=torch.cuda.synchronize and with its default sync"]


def test_a_timer_whose_default_sync_does_not_wait_is_named(stand_in_gpu):
    polling = next(w for w in wrong_09.WRONG if 'query' in w.slip)
    with pytest.raises(NotYet, match=r"with its default sync \(torch\.cuda\.current_stream\(\)\.query .*\): the timer does not "
                                     r"wait for the GPU"):
        lesson_09.waits_for_the_gpu(timer_of(polling.cell_body(), stand_in_gpu.torch), Report('09.2', '', None))
