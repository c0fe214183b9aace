"""The course's exercises: what each one asks for, its check and its hints.

The exercises live in `notebooks/exercises/`, one notebook per lesson notebook: each exercise is a task, a
skeleton cell marked `#| exercise <id>` for the learner to complete, and a check cell, `check('<id>')`.
The reference solutions live apart, in `solutions/`, one Python file per exercise notebook.

Each check ends in one of three outcomes (see `verdict`): passed, not yet (with the sentence that says
what is wrong), or not checked here (all this machine could check holds; the rest needs a GPU, say).

In a notebook, `check('04.1')` checks the cells run so far; `hint('04.1')` gives a first hint, then a
more specific one, then where the solution is. From a shell, the same checks on the saved notebook:

    python -m course.exercises 04.1          # one exercise
    python -m course.exercises 04            # every exercise of notebook 04
    python -m course.exercises               # all of them
    python -m course.exercises --solutions   # the reference solutions instead of your notebooks
    python -m course.exercises --hint 04.1 [--level 2]

It exits with status 0 when no exercise is 'not yet', 1 otherwise. `make check EX=04.1` does the same in
the course's virtual environment (make itself exits with status 2 when the command fails)."""
import argparse, inspect, os, subprocess, sys, tempfile
from pathlib import Path
from collections import Counter

from .learner_code import jupyter_work, notebook_work, run_cells, solution_file, solution_work
from .registry import EXERCISES, exercise   # noqa: F401 (exercise: the lessons register with it)
from .verdict import NOT_CHECKED, NOT_YET, OUTCOMES, PASSED, NotYet, Report   # noqa: F401
from . import lesson_01, lesson_02, lesson_03, lesson_04, lesson_05, lesson_06, lesson_07, lesson_08, lesson_09, lesson_10, lesson_11, lesson_12, lesson_13, lesson_14, lesson_16, lesson_17  # noqa: E401,F401  (register every exercise)


def gpu_here():
    import torch
    return torch.cuda.is_available()


def run_check(exercise_id, work, namespace=None, errors=None):
    """Check exercise `exercise_id` on `work` (the learner's cells) and return its Report. The cells are run
    here unless `namespace` (and the `errors` its cells raised) are given. Where the exercise runs the
    learner's code on a GPU and there is one, the check runs in a child process instead."""
    from .isolation import check_in_child, in_child
    ex = EXERCISES[exercise_id]
    if ex.runs_on_gpu and work is not None and not in_child() and gpu_here():
        return check_in_child(ex, work)
    if namespace is None: namespace, errors = run_cells(work)
    report = Report(ex.id, ex.title, work)
    errors = errors or {}
    try:
        for key in (None, ex.id):
            if key in errors: raise NotYet(errors[key])
        ex.check(namespace, report)
    except NotYet as e:
        report.failure = str(e)
    return report


def check(exercise_id, namespace=None):
    """In an exercise notebook's check cell: check exercise `exercise_id` against the setup and exercise
    cells run so far in this notebook (each at its last run), and print what passed, what is wrong and what
    this machine could not check. It returns nothing, so that Jupyter shows the verdict once (`run_check` returns
    the Report itself)."""
    if exercise_id not in EXERCISES:
        raise KeyError(f"no exercise {exercise_id!r}; there are {', '.join(EXERCISES)}")
    work = None if namespace is not None else jupyter_work(EXERCISES[exercise_id].notebook)
    if work is not None and work.cells:
        report = run_check(exercise_id, work)
    else:   # outside Jupyter: the caller's own definitions
        ns = namespace if namespace is not None else inspect.currentframe().f_back.f_globals
        report = run_check(exercise_id, None, ns)
    report.hint_line = f"stuck? hint('{exercise_id}') gives a hint"
    print(report.text())


_hints_given = Counter()


def hint_text(exercise_id, level):
    ex = EXERCISES[exercise_id]
    if level <= len(ex.hints): return f"Hint {level} for {exercise_id}: {ex.hints[level - 1]}"
    return (f"The reference solution of {exercise_id} is in solutions/{solution_file(ex.notebook).name}, under "
            f"'# Exercise {exercise_id}' (or: make check EX={exercise_id} SOLUTIONS=1).")


def hint(exercise_id, level=None):
    """Print a hint for an exercise: the first call gives a first hint, the second a more specific one, the third
    where the solution is; `level` (1, 2 or 3, as `make hint LEVEL=2`) asks for one level directly. It returns
    nothing, so that Jupyter shows the hint once."""
    if exercise_id not in EXERCISES:
        raise KeyError(f"no exercise {exercise_id!r}; there are {', '.join(EXERCISES)}")
    if level is not None and (not isinstance(level, int) or level < 1):
        raise ValueError(f"level must be 1, 2 or 3, got {level!r}")
    _hints_given[exercise_id] = level if level is not None else _hints_given[exercise_id] + 1
    print(hint_text(exercise_id, _hints_given[exercise_id]))


def selected(args):
    "Exercise ids for command-line arguments: ids ('04.1'), notebooks ('04'), or none for all."
    if not args: return list(EXERCISES)
    ids = []
    for a in args:
        hits = [i for i in EXERCISES if i == a or i.split('.')[0] == a.zfill(2)]
        if not hits: raise SystemExit(f"no exercise {a!r}; there are {', '.join(EXERCISES)}")
        ids += hits
    return ids


def check_all(ids, solutions=False, out=print):
    "Check the exercises `ids` on the saved notebooks (or the solutions); return {id: Report}."
    reports, works, ran = {}, {}, {}
    for i in ids:
        ex = EXERCISES[i]
        if ex.notebook not in works:
            works[ex.notebook] = solution_work(ex.notebook) if solutions else notebook_work(ex.notebook)
        work = works[ex.notebook]
        in_child = ex.runs_on_gpu and gpu_here()      # run_check then runs the cells in its child process
        if not in_child and ex.notebook not in ran:
            ran[ex.notebook] = run_cells(work)       # the notebook's cells, once for its exercises checked here
        ns, errors = (None, None) if in_child else ran[ex.notebook]
        report = run_check(i, work, ns, errors)
        report.hint_line = f"stuck? make hint EX={i} (LEVEL=2 for a more specific one)"
        out(report.text())
        reports[i] = report
    return reports


def summary(reports):
    counts = Counter(r.outcome for r in reports.values())
    return ', '.join(f"{counts[o]} {o}" for o in OUTCOMES)


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m course.exercises', description=__doc__.split('\n\n')[0])
    parser.add_argument('exercises', nargs='*', help="ids such as 04.1, or notebook numbers such as 04 (default: all)")
    parser.add_argument('--solutions', action='store_true', help="check the reference solutions in solutions/")
    parser.add_argument('--hint', metavar='ID', help="print a hint for exercise ID instead of checking")
    parser.add_argument('--level', type=int, default=1, help="with --hint: 1, 2 (more specific) or 3 (where the solution is)")
    args = parser.parse_args(argv)
    if args.hint:
        if args.hint not in EXERCISES: raise SystemExit(f"no exercise {args.hint!r}; there are {', '.join(EXERCISES)}")
        print(hint_text(args.hint, args.level))
        return 0
    if VERDICT_FILE not in os.environ:      # the command itself: the check runs in a worker whose end it can watch
        return check_in_worker(sys.argv[1:] if argv is None else list(argv))
    reports = check_all(selected(args.exercises), args.solutions, out=lambda t: print(t, flush=True))
    print(f"\n{summary(reports)}", flush=True)
    code = 1 if any(r.outcome == NOT_YET for r in reports.values()) else 0
    Path(os.environ[VERDICT_FILE]).write_text(str(code))
    return code


# Where the worker of `check_in_worker` writes its exit status, as its very last act.
VERDICT_FILE = 'COURSE_EXERCISES_VERDICT'


def check_in_worker(argv):
    """Run the check in a child process, and take its verdict only from the file the child writes at the very end:
    a notebook's code that ends the process itself (os._exit, a crash of the interpreter) must not pass for a check
    that found nothing wrong."""
    with tempfile.TemporaryDirectory() as tmp:
        verdict = Path(tmp) / 'verdict'
        run = subprocess.run([sys.executable, '-m', 'course.exercises', *argv], env={**os.environ, VERDICT_FILE: str(verdict)})
        if verdict.exists(): return int(verdict.read_text())
    print(f"\nThe check ended before its verdict (exit status {run.returncode}): code in a notebook ended the Python "
          f"process itself (os._exit, or a crash of the interpreter). Remove that and check again.", flush=True)
    return 1
