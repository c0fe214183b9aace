"""Every notebook in notebooks/ runs top to bottom, as "Restart and run all" would.

Each notebook is executed once by nbclient in a temporary copy of notebooks/ and images/ (the
committed notebooks are never rewritten). `test_runs_top_to_bottom` passes when no cell raised.
Cells that begin with `%%needs_gpu` get a test of their own: on a CPU-only machine it is reported as
SKIPPED with the cell's reason (it printed the skip line, it did not run), and on a GPU machine it
checks the cell really ran. Set NOTEBOOK_TIMEOUT (seconds per cell) to change the default of 900.
"""
import json, os, shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from conftest import HAS_GPU, ROOT
from utils import SKIP_MARK

NOTEBOOKS = sorted((ROOT / 'notebooks').glob('[0-9]*.ipynb'))
CELL_TIMEOUT = int(os.environ.get('NOTEBOOK_TIMEOUT', 900))
_executed = {}


def gpu_cells(path):
    "(index, reason) of each code cell that starts with the %%needs_gpu magic."
    nb = json.loads(path.read_text())
    cells = [c for c in nb['cells'] if c['cell_type'] == 'code']
    out = []
    for i, c in enumerate(cells):
        first = ''.join(c['source']).lstrip().split('\n', 1)[0]
        if first.startswith('%%needs_gpu'): out.append((i, first[len('%%needs_gpu'):].strip()))
    return out


def execute(path, tmp_path_factory):
    "Run the notebook once per session in a temporary copy; return (code cells, error or None)."
    if path not in _executed:
        work = tmp_path_factory.mktemp(path.stem)
        shutil.copytree(ROOT / 'notebooks', work / 'notebooks')
        shutil.copytree(ROOT / 'images', work / 'images')
        nb = nbformat.read(work / 'notebooks' / path.name, as_version=4)
        client = NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name='python3',
                                resources={'metadata': {'path': str(work / 'notebooks')}})
        error = None
        try:
            client.execute()
        except Exception as e:  # the cell's error text is in the exception
            error = e
        _executed[path] = ([c for c in nb.cells if c.cell_type == 'code'], error)
    return _executed[path]


def cell_text(cell):
    return ''.join(o.get('text', '') for o in cell.get('outputs', []) if o.get('output_type') == 'stream')


@pytest.mark.notebook
@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_top_to_bottom(path, tmp_path_factory):
    cells, error = execute(path, tmp_path_factory)
    assert error is None, f"{path.name} failed:\n{error}"
    gpu_idx = {i for i, _ in gpu_cells(path)}
    stray = [i for i, c in enumerate(cells) if SKIP_MARK in cell_text(c) and i not in gpu_idx]
    assert not stray, f"cells {stray} printed the GPU skip line without being %%needs_gpu cells"


GPU_CELLS = [(p, i, why) for p in NOTEBOOKS for i, why in gpu_cells(p)]


@pytest.mark.notebook
@pytest.mark.parametrize('path,index,why', GPU_CELLS, ids=[f'{p.stem}-cell{i}' for p, i, _ in GPU_CELLS])
def test_gpu_cell(path, index, why, tmp_path_factory):
    cells, error = execute(path, tmp_path_factory)
    if error is not None and cells[index].get('execution_count') is None:
        pytest.fail(f"not reached: the notebook stopped earlier ({type(error).__name__})")
    text = cell_text(cells[index])
    if not HAS_GPU:
        assert SKIP_MARK in text, f"cell {index} should have printed the skip line on a CPU-only machine"
        pytest.skip(f"{path.stem} cell {index} needs a GPU: {why}")
    assert SKIP_MARK not in text, f"cell {index} was skipped although a GPU is present"
    assert not any(o.get('output_type') == 'error' for o in cells[index].get('outputs', []))
