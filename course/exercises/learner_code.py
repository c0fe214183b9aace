"""The learner's code, as the cells that hold it, wherever it comes from: the exercise notebook as saved
(`make check`), the cells run in Jupyter (`check('04.1')` in the notebook), or the reference solutions.

The cells are run the same way in each case: every cell is compiled under a name of its own and put in
`linecache`, so that a definition's source (`inspect.getsource`), a traceback's line and a compile
error all point at the learner's cell, with lines counted from the cell's first line as Jupyter counts
them. A cell that does not compile or raises is recorded against its exercise, and the other cells
still run, so the other exercises are still checked."""
import ast, json, linecache, os, re, sys, traceback, types
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOLUTION_DIR = ROOT / 'solutions'
EXERCISE_MARK = '#| exercise'
SETUP_MARK = '#| export'

# Every file name the learner's code was compiled under -> how to name it in a sentence.
LEARNER_FILES = {}


@dataclass
class Cell:
    source: str
    label: str           # how the learner finds it: "the `#| exercise 04.1` cell"
    filename: str = ''   # the name its code is compiled under

    @property
    def mark(self): return self.source.lstrip().split('\n', 1)[0].strip()

    @property
    def exercise_id(self):
        m = re.match(r'#\|\s*exercise\s+(\S+)', self.mark)
        return m.group(1) if m else None

    @property
    def is_setup(self): return self.mark.startswith(SETUP_MARK)


def is_learner_cell(source): return source.lstrip().startswith((SETUP_MARK, EXERCISE_MARK))


def cell_label(source, setup_number=None):
    mark = source.lstrip().split('\n', 1)[0].strip()
    if mark.startswith(EXERCISE_MARK): return f"the `{mark}` cell"
    return f"setup cell {setup_number}" if setup_number else "the setup cell"


def labelled_cells(sources):
    "Cells for the sources of setup and exercise cells, in order, each with its label."
    cells, setups = [], 0
    for src in sources:
        if not is_learner_cell(src): continue
        setups += src.lstrip().startswith(SETUP_MARK)
        cells.append(Cell(src, cell_label(src, setups)))
    return cells


@dataclass
class Work:
    "The learner's cells for one exercise notebook, and where they come from."
    notebook: str              # '04'
    origin: str                # 'notebooks/exercises/04_threads_and_barriers.ipynb' or 'the cells run in this notebook'
    cells: list = field(default_factory=list)
    unreadable: str = ''       # why the notebook could not be read, if it could not

    def as_dict(self):
        return dict(notebook=self.notebook, origin=self.origin, unreadable=self.unreadable,
                    cells=[(c.source, c.label) for c in self.cells])

    @classmethod
    def from_dict(cls, d):
        return cls(d['notebook'], d['origin'], [Cell(s, l) for s, l in d['cells']], d['unreadable'])

    def cell_defining(self, name):
        "The last cell that assigns or defines `name`, or None."
        hits = [c for c in self.cells if re.search(rf'^(?:def |class )?{re.escape(name)}\b\s*(?:=|\()', c.source, re.M)]
        return hits[-1] if hits else None


def notebook_work(nb, path=None):
    "The setup and exercise cells of exercise notebook `nb` as saved on disk."
    try:
        path = Path(path) if path else exercise_notebook(nb)
    except FileNotFoundError as e:
        return Work(nb, str(exercise_dir()), [], str(e))
    try:
        sources = [''.join(c['source']) for c in json.loads(path.read_text())['cells'] if c['cell_type'] == 'code']
    except (OSError, ValueError, KeyError, TypeError) as e:
        return Work(nb, str(path), [], f"the notebook could not be read ({type(e).__name__}: {e}); is it valid JSON?")
    return Work(nb, str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path), labelled_cells(sources))


def solution_sections(nb):
    """The solution file of notebook `nb` cut into (preamble, {exercise id: section}): each section runs
    from its `# Exercise NN.M` line to the next one."""
    text = solution_file(nb).read_text()
    parts = re.split(r'^(?=# Exercise \d\d\.\d+\b)', text, flags=re.M)
    sections = {re.match(r'# Exercise (\S+?):?\s', p).group(1): p for p in parts[1:]}
    return parts[0], sections


def solution_work(nb, replace=None):
    """The exercise notebook `nb` with each exercise cell holding its reference solution (the solution
    file's preamble, then the exercise's section). `replace` = {exercise id: cell body} puts other code
    in some cells instead (the wrong answers of the tests)."""
    work = notebook_work(nb)
    preamble, sections = solution_sections(nb)
    replace = replace or {}
    for cell in work.cells:
        i = cell.exercise_id
        if i is None: continue
        body = replace[i] if i in replace else preamble + sections[i]
        cell.source = f"{EXERCISE_MARK} {i}\n{body}"
    work.origin = f"solutions/{solution_file(nb).name}" if not replace else f"{work.origin} with other answers"
    return work


def jupyter_work(nb):
    """The setup and exercise cells run so far in this Jupyter kernel: the last run of each, in the order
    of those runs. None outside IPython."""
    try:
        ip = get_ipython()   # noqa: F821 (defined inside IPython)
    except NameError:
        return None
    inputs = list(ip.history_manager.input_hist_raw)
    latest = {}
    for i, src in enumerate(inputs):
        if is_learner_cell(src): latest[src.lstrip().split('\n', 1)[0].strip()] = (i, src)
    sources = [src for _, src in sorted(latest.values())]
    return Work(nb, 'the cells run in this notebook', labelled_cells(sources))


def exercise_dir():
    "The folder of the exercise notebooks: notebooks/exercises, or $COURSE_EXERCISE_DIR (the tests' copies)."
    return Path(os.environ.get('COURSE_EXERCISE_DIR') or ROOT / 'notebooks' / 'exercises')


def exercise_notebook(nb):
    hits = sorted(exercise_dir().glob(f'{nb}_*.ipynb'))
    if len(hits) != 1: raise FileNotFoundError(f"no exercise notebook {nb}_*.ipynb in {exercise_dir()}")
    return hits[0]


def solution_file(nb):
    hits = sorted(SOLUTION_DIR.glob(f'{nb}_*.py'))
    if len(hits) != 1: raise FileNotFoundError(f"no solution file {nb}_*.py in {SOLUTION_DIR}")
    return hits[0]


# --------------------------------------------------------------------------------------------------
# Running the cells
# --------------------------------------------------------------------------------------------------

_counter = [0]


def register(cell):
    "Give the cell a file name of its own and put its lines in linecache, so its source can be read back."
    _counter[0] += 1
    cell.filename = f"<{cell.label.replace('`', '')} #{_counter[0]}>"
    lines = cell.source.splitlines(True)
    linecache.cache[cell.filename] = (len(cell.source), None, lines, cell.filename)   # mtime None: never dropped
    LEARNER_FILES[cell.filename] = cell.label


def learner_frames(tb_or_frames):
    "The frames of a traceback (or a list of FrameSummary) that are in the learner's cells."
    frames = traceback.extract_tb(tb_or_frames) if not isinstance(tb_or_frames, list) else tb_or_frames
    return [f for f in frames if f.filename in LEARNER_FILES]


def where(filename, lineno):
    "'line 3 of the `#| exercise 04.1` cell: `p += ms[...]`'."
    text = linecache.getline(filename, lineno).strip()
    return f"line {lineno} of {LEARNER_FILES.get(filename, filename)}" + (f": `{text}`" if text else '')


def error_sentence(cell, e):
    "One sentence for an exception raised while compiling or running `cell`: its line, as Jupyter counts them."
    if isinstance(e, SyntaxError) and e.filename == cell.filename:
        text = (e.text or '').strip()
        return (f"{cell.label} does not compile: {type(e).__name__} at line {e.lineno}: {e.msg}"
                + (f": `{text}`" if text else ''))
    frames = learner_frames(e.__traceback__)
    at = f" at {where(frames[-1].filename, frames[-1].lineno)}" if frames else ''
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ''
    return f"{cell.label} raised {type(e).__name__}{at}" + (f": {msg}" if msg else '')


def run_cells(work, budget_s=120):
    """Run the work's cells in order in a fresh module. Returns (namespace, errors): errors maps an exercise
    id (or None, for a setup cell) to the sentence of its cell's error. A cell that runs past `budget_s`
    (a loop that never ends) is stopped."""
    from .watchdog import Watchdog
    mod = types.ModuleType(f'exercises_{work.notebook}')
    mod.__file__ = str(ROOT / 'notebooks' / 'exercises' / f'{work.notebook}.ipynb')
    if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))
    errors = {}
    if work.unreadable: errors[None] = work.unreadable
    for cell in work.cells:
        register(cell)
        try:
            code = compile(cell.source, cell.filename, 'exec')
            with Watchdog(budget_s, what=f"running {cell.label}"):
                exec(code, mod.__dict__)
        except Exception as e:
            errors.setdefault(cell.exercise_id, error_sentence(cell, e))
    return mod.__dict__, errors


# --------------------------------------------------------------------------------------------------
# Reading the learner's code back
# --------------------------------------------------------------------------------------------------

def source_of(fn):
    "The Python source of a function or a Numba kernel (on the GPU or in the simulator), from its cell; '' if unknown."
    import inspect
    fn = getattr(fn, 'py_func', None) or getattr(fn, 'fn', None) or fn
    try: return inspect.getsource(fn)
    except (OSError, TypeError): return ''


def function_tree(fn):
    "(ast of the function's own source, first line number in its cell) or (None, 0)."
    import textwrap
    src = source_of(fn)
    if not src: return None, 0
    code = getattr(getattr(fn, 'py_func', None) or getattr(fn, 'fn', None) or fn, '__code__', None)
    try: tree = ast.parse(textwrap.dedent(src))
    except SyntaxError: return None, 0
    return tree, (code.co_firstlineno if code else 1)


def cell_line(cell, text_lines, line):
    """The line of `cell` that line `line` (1-based) of `text_lines` came from, where text_lines is a source
    built from the cell's text (a string in it, with a prelude in front): the shift that makes most
    lines agree."""
    own = cell.source.splitlines()
    votes = {}
    positions = {}
    for j, l in enumerate(own):
        if len(l.strip()) > 3: positions.setdefault(l.strip(), []).append(j)
    for i, l in enumerate(text_lines):
        for j in positions.get(l.strip(), ()):
            votes[j - i] = votes.get(j - i, 0) + 1
    if not votes: return None
    shift = max(votes, key=votes.get)
    j = line - 1 + shift
    return j + 1 if 0 <= j < len(own) else None
