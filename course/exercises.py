"""The course's exercises: what each one asks for, and its check.

The exercises live in `notebooks/exercises/`, one notebook per lesson notebook: each exercise is a task, a
skeleton cell marked `#| exercise <id>` for the learner to complete, and a check cell, `check('<id>')`,
which reads the learner's definitions from the notebook and says, in a sentence, what is still wrong.
The reference solutions live apart, in `solutions/`, one Python file per exercise notebook.

From a shell (the same checks, on the saved notebook):

    python -m course.exercises 04.1          # one exercise
    python -m course.exercises 04            # every exercise of notebook 04
    python -m course.exercises               # all of them
    python -m course.exercises --solutions   # the reference solutions instead of your notebooks

`make check EX=04.1` does the same in the course's virtual environment."""
import argparse, inspect, json, sys, types
from dataclasses import dataclass
from pathlib import Path

from .exercise_checks import NotYet, Report

ROOT = Path(__file__).resolve().parents[1]
EXERCISE_DIR = ROOT / 'notebooks' / 'exercises'
SOLUTION_DIR = ROOT / 'solutions'
EXERCISE_MARK = '#| exercise'
SETUP_MARK = '#| export'


@dataclass
class Exercise:
    id: str            # '04.1': notebook 04, first exercise
    title: str
    check: callable    # check(namespace, report): raises NotYet, or records what passed and what was skipped

    @property
    def notebook(self): return self.id.split('.')[0]


EXERCISES = {}


def exercise(id, title):
    "Register the decorated function as the check of exercise `id`."
    def register(check):
        EXERCISES[id] = Exercise(id, title, check)
        return check
    return register


def run_check(exercise_id, namespace):
    "Check the definitions in `namespace` (a dict) for exercise `exercise_id`; return its Report."
    ex = EXERCISES[exercise_id]
    report = Report(ex.id, ex.title)
    try: ex.check(namespace, report)
    except NotYet as e: report.failure = str(e)
    return report


def check(exercise_id, namespace=None):
    """In an exercise notebook's check cell: check exercise `exercise_id` against what the notebook
    defines, and print what passed, what is wrong and what this machine could not check."""
    if exercise_id not in EXERCISES:
        raise KeyError(f"no exercise {exercise_id!r}; there are {', '.join(EXERCISES)}")
    ns = namespace if namespace is not None else inspect.currentframe().f_back.f_globals   # the notebook's
    print(run_check(exercise_id, ns).text())


# --------------------------------------------------------------------------------------------------
# Where the learner's work and the solutions are
# --------------------------------------------------------------------------------------------------

def exercise_notebook(nb):
    hits = sorted(EXERCISE_DIR.glob(f'{nb}_*.ipynb'))
    if len(hits) != 1: raise FileNotFoundError(f"no exercise notebook {nb}_*.ipynb in {EXERCISE_DIR}")
    return hits[0]


def solution_file(nb):
    hits = sorted(SOLUTION_DIR.glob(f'{nb}_*.py'))
    if len(hits) != 1: raise FileNotFoundError(f"no solution file {nb}_*.py in {SOLUTION_DIR}")
    return hits[0]


def notebook_namespace(nb, path=None):
    """The definitions of an exercise notebook, as the learner saved it: its setup cells (`#| export`)
    and exercise cells (`#| exercise ...`) run in order in a fresh module; check cells are left out."""
    path = Path(path or exercise_notebook(nb))
    mod = types.ModuleType(f'exercises_{path.stem}')
    mod.__file__ = str(path)
    cells = [''.join(c['source']) for c in json.loads(path.read_text())['cells'] if c['cell_type'] == 'code']
    for i, src in enumerate(cells):
        if src.lstrip().startswith((SETUP_MARK, EXERCISE_MARK)):
            code = compile(src, f'{path.name}, cell {i + 1}', 'exec')
            try: exec(code, mod.__dict__)
            except Exception as e:   # the learner's cell itself fails: each check then says what is missing
                print(f"{path.name}, cell {i + 1} raised {type(e).__name__}: {e}", file=sys.stderr)
    return mod.__dict__


def solution_namespace(nb):
    "The reference solutions of notebook `nb`'s exercises, as a namespace."
    path = solution_file(nb)
    mod = types.ModuleType(f'solutions_{path.stem}')
    mod.__file__ = str(path)
    exec(compile(path.read_text(), str(path), 'exec'), mod.__dict__)
    return mod.__dict__


def selected(args):
    "Exercise ids for command-line arguments: ids ('04.1'), notebooks ('04'), or none for all."
    if not args: return list(EXERCISES)
    ids = []
    for a in args:
        hits = [i for i in EXERCISES if i == a or i.split('.')[0] == a.zfill(2)]
        if not hits: raise SystemExit(f"no exercise {a!r}; there are {', '.join(EXERCISES)}")
        ids += hits
    return ids


def main(argv=None):
    parser = argparse.ArgumentParser(prog='python -m course.exercises', description=__doc__.split('\n\n')[0])
    parser.add_argument('exercises', nargs='*', help="ids such as 04.1, or notebook numbers such as 04 (default: all)")
    parser.add_argument('--solutions', action='store_true', help="check the reference solutions in solutions/")
    args = parser.parse_args(argv)
    ids = selected(args.exercises)
    load = solution_namespace if args.solutions else notebook_namespace
    namespaces, failed = {}, 0
    for i in ids:
        nb = EXERCISES[i].notebook
        if nb not in namespaces: namespaces[nb] = load(nb)
        report = run_check(i, namespaces[nb])
        print(report.text(), flush=True)
        failed += not report.success
    print(f"\n{len(ids) - failed} of {len(ids)} passed")
    return 1 if failed else 0


from . import exercise_catalogue  # noqa: E402,F401  (registers every exercise)

if __name__ == '__main__':   # run as `python -m course.exercises`: use the imported module, whose catalogue is registered
    from course.exercises import main as _main
    sys.exit(_main())
