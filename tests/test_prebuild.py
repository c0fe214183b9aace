"""tools/prebuild.py: the kernels it compiles ahead are the ones the notebooks time, each once, and it compiles them."""

import pytest

import utils
from conftest import load_script
from course.cuda_toolkit import nvcc_available


@pytest.fixture(scope='module')
def prebuild():
    return load_script('tools/prebuild.py', 'prebuild')


def test_prebuild_lists_every_kernel_the_notebooks_time_once(prebuild):
    variants = prebuild.course_variants()
    sources = [v.source for v in variants]
    assert len(sources) == len(set(sources))                              # one compile per source
    nb10, nb11, nb13, nb17 = (utils.import_notebook(n) for n in ('10', '11', '13', '17'))
    for v in [*nb11.EVERY_SHAPE_SPACE, *nb10.SEARCH_SPACE, nb13.MMA_SYNC_FALLBACK,
              *(nb17.drop_in_variant(True, False, False, True, **tile) for tile in nb11.EVERY_SHAPE_TILES),
              *(h.kernel for h in nb13.hopper_ladder().values())]:
        assert v.source in sources, v
    assert len(variants) > 200


@pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")
def test_prebuild_compiles_what_it_lists(prebuild, monkeypatch, capsys):
    step5 = utils.import_notebook('10').step5
    monkeypatch.setattr(prebuild, 'course_variants', lambda: [step5])
    assert prebuild.main(['--workers', '1']) == 0
    assert step5._module is not None                                      # built (or found in the cache)
    out = capsys.readouterr().out
    assert 'kernel variants to compile: 1' in out and 'compiled' in out
