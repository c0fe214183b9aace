"""Measured numbers belong in outputs, not in prose: every notebook's markdown stays within the course's limits (at
most 5 numeric tokens per 100 words, at most 8 measured quantities typed by hand), and those not there yet may not get
further from them (their current counts are ceilings, lowered as they are rewritten)."""
import json

import pytest

from conftest import load_script

prose = load_script('tools/prose_numbers.py', 'prose_numbers')
NUMBERS_PER_100_WORDS, MEASURED_IN_PROSE = 5.0, 8
# Notebooks over a limit today: (numbers per 100 words, measured quantities) they may not exceed.
CEILINGS = {'10_register_tiling': (4.8, 0), '15_benchmarks': (4.3, 5)}
NOTEBOOKS = sorted((prose.ROOT / 'notebooks').glob('[0-9][0-9]_*.ipynb'))


@pytest.mark.parametrize('path', NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_prose_holds_few_numbers_and_no_new_measured_ones(path):
    words, numbers, measured = prose.prose_numbers(path)
    density_cap, measured_cap = CEILINGS.get(path.stem, (NUMBERS_PER_100_WORDS, MEASURED_IN_PROSE))
    assert prose.per_100_words(words, numbers) <= density_cap, f"{path.stem}: {prose.per_100_words(words, numbers):.1f} numbers per 100 words"
    assert len(measured) <= measured_cap, f"{path.stem}: measured quantities typed into markdown: {measured}"


def test_the_reading_tells_measurements_from_shapes_and_constants(tmp_path):
    cells = ["Step 8 runs at 0.53x cuBLAS (1.474 against 1.572 ms) and 730 TFLOP/s.",
             "A 128 x 256 tile, 64 x N x 16, the H100's 989 TFLOP/s peak, the 1.10x target, `3.2 ms` in code.",
             "Notebook 10 uses it, notebook 09 measures 12 us."]
    nb = {'cells': [{'cell_type': 'markdown', 'source': c} for c in cells] + [{'cell_type': 'code', 'source': '1.5 ms'}]}
    (tmp_path / 'n.ipynb').write_text(json.dumps(nb))
    words, numbers, measured = prose.prose_numbers(tmp_path / 'n.ipynb')
    assert [q for _, q in measured] == ['0.53x', '1.572 ms', '730 TFLOP/s', '12 us']    # '10 uses' is no time
    assert numbers == 5 + 6 + 3             # not the code span's, nor the 100 of H100
