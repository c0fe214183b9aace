"""Using the notebooks' own code from other notebooks, tests and benchmarks.

A notebook marks the cells that define its kernels and helpers with `#| export` on their first line;
`import_notebook` runs just those cells in a fresh module. So there is one source for each kernel: the
notebook that teaches it."""
import json, linecache, types
from pathlib import Path

EXPORT_MARK = '#| export'
NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / 'notebooks'


def exported_cells(nb_path):
    "The source of each code cell of a notebook whose first line is `#| export`."
    nb = json.loads(Path(nb_path).read_text())
    cells = [''.join(c['source']) for c in nb['cells'] if c['cell_type'] == 'code']
    return [c for c in cells if c.lstrip().startswith(EXPORT_MARK)]


def notebook_path(name):
    "A notebook's path from a path, or from a file name or prefix such as '05' inside notebooks/."
    path = Path(name)
    if path.exists(): return path
    hits = sorted(NOTEBOOK_DIR.glob(f'{name}*.ipynb'))
    if len(hits) != 1: raise FileNotFoundError(f"no single notebook matches {name!r} in {NOTEBOOK_DIR}: {hits}")
    return hits[0]


def import_notebook(name):
    """Run the `#| export` cells of notebook `name` in a fresh module and return it, so other code
    uses the notebook's kernels themselves rather than copies. Export cells only define things: no
    compiling, no timing."""
    path = notebook_path(name)
    mod = types.ModuleType(f'notebook_{path.stem}')
    mod.__file__ = str(path)
    for i, src in enumerate(exported_cells(path)):
        # Each cell under a name of its own, its lines in linecache: inspect.getsource and tracebacks then show them.
        filename = f'<{path.name}, export cell {i + 1}>'
        linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
        exec(compile(src, filename, 'exec'), mod.__dict__)
    return mod
