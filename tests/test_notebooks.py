"""Every notebook in notebooks/ runs top to bottom, as "Restart and run all" would.

Each notebook is executed once by nbclient in a temporary copy of notebooks/ and images/ (the
committed notebooks are never rewritten). `test_runs_top_to_bottom` passes when no cell raised.
Cells that begin with `%%needs_gpu` (or `%%needs_nvcc`) get a test of their own: on a machine without
a GPU (or nvcc) it is reported as SKIPPED with the cell's reason (it printed the skip line, it did not
run), and where the GPU (or nvcc) is present it checks the cell really ran. Set NOTEBOOK_TIMEOUT (seconds per cell) to change the default of 900.
"""
import json, os, re, shutil
from pathlib import Path

import nbformat
import pytest

from conftest import ROOT
from tools.run_notebooks import execute_notebook
from utils import CELL_REQUIREMENTS, SKIP_MARK

# What each cell magic needs, asked once, by the same functions the magics use in the notebooks.
AVAILABLE = {magic: available() for magic, (available, _) in CELL_REQUIREMENTS.items()}

NOTEBOOKS = sorted((ROOT / 'notebooks').glob('[0-9]*.ipynb'))
CELL_TIMEOUT = int(os.environ.get('NOTEBOOK_TIMEOUT', 900))
_executed = {}


def guarded_cells(path):
    """(index, magic, reason) of each code cell that starts with %%needs_gpu or %%needs_nvcc. The index
    counts every cell of the notebook, markdown included, as Jupyter's cell list does."""
    nb = json.loads(path.read_text())
    out = []
    for i, c in enumerate(nb['cells']):
        if c['cell_type'] != 'code': continue
        first = ''.join(c['source']).lstrip().split('\n', 1)[0]
        magic = first[2:].split(' ', 1)[0] if first.startswith('%%') else ''
        if magic in AVAILABLE: out.append((i, magic, first[len(magic) + 2:].strip()))
    return out


def execute(path, tmp_path_factory):
    "Run the notebook once per session in a temporary copy; return (all its cells, error or None)."
    if path not in _executed:
        work = tmp_path_factory.mktemp(path.stem)
        shutil.copytree(ROOT / 'notebooks', work / 'notebooks')
        shutil.copytree(ROOT / 'images', work / 'images')
        nb = nbformat.read(work / 'notebooks' / path.name, as_version=4)
        error = execute_notebook(nb, work / 'notebooks', CELL_TIMEOUT)
        _executed[path] = (nb.cells, error)
    return _executed[path]


def cell_text(cell):
    return ''.join(o.get('text', '') for o in cell.get('outputs', []) if o.get('output_type') == 'stream')


@pytest.mark.notebook
@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_runs_top_to_bottom(path, tmp_path_factory):
    cells, error = execute(path, tmp_path_factory)
    assert error is None, f"{path.name} failed:\n{error}"
    guarded = {i for i, _, _ in guarded_cells(path)}
    stray = [i for i, c in enumerate(cells) if SKIP_MARK in cell_text(c) and i not in guarded]
    assert not stray, f"cells {stray} printed the skip line without being %%needs_gpu or %%needs_nvcc cells"


GUARDED_CELLS = [(p, i, magic, why) for p in NOTEBOOKS for i, magic, why in guarded_cells(p)]


@pytest.mark.notebook
@pytest.mark.parametrize('path,index,magic,why', GUARDED_CELLS, ids=[f'{p.stem}-cell{i}' for p, i, _, _ in GUARDED_CELLS])
def test_guarded_cell(path, index, magic, why, tmp_path_factory):
    cells, error = execute(path, tmp_path_factory)
    if error is not None and cells[index].get('execution_count') is None:
        pytest.fail(f"not reached: the notebook stopped earlier ({type(error).__name__})")
    text = cell_text(cells[index])
    if not AVAILABLE[magic]:
        assert SKIP_MARK in text, f"cell {index} should have printed the skip line on this machine"
        pytest.skip(f"{path.stem} cell {index} %%{magic} ({why}) did not run here: {CELL_REQUIREMENTS[magic][1]}")
    assert SKIP_MARK not in text, f"cell {index} was skipped although this machine has what it needs"
    assert not any(o.get('output_type') == 'error' for o in cells[index].get('outputs', []))


EXERCISE_NOTEBOOKS = sorted((ROOT / 'notebooks' / 'exercises').glob('[0-9]*.ipynb'))


@pytest.mark.notebook
@pytest.mark.parametrize('path', EXERCISE_NOTEBOOKS, ids=[f'exercises/{p.stem}' for p in EXERCISE_NOTEBOOKS])
def test_exercise_notebook_runs_top_to_bottom(path, tmp_path_factory):
    """An untouched exercise notebook runs top to bottom: each check cell prints its verdict ('not yet',
    with the sentence that says why) instead of raising."""
    work = tmp_path_factory.mktemp(f'exercises_{path.stem}')
    shutil.copytree(ROOT / 'notebooks', work / 'notebooks')
    nb = nbformat.read(work / 'notebooks' / 'exercises' / path.name, as_version=4)
    error = execute_notebook(nb, work / 'notebooks' / 'exercises', CELL_TIMEOUT)
    assert error is None, f"{path.name} failed:\n{error}"
    checks = [c for c in nb.cells if c.cell_type == 'code' and c.source.startswith('check(')]
    assert len(checks) >= 2
    for c in checks:
        text = cell_text(c)
        assert re.search(r'Exercise \d\d\.\d .*: not yet', text) and 'FIX' in text, text
