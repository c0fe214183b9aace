"""The exercises and their checker (course.exercises, course.checked_simulator).

Every reference solution in solutions/ passes its check, and every untouched skeleton in
notebooks/exercises/ fails it with the checker's sentence, not with a crash or a hang. On a CPU-only
machine that covers the simulators, Numba's simulator and nvcc's machine code; on a GPU, the same tests
also run the kernels, compute-sanitizer and the speed targets. Then the checker's own parts: races,
deadlocks, out-of-bounds indices and traffic counts are found in kernels written to have them."""
import json, re, subprocess, sys, threading

import pytest
import torch

from conftest import ROOT
from course import exercises
from course.checked_simulator import (KernelFault, Trace, buffers, dim3, run_grid, run_threaded_blocks)
from course.exercise_checks import NotYet, compare

IDS = list(exercises.EXERCISES)
NOTEBOOKS = sorted({exercises.EXERCISES[i].notebook for i in IDS})
_namespaces = {}


def namespace(kind, nb):
    "The solutions' or the untouched skeletons' definitions for notebook nb, loaded once per session."
    if (kind, nb) not in _namespaces:
        _namespaces[(kind, nb)] = (exercises.solution_namespace(nb) if kind == 'solution'
                                   else exercises.notebook_namespace(nb))
    return _namespaces[(kind, nb)]


def test_every_notebook_has_at_least_two_exercises():
    lessons = sorted(p.name[:2] for p in (ROOT / 'notebooks').glob('[0-9]*.ipynb') if p.name[:2] <= '10')
    assert NOTEBOOKS == lessons
    for nb in NOTEBOOKS: assert sum(i.startswith(nb + '.') for i in IDS) >= 2, nb


@pytest.mark.parametrize('exercise_id', IDS)
def test_reference_solution_passes(exercise_id):
    report = exercises.run_check(exercise_id, namespace('solution', exercises.EXERCISES[exercise_id].notebook))
    assert report.success, report.text()
    assert report.passed, "a check that passes must say what it checked"


@pytest.mark.parametrize('exercise_id', IDS)
def test_untouched_skeleton_fails_with_a_sentence(exercise_id):
    report = exercises.run_check(exercise_id, namespace('skeleton', exercises.EXERCISES[exercise_id].notebook))
    assert not report.success, f"the skeleton of {exercise_id} passes its check:\n{report.text()}"
    assert len(report.failure) > 30 and 'Traceback' not in report.failure, report.failure


@pytest.mark.parametrize('nb', NOTEBOOKS)
def test_skeletons_and_solutions_define_the_same_names(nb):
    "Each exercise cell defines what its solution defines, so that the checker finds the learner's work."
    path = exercises.exercise_notebook(nb)
    cells = [''.join(c['source']) for c in json.loads(path.read_text())['cells'] if c['cell_type'] == 'code']
    skeleton_names = set()
    for src in cells:
        if src.startswith(exercises.EXERCISE_MARK):
            skeleton_names |= set(re.findall(r'^(?:def |class )?([A-Za-z_]\w*)(?:\(| =)', src, re.M))
    solution = exercises.solution_file(nb).read_text()
    for name in skeleton_names:
        assert re.search(rf'^(?:def |class )?{name}\b|\bimport .* as {name}$', solution, re.M), f"solutions/{nb}: {name} missing"


def test_command_line_passes_on_solutions_and_fails_on_skeletons():
    run = lambda *a: subprocess.run([sys.executable, '-m', 'course.exercises', *a], cwd=ROOT, capture_output=True, text=True, timeout=600)
    good, bad = run('01', '04.1', '--solutions'), run('01.1')
    assert good.returncode == 0, good.stdout + good.stderr
    assert '3 of 3 passed' in good.stdout
    assert bad.returncode == 1 and 'FIX' in bad.stdout and 'a bound check is missing' in bad.stdout, bad.stdout + bad.stderr


def test_check_reads_the_callers_definitions(capsys):
    "In a notebook, check('01.1') finds transpose_bk among the caller's globals."
    ns = dict(namespace('solution', '01'))
    exec("from course.exercises import check\ncheck('01.1')", ns)
    out = capsys.readouterr().out
    assert 'Exercise 01.1' in out and ': passed' in out, out


# --------------------------------------------------------------------------------------------------
# The checking simulator finds what it is meant to find
# --------------------------------------------------------------------------------------------------

def run_tiled(kernel, h=5, k=9, w=3, tw=4):
    trace = Trace()
    b = buffers(trace, m=torch.rand(h, k), n=torch.rand(k, w), out=torch.zeros(h, w))
    run_threaded_blocks(kernel, dim3(-(-w // tw), -(-h // tw)), dim3(tw, tw), 2 * tw * tw, b['m'], b['n'], b['out'],
                        h, w, k, tw=tw, trace=trace)
    return trace


def test_a_missing_first_barrier_is_a_race():
    def no_barrier_before_reading(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tw):
        tc, tr = threadIdx.x, threadIdx.y
        shared[tr*tw + tc] = 1.0
        p = sum(shared[tr*tw + i] for i in range(tw))   # reads the neighbours' writes with no barrier
        syncb.wait()
    with pytest.raises(KernelFault, match='a barrier is missing'):
        run_tiled(no_barrier_before_reading)


def test_a_barrier_inside_an_if_is_a_deadlock_not_a_hang():
    def barrier_in_if(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tw):
        if threadIdx.x == 0: return
        syncb.wait()
    result = []
    t = threading.Thread(target=lambda: result.append(pytest.raises(KernelFault, run_tiled, barrier_in_if)))
    t.start(); t.join(timeout=60)
    assert not t.is_alive(), "the simulator hung"
    assert 'deadlock' in str(result[0].value)


def test_out_of_bounds_and_negative_indices_are_caught():
    trace = Trace()
    b = buffers(trace, m=torch.rand(6))
    def reads_past_the_end(blockIdx, threadIdx, blockDim, m): m[threadIdx.x * 2]
    def reads_negative(blockIdx, threadIdx, blockDim, m): m[threadIdx.x - 1]
    with pytest.raises(KernelFault, match=r'thread \(x=3, y=0\) of block \(x=0, y=0\) reads m\[6\], outside'):
        run_grid(reads_past_the_end, dim3(1), dim3(4), b['m'], trace=trace)
    with pytest.raises(KernelFault, match=r'reads m\[-1\]'):
        run_grid(reads_negative, dim3(1), dim3(4), b['m'], trace=trace)


def test_traffic_is_counted_per_thread_and_per_buffer():
    trace = Trace()
    b = buffers(trace, m=torch.rand(8), out=torch.zeros(4))
    def sums(blockIdx, threadIdx, blockDim, m, out):
        out[threadIdx.x] = sum(m[i] for i in range(threadIdx.x + 1))
    run_grid(sums, dim3(1), dim3(4), b['m'], b['out'], trace=trace)
    assert trace.most('m', 'read') == (4, ((0, 0), (3, 0)))
    assert trace.most('global', 'write')[0] == 1


def test_two_threads_writing_one_output_is_caught():
    trace = Trace()
    b = buffers(trace, out=torch.zeros(4))
    def same_element(blockIdx, threadIdx, blockDim, out): out[0] = 1.0
    with pytest.raises(KernelFault, match='wrote too'):
        run_grid(same_element, dim3(1), dim3(2), b['out'], trace=trace)


def test_compare_names_the_first_wrong_element():
    good = torch.arange(6.).reshape(2, 3)
    bad = good.clone(); bad[1, 2] = 0
    compare(good, good.clone(), 'same')
    with pytest.raises(NotYet, match=r'element \[1, 2\] is 0, expected 5 \(1 of 6'):
        compare(bad, good, 'x')
    with pytest.raises(NotYet, match='is 2 x 2, expected 2 x 3'):
        compare(torch.zeros(2, 2), good, 'x')
