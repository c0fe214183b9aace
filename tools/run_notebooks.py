"""Execute notebooks top to bottom and save them with their outputs.

    python tools/run_notebooks.py [--out DIR] [NOTEBOOK ...]

By default runs every notebooks/NN_*.ipynb and writes the executed copies back in place, which is how
the committed outputs are produced (on a GPU machine). With --out the copies go to DIR instead.
Stops with exit code 1 if a cell raises, after saving the notebook up to that cell.
`execute_notebook` is also what the test suite runs each notebook with.
"""
import argparse, os, sys, time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]


def use_repo_utils():
    "Let the kernels nbclient starts import utils from this repository, whatever their working folder."
    paths = os.environ.get('PYTHONPATH', '').split(os.pathsep)
    if str(ROOT) not in paths: os.environ['PYTHONPATH'] = os.pathsep.join(filter(None, [str(ROOT), *paths]))


def execute_notebook(nb, workdir, timeout=900, allow_errors=False, after_cell=None):
    """Run notebook `nb` (nbformat object, filled with outputs in place) in folder `workdir`; return the error or None.
    With allow_errors, a cell that raises shows its error and the cells after it still run.
    `after_cell(index, seconds)`, if given, is called after each code cell (the time it took)."""
    use_repo_utils()
    os.environ['COURSE_SAVED_RUN'] = '1'      # course.progress: no bars in a saved notebook, one line per long loop
    started = [time.time()]
    def on_start(cell, cell_index): started[0] = time.time()
    def on_done(cell, cell_index, execute_reply):
        if after_cell: after_cell(cell_index, time.time() - started[0])
    client = NotebookClient(nb, timeout=timeout, kernel_name='python3', allow_errors=allow_errors,
                            resources={'metadata': {'path': str(workdir)}},
                            on_cell_start=on_start, on_cell_executed=on_done)
    try:
        client.execute()
    except Exception as e:  # the failing cell's error text is in the exception
        return e
    return None


def run(path, out_dir=None, timeout=900):
    nb = nbformat.read(path, as_version=4)
    t0 = time.time()
    dest = Path(out_dir) / path.name if out_dir else path
    def after_cell(index, seconds):
        "Say how long each slow cell took; with --out, save after every cell, so a run cut short keeps what it did."
        if seconds >= 5: print(f"  {path.name} cell {index}: {seconds:.0f} s", flush=True)
        if out_dir: nbformat.write(nb, dest)
    error = execute_notebook(nb, path.parent, timeout, after_cell=after_cell)
    nbformat.write(nb, dest)
    print(f"{path.name}: {'FAILED' if error else 'ok'} in {time.time() - t0:.0f} s -> {dest}", flush=True)
    if error: print(str(error)[-3000:], file=sys.stderr)
    return error is None


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('notebooks', nargs='*', type=Path)
    ap.add_argument('--out', help='folder for the executed copies (default: overwrite in place)')
    ap.add_argument('--timeout', type=int, default=900, help='seconds per cell')
    a = ap.parse_args()
    paths = a.notebooks or sorted((ROOT / 'notebooks').glob('[0-9]*.ipynb'))
    if a.out: Path(a.out).mkdir(parents=True, exist_ok=True)
    ok = [run(p.resolve(), a.out, a.timeout) for p in paths]
    sys.exit(0 if all(ok) else 1)


if __name__ == '__main__':
    main()
