"""What a learner reads in one go: no code cell of a notebook is over 40 lines (a kernel longer than that is shown in
parts, and whole by the notebook's listings). The one exception is a learner's own cell (`#| exercise`): it holds
the whole kernel they complete, which the checker reads as one cell."""
import json

import pytest

from conftest import ROOT, load_script

NOTEBOOKS = load_script('tools/saved_outputs.py', 'saved_outputs').notebooks()   # as the other checks of what a learner reads
LONGEST_CODE_CELL = 40


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[str(p.relative_to(ROOT / 'notebooks')) for p in NOTEBOOKS])
def test_no_code_cell_is_over_40_lines(path):
    cells = json.loads(path.read_text())['cells']
    long = [(i, len(''.join(c['source']).splitlines())) for i, c in enumerate(cells)
            if c['cell_type'] == 'code' and len(''.join(c['source']).splitlines()) > LONGEST_CODE_CELL
            and not ''.join(c['source']).startswith('#| exercise')]
    assert not long, f"{path.name}: code cells over {LONGEST_CODE_CELL} lines (cell, lines): {long}"
