"""The exercise checker (course.exercises) and its checking simulator (course.checked_simulator).

Every reference solution passes its check (or, where this machine lacks what a part needs, is 'not
checked here' with everything else passing), and every untouched skeleton fails with a sentence. The
checker gives the same verdict in Jupyter as under `make check`, stops an endless loop, survives a
SyntaxError in one notebook, keeps the notebook's CUDA context when a kernel faults, and gives graded
hints. The wrong answers of tests/wrong_answers are tested in test_wrong_answers.py."""
import json, re, shutil, subprocess, sys, threading, time

import pytest
import torch

from conftest import HAS_GPU, ROOT, gpu
from course import exercises
from course.checked_simulator import KernelFault, Trace, buffers, dim3, run_grid, run_threaded_blocks
from course.exercises import NOT_CHECKED, NOT_YET, PASSED
from course.exercises.learner_code import notebook_work, solution_work
from course.exercises.parts import NotYet, compare

IDS = list(exercises.EXERCISES)
NOTEBOOKS = sorted({exercises.EXERCISES[i].notebook for i in IDS})
# What a skipped part may need: the only reasons a verdict may stop at 'not checked here'.
MISSING_THINGS = r'GPU|nvcc|cuobjdump|compute-sanitizer|ncu|SASS'


def test_every_lesson_notebook_has_at_least_two_exercises():
    lessons = sorted(p.name[:2] for p in (ROOT / 'notebooks').glob('[0-9]*.ipynb') if p.name[:2] != '15')
    assert NOTEBOOKS == lessons
    for nb in NOTEBOOKS: assert sum(i.startswith(nb + '.') for i in IDS) >= 2, nb


@pytest.mark.parametrize('exercise_id', IDS)
def test_reference_solution_passes(exercise_id):
    report = exercises.run_check(exercise_id, solution_work(exercises.EXERCISES[exercise_id].notebook))
    assert report.outcome != NOT_YET, report.text()
    assert report.passed, "a check that passes must say what it checked"
    if report.outcome == NOT_CHECKED:
        for line in report.skipped: assert re.search(MISSING_THINGS, line), line
        assert not HAS_GPU or 'GPU' not in ' '.join(report.skipped), report.text()


@pytest.mark.parametrize('exercise_id', IDS)
def test_untouched_skeleton_fails_with_a_sentence(exercise_id):
    report = exercises.run_check(exercise_id, notebook_work(exercises.EXERCISES[exercise_id].notebook))
    assert report.outcome == NOT_YET, f"the skeleton of {exercise_id}:\n{report.text()}"
    assert len(report.failure) > 30 and 'Traceback' not in report.failure, report.failure


@pytest.mark.parametrize('nb', NOTEBOOKS)
def test_every_exercise_cell_has_a_solution_section_and_a_check_cell(nb):
    "The checker finds the learner's work: one `#| exercise` cell per exercise, followed by its check cell."
    cells = [''.join(c['source']) for c in json.loads(exercises.learner_code.exercise_notebook(nb).read_text())['cells']
             if c['cell_type'] == 'code']
    ids = [i for i in IDS if i.startswith(nb + '.')]
    marks = [re.match(r'#\| exercise (\S+)', c).group(1) for c in cells if c.startswith('#| exercise')]
    assert marks == ids
    for i in ids: assert f"check('{i}')" in cells[cells.index(next(c for c in cells if c.startswith(f'#| exercise {i}\n'))) + 1]
    _, sections = exercises.learner_code.solution_sections(nb)
    assert sorted(sections) == ids
    assert any('import check, hint' in c for c in cells if c.startswith('#| export'))


# --------------------------------------------------------------------------------------------------
# Outcomes, exit codes, hints
# --------------------------------------------------------------------------------------------------

def run_cli(*args, env=None, timeout=900):
    import os
    return subprocess.run([sys.executable, '-m', 'course.exercises', *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=dict(os.environ, **(env or {})))


def test_command_line_passes_on_solutions_and_fails_on_skeletons():
    good, bad = run_cli('01', '04.2', '--solutions'), run_cli('01.1')
    assert good.returncode == 0, good.stdout + good.stderr
    assert re.search(r'^3 passed, 0 not yet, 0 not checked here$', good.stdout, re.M), good.stdout
    assert bad.returncode == 1, bad.stdout + bad.stderr
    assert 'FIX' in bad.stdout and 'a bound check is missing' in bad.stdout and 'make hint EX=01.1' in bad.stdout
    assert re.search(r'^0 passed, 1 not yet, 0 not checked here$', bad.stdout, re.M), bad.stdout


@pytest.mark.skipif(HAS_GPU, reason="on a GPU machine the CUDA C exercises run, and pass")
def test_a_cuda_exercise_is_not_checked_here_without_a_gpu():
    "On a CPU-only machine a CUDA C exercise compiles at best: 'not checked here', which does not fail the command."
    run = run_cli('06.1', '--solutions')
    assert run.returncode == 0, run.stdout + run.stderr
    assert re.search(r'Exercise 06\.1 .*: not checked here', run.stdout), run.stdout
    assert re.search(r'^0 passed, 0 not yet, 1 not checked here$', run.stdout, re.M), run.stdout


def exercises_with_cell_edited(tmp_path, exercise_id, edit):
    "A copy of the exercise notebooks in which `edit` (source -> source) has changed exercise_id's cell; its folder."
    folder = tmp_path / 'exercises'
    shutil.copytree(ROOT / 'notebooks' / 'exercises', folder)
    path = next(folder.glob(f'{exercise_id.split(".")[0]}_*.ipynb'))
    nb = json.loads(path.read_text())
    cell = next(c for c in nb['cells'] if ''.join(c['source']).startswith(f'#| exercise {exercise_id}\n'))
    cell['source'] = edit(''.join(cell['source']))
    path.write_text(json.dumps(nb))
    return folder


def test_a_syntax_error_in_one_notebook_leaves_the_others_checked(tmp_path):
    "A SyntaxError is reported with its cell and line; an unreadable notebook is reported; the rest are still checked."
    folder = exercises_with_cell_edited(tmp_path, '04.2', lambda source: source.replace('p = 0.', 'p = 0.)', 1))
    next(folder.glob('02_*.ipynb')).write_text('{"cells": [')            # not JSON any more
    run = run_cli('02', '04', '01', env={'COURSE_EXERCISE_DIR': str(folder)})
    assert run.returncode == 1
    out = run.stdout
    assert re.search(r"04\.2 .*: not yet\n  FIX   the `#\| exercise 04\.2` cell does not compile: SyntaxError at line 7", out), out
    assert re.search(r"02\.1 .*: not yet\n  FIX   the notebook could not be read", out), out
    assert re.search(r"Exercise 01\.1 .*: not yet\n  FIX   transpose_bk", out), out     # still checked after them
    assert 'Traceback' not in out + run.stderr


def test_code_that_ends_the_process_itself_does_not_pass(tmp_path):
    "os._exit(0) in a notebook's code ends the check's process with status 0: the command must still say 'not passed'."
    folder = exercises_with_cell_edited(tmp_path, '13.1', lambda source: source + '\nimport os\nos._exit(0)\n')
    run = run_cli('13.1', env={'COURSE_EXERCISE_DIR': str(folder)})
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'The check ended before its verdict' in run.stdout and 'os._exit' in run.stdout, run.stdout


def test_hints_are_graded(capsys):
    exercises._hints_given.clear()
    def printed(*args):
        assert exercises.hint(*args) is None                 # printed once, not shown again by Jupyter
        return capsys.readouterr().out
    first, second, third = (printed('04.2') for _ in range(3))
    assert first.startswith('Hint 1') and second.startswith('Hint 2') and first != second
    assert 'solutions/04_threads_and_barriers.py' in third
    assert printed('04.1', 2).startswith('Hint 2 for 04.1') and printed('04.1').startswith('The reference solution')
    with pytest.raises(ValueError, match='level'): exercises.hint('04.1', 0)
    for i in IDS:
        ex = exercises.EXERCISES[i]
        assert len(ex.hints) == 2 and all(len(h) > 40 for h in ex.hints), i
    run = run_cli('--hint', '03.1', '--level', '2')
    assert run.returncode == 0 and run.stdout.startswith('Hint 2 for 03.1'), run.stdout


def test_check_reads_the_callers_definitions_outside_jupyter(capsys):
    "Called from plain Python (no IPython), check('01.1') uses the caller's globals."
    _, sections = exercises.learner_code.solution_sections('01')
    ns = {}
    exec(compile(sections['01.1'], '<solution>', 'exec'), ns)
    exec("from course.exercises import check\ncheck('01.1')", ns)
    out = capsys.readouterr().out
    assert 'Exercise 01.1' in out and ': passed' in out, out


# --------------------------------------------------------------------------------------------------
# The learner's faults: endless loops, faulting GPU kernels
# --------------------------------------------------------------------------------------------------

ENDLESS = '''
def transpose_bk(blockIdx, threadIdx, blockDim, m, out, h, w):
    r = blockIdx.y*blockDim.y + threadIdx.y
    c = blockIdx.x*blockDim.x + threadIdx.x
    i = 0
    while i < 1:
        x = r + c
    if r < h and c < w: out[c*h + r] = m[r*w + c]
'''


def test_an_endless_loop_is_stopped_and_named_with_no_thread_left():
    before = threading.active_count()
    t0 = time.monotonic()
    report = exercises.run_check('01.1', solution_work('01', {'01.1': ENDLESS}))
    assert time.monotonic() - t0 < 30
    assert report.outcome == NOT_YET
    assert re.search(r"thread \(x=0, y=0\) of block \(x=0, y=0\) was still running after \d+ s, in the loop `while "
                     r"i < 1:` at line 7 of the `#\| exercise 01\.1` cell", report.failure), report.failure
    time.sleep(0.5)
    assert threading.active_count() == before, threading.enumerate()


@gpu
def test_a_faulting_gpu_kernel_leaves_this_process_usable():
    "A kernel that writes far outside its output fails its check in a child process; this process's CUDA still works."
    preamble, sections = exercises.learner_code.solution_sections('06')
    body = preamble + sections['06.1']
    wild = re.sub(r'(\w+)\[(\(?r\)?\s*\*\s*w\s*\+\s*c)\]\s*=', r'\1[(\2) * 1000000] =', body, count=1)
    assert wild != body, "the solution's store into out was not found"
    report = exercises.run_check('06.1', solution_work('06', {'06.1': wild}))
    assert report.outcome == NOT_YET
    assert re.search(r'crashed the GPU|out of bounds on the GPU|outside', report.failure), report.failure
    assert torch.ones(4, device='cuda').sum().item() == 4


@gpu
def test_a_gpu_kernel_that_never_ends_is_stopped(monkeypatch):
    "A kernel that spins forever: the child process is stopped after the kernel step's time, with a sentence."
    monkeypatch.setenv('COURSE_CHECK_KERNEL_S', '20')
    preamble, sections = exercises.learner_code.solution_sections('06')
    body = preamble + sections['06.1']
    spin = body.replace('__syncthreads();', '__syncthreads(); while (clock64() >= 0) {}', 1)  # clock64 cannot be optimised away
    assert spin != body
    t0 = time.monotonic()
    report = exercises.run_check('06.1', solution_work('06', {'06.1': spin}))
    assert time.monotonic() - t0 < 120
    assert report.outcome == NOT_YET
    assert re.search(r'heard nothing from your code for 20 s and stopped it: a kernel that never ends', report.failure), report.failure
    assert torch.ones(4, device='cuda').sum().item() == 4


# --------------------------------------------------------------------------------------------------
# The same verdicts in Jupyter as under make check
# --------------------------------------------------------------------------------------------------

def jupyter_cases(nb):
    "(exercise id, cell body, what it is) for the solution and every recorded wrong answer of notebook nb."
    from wrong_answers import all_wrong_answers, case_id
    preamble, sections = exercises.learner_code.solution_sections(nb)
    cases = [(i, preamble + sections[i], 'solution') for i in sorted(sections)]
    return cases + [(w.exercise, w.cell_body(), case_id(w)) for w in all_wrong_answers() if w.notebook == nb]


def verdict_of(text):
    "(outcome, FIX sentence or None) from a check's printed report."
    outcome = re.search(r'^Exercise \S+ \(.*\): (passed|not yet|not checked here)$', text, re.M)
    fix = re.search(r'^  FIX   (.*?)(?=^  HINT|^  not checked here|\Z)', text, re.M | re.S)
    return (outcome.group(1) if outcome else None), (fix.group(1).strip() if fix else None)


def same_sentence(a, b):
    "Equal, but for where a stopped endless loop was last seen (the instant the watchdog looked)."
    drop = lambda s: re.sub(r' \(last seen at line \d+: `[^`]*`\)', '', (s or '').strip())
    return drop(a) == drop(b)


@pytest.mark.notebook
@pytest.mark.parametrize('nb', NOTEBOOKS)
def test_jupyter_and_make_check_give_the_same_verdicts(nb, tmp_path):
    """Every solution and wrong answer of notebook nb, run in a Jupyter kernel (cell, then its check cell) and
    through the saved-notebook loader of `make check`: the same outcome and the same sentence."""
    import nbformat
    from tools.run_notebooks import execute_notebook
    cases = jupyter_cases(nb)
    saved = json.loads(exercises.learner_code.exercise_notebook(nb).read_text())
    setup = [''.join(c['source']) for c in saved['cells'] if ''.join(c['source']).startswith('#| export')]
    cells = [nbformat.v4.new_code_cell(s) for s in setup]
    for i, body, _ in cases:
        cells += [nbformat.v4.new_code_cell(f'#| exercise {i}\n{body}'), nbformat.v4.new_code_cell(f"check('{i}')")]
    notebook = nbformat.v4.new_notebook(cells=cells)
    error = execute_notebook(notebook, ROOT / 'notebooks' / 'exercises', timeout=900, allow_errors=True)
    assert error is None, error
    outputs = [''.join(o.get('text', '') for o in c.outputs if o.get('output_type') == 'stream')
               for c in notebook.cells[len(setup) + 1::2]]
    for (i, body, what), jupyter_text in zip(cases, outputs):
        report = exercises.run_check(i, solution_work(nb, {i: body}))
        in_jupyter = verdict_of(jupyter_text)
        assert in_jupyter[0] == report.outcome, f"{i} {what}: Jupyter says {jupyter_text!r}, make check says {report.text()}"
        if report.failure and not re.search(r'\d+\.\d+ ms', report.failure):     # timings differ from run to run
            assert same_sentence(in_jupyter[1], report.failure), f"{i} {what}:\nJupyter:    {in_jupyter[1]}\nmake check: {report.failure}"


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


def test_a_barrier_some_threads_skip_is_a_deadlock_not_a_hang():
    def barrier_in_if(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tw):
        if threadIdx.x == 0: return
        syncb.wait()
    result = []
    t = threading.Thread(target=lambda: result.append(pytest.raises(KernelFault, run_tiled, barrier_in_if)))
    t.start(); t.join(timeout=60)
    assert not t.is_alive(), "the simulator hung"
    assert 'deadlock' in str(result[0].value)


def test_threads_at_different_barriers_are_out_of_step():
    def two_sites(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tw):
        if threadIdx.y == 0: syncb.wait()
        else: syncb.wait()
    with pytest.raises(KernelFault, match='barriers out of step'):
        run_tiled(two_sites)


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


# --------------------------------------------------------------------------------------------------
# Barrier placement, read from the source
# --------------------------------------------------------------------------------------------------

def test_barrier_placement_in_cuda_c():
    from course.exercises.barrier_placement import cuda_barrier_problems
    src = '''
__global__ void k(const float* a, float* o, int n, int tw) {
    __shared__ float s[32];
    int i = threadIdx.x, r = blockIdx.y * 32 + i;
    for (int p = 0; p < n; p += 32) {
        s[i] = a[i];
        if (tw > 8) __syncthreads();          // the same for every thread: fine
        if (r < n) {
            o[r] = s[31 - i];
            __syncthreads();
        }
    }
}
__global__ void g(float* a, int n) {
    int c = threadIdx.x;
    if (c >= n) return;
    __syncthreads();
}
'''
    found = cuda_barrier_problems(src)
    assert len(found) == 2
    assert re.match(r'the __syncthreads\(\) at line 10 \(k\) is inside `if \(r < n\)` \(line 8\)', found[0]), found[0]
    assert re.match(r'the `return` at line 16 \(g\) comes before the __syncthreads\(\) at line 17', found[1]), found[1]


def test_barrier_placement_in_python_loops():
    import ast
    from course.exercises.barrier_placement import python_barrier_problems
    def kernel(body):
        return ast.parse("def k(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tw):\n"
                         "    tc = threadIdx.x\n    ms = shared[:tw]\n    p = 0.\n    for ph in range(k):\n" + body)
    fill, use, wait = "        ms[tc] = m[ph]\n", "        p += ms[0]\n", "        syncb.wait()\n"
    assert python_barrier_problems(kernel(fill + wait + use + wait)) == []
    assert 'no barrier between filling' in python_barrier_problems(kernel(fill + use + wait + wait))[0]
    assert 'the next pass of the loop' in python_barrier_problems(kernel(fill + wait + wait + use))[0]
    assert 'inside the `if`' in python_barrier_problems(kernel(fill + "        if tc < 2: syncb.wait()\n" + use + wait))[0]
    assert python_barrier_problems(kernel(fill + "        if tw > 2: syncb.wait()\n" + use + wait)) == []


def test_barrier_placement_in_numba_kernels_sees_cuda_grid_as_a_thread_index():
    import ast
    from course.exercises.barrier_placement import python_barrier_problems
    def kernel(index, guard):
        return ast.parse("def k(m, v, out):\n    t = cuda.threadIdx.x\n" + index +
                         "    vs = cuda.shared.array(32, numba.float32)\n    acc = 0.\n    for c0 in range(0, 64, 32):\n"
                         "        vs[t] = v[c0 + t]\n" + guard + "        acc += vs[0]\n        cuda.syncthreads()\n")
    for index, cond in (("    r = cuda.grid(1)\n", "r < 5"), ("    r, c = cuda.grid(2)\n", "c < 5"), ("", "cuda.grid(1) < 5")):
        found = python_barrier_problems(kernel(index, f"        if {cond}: cuda.syncthreads()\n"))
        assert found and re.match(r"the barrier at line \d+ is inside the `if` of line \d+", found[0]), (index, cond, found)
        assert python_barrier_problems(kernel(index, "        cuda.syncthreads()\n")) == []
    assert python_barrier_problems(kernel("    r = cuda.gridsize(1)\n", "        if r < 5: cuda.syncthreads()\n")) == []


def test_watchdog_interrupts_only_code_that_would_pass_the_exception_on():
    """The watchdog raises its timeout in a thread only while that thread runs the learner's code, the course's or
    a barrier's wait: not inside someone else's callback (pytest's garbage-collector hook, say), which would
    swallow it and leave the loop running."""
    from course.exercises.watchdog import interruptible
    stop, done = threading.Event(), [False]
    foreign = {}       # a loop whose every line is in a file that is neither the learner's, the course's nor threading's
    exec(compile("def spin(done):\n    while not done[0]: pass\n", '/elsewhere/callback.py', 'exec'), foreign)
    waiting = threading.Thread(target=stop.wait, daemon=True)
    spinning = threading.Thread(target=foreign['spin'], args=(done,), daemon=True)
    waiting.start(); spinning.start()
    try:
        time.sleep(0.05)
        assert interruptible(waiting.ident)
        assert not interruptible(spinning.ident)
        assert not interruptible(-1)
    finally:
        stop.set()
        done[0] = True
