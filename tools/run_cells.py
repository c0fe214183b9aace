"""Execute some cells of a notebook, and save their outputs, without running the rest.

    python tools/run_cells.py NOTEBOOK CELL_ID [CELL_ID ...]

For cells that need no GPU (a listing, a diff, a drawing from a model) in a notebook whose other outputs come from a
GPU run: a kernel runs the notebook's `#| export` cells that come before the last chosen cell, in order, then the
chosen cells (also in order, each after the export cells before it); only the chosen cells' outputs (and execution
counts) are written back. Every other cell is left exactly as it is. Stops with exit code 1, writing nothing, if a
chosen cell raises.
"""
import argparse, sys
from pathlib import Path

import nbformat

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_notebooks import execute_notebook   # noqa: E402  (the same kernel setup as a whole run)


def run_cells(path, ids):
    nb = nbformat.read(path, as_version=4)
    index = {c.get('id'): i for i, c in enumerate(nb.cells)}
    missing = [i for i in ids if i not in index]
    if missing: raise SystemExit(f"no cell with id {', '.join(missing)} in {path}")
    last = max(index[i] for i in ids)
    chosen = {index[i] for i in ids}
    picked = [i for i, c in enumerate(nb.cells[:last + 1]) if c.cell_type == 'code' and
              (i in chosen or c.source.startswith('#| export'))]
    run = nbformat.v4.new_notebook(metadata=nb.metadata)
    run.cells = [nbformat.v4.new_code_cell(nb.cells[i].source) for i in picked]
    error = execute_notebook(run, Path(path).parent)
    if error:
        print(str(error)[-3000:], file=sys.stderr)
        raise SystemExit(1)
    for i, done in zip(picked, run.cells):
        if i in chosen:
            nb.cells[i].outputs, nb.cells[i].execution_count = done.outputs, done.execution_count
    nbformat.write(nb, path)
    print(f"{Path(path).name}: ran {len(picked)} cells, saved the outputs of {len(chosen)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('notebook', type=Path)
    ap.add_argument('ids', nargs='+', help='the ids of the cells to run')
    a = ap.parse_args()
    run_cells(a.notebook, a.ids)


if __name__ == '__main__':
    main()
