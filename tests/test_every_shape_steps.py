"""Notebook 11 builds the every-shape kernel from notebook 10's step 5 in listings of one change each, every one written
as the listing before plus a diff (`course.step_listings.patched`). Each diff the notebook shows is exactly what
`step_changes` prints between the two listings, short, and each listing compiles (nvcc for sm_90, no GPU needed); the
last is the kernel the notebook times."""
import json, re

import pytest

from course.cuda_library import compile_cuda
from course.cuda_toolkit import nvcc_available
from course.step_listings import SKIPPED, step_changes
from course.template_variants import LAUNCHER, SPLIT_K_LAUNCHER
from course.notebook_import import notebook_path
from utils import import_notebook

nb10, nb11 = import_notebook('10'), import_notebook('11')
LISTINGS = list(nb11.EVERY_SHAPE_STEPS.items())
# name = patched(before, r'''diff''') in an export cell of the notebook
PATCH = re.compile(r"^(\w+) = patched\((\w+), r'''\n(.*?)\n'''\)", re.S | re.M)


def patches():
    "(name, before's name, the diff as written) of every patch in the notebook, in order."
    cells = json.loads(notebook_path('11').read_text())['cells']
    return [m.groups() for c in cells if c['cell_type'] == 'code' for m in PATCH.finditer(''.join(c['source']))]


def shown(diff_text):
    "A diff as the notebook writes it: no ---/+++ lines, no leading '  ...', no trailing spaces."
    lines = [l.rstrip() for l in diff_text.split('\n')]
    if lines[:2] and lines[0].startswith('--- ') and lines[1].startswith('+++ '): lines = lines[2:]
    if lines[:1] == [SKIPPED.rstrip()]: lines = lines[1:]
    return lines


def changed_lines(before, after):
    return [l for l in step_changes(before, after).splitlines() if l[:1] in '+-' and not l.startswith(('---', '+++'))]


def test_every_patch_is_what_step_changes_shows_and_the_last_listing_is_the_kernel():
    found = patches()
    assert [getattr(nb11, name) for name, _, _ in found if name.endswith('_STEP')] == [l for _, l in LISTINGS]
    for name, before, text in found:
        assert shown(text) == shown(step_changes(getattr(nb11, before), getattr(nb11, name))), name
    assert found[0][1] == 'DOUBLE_BUFFERED' and nb11.DOUBLE_BUFFERED == nb10.DOUBLE_BUFFERED
    assert LISTINGS[-1][1] == nb11.EVERY_SHAPE
    for (_, a), (_, b) in zip(LISTINGS, LISTINGS[1:]):
        assert a != b


def test_each_change_is_short():
    previous = nb10.DOUBLE_BUFFERED
    for title, listing in LISTINGS:
        assert 0 < len(changed_lines(previous, listing)) <= 32, title
        previous = listing


def test_the_tile_movers_code_changes_are_short_without_their_comments():
    code = [l for l in step_changes(nb10.TILE_IN_REGISTERS, nb11.TILE_LAYOUTS, code_only=True).splitlines()
            if l[:1] in '+-' and not l.startswith(('---', '+++'))]
    assert not [l for l in code if l[1:].lstrip().startswith('//')]
    assert len(code) < len(changed_lines(nb10.TILE_IN_REGISTERS, nb11.TILE_LAYOUTS))


@pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")
@pytest.mark.parametrize('title', [t for t, _ in LISTINGS])
def test_each_listing_compiles_for_sm_90(title):
    listing = dict(LISTINGS)[title]
    variant = nb10.warp_tiled_variant(listing, 'every_shape', nb10.double_buffer_bytes(**nb10.WARP_TILE),
                                      launcher=LAUNCHER + SPLIT_K_LAUNCHER, pieces=nb11.TILE_LAYOUTS + nb10.STORE4,
                                      **nb10.WARP_TILE)
    module = compile_cuda(variant.source, arch='sm_90')
    assert module.path.exists()
    if 'bool ALIGNED>' in listing:                                   # two kernels from change 4 on
        assert ', true>' in variant.source and ', false>' in variant.source
