"""Notebook 17 builds the drop-in kernel from notebook 11's in listings of one change each (`patched` diffs). Each
listing compiles for sm_90 (no GPU needed), and a switch that is off costs nothing because it leaves nothing behind:
with WIDE and BATCHED off, each step's kernels compile to step 1's PTX, instruction for instruction (the kernels'
names and unused parameters aside), while each switch on changes it. The matrix-vector kernels of step 4 compile."""
import re, subprocess

import pytest

from course.cuda_library import compile_cuda
from course.cuda_toolkit import nvcc_available, nvcc_path
from utils import import_notebook

nb17 = import_notebook('17')
TILE = dict(nb17.nb11.WARP_TILE, MIN_BLOCKS=2, GROUP=8)
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")


def test_the_listings_follow_each_other_and_the_last_is_the_kernel():
    steps = [nb17.nb11.EVERY_SHAPE, nb17.EITHER_LAYOUT_TILES, nb17.EITHER_LAYOUT, nb17.WIDE_OFFSETS, nb17.BATCHED]
    assert all(before != after for before, after in zip(steps, steps[1:]))
    assert nb17.DROP_IN is nb17.BATCHED
    for switch in ('bool A_T, bool B_T', 'bool WIDE', 'bool BATCHED'): assert switch in nb17.DROP_IN


def kernel_bodies(variant, tmp_path):
    """The PTX of the variant's two drop_in kernels (rows aligned and not), from their first instruction to their end:
    the names and the parameter lists left out."""
    source = tmp_path / 'kernel.cu'
    source.write_text(variant.source)
    subprocess.run([nvcc_path(), '-arch=sm_90', '-O3', '-ptx', str(source), '-o', str(tmp_path / 'kernel.ptx')],
                   check=True, capture_output=True)
    ptx = (tmp_path / 'kernel.ptx').read_text()
    bodies = [body for name, body in re.findall(r'\.entry (_Z7drop_in\w+)\(.*?\n\)\n(.*?\n\})', ptx, re.S)]
    assert len(bodies) == 2, "a variant holds two drop_in kernels"
    return [re.sub(r'_Z7drop_in\w+', 'KERNEL', body) for body in bodies]


@needs_nvcc
def test_with_the_switches_off_each_step_compiles_to_step_1s_kernel(tmp_path):
    step1 = kernel_bodies(nb17.step_variant(nb17.EITHER_LAYOUT, **TILE), tmp_path)
    assert kernel_bodies(nb17.step_variant(nb17.WIDE_OFFSETS, **TILE), tmp_path) == step1
    assert kernel_bodies(nb17.drop_in_variant(False, False, False, False, **TILE), tmp_path) == step1
    assert kernel_bodies(nb17.step_variant(nb17.WIDE_OFFSETS, wide=True, **TILE), tmp_path) != step1
    assert kernel_bodies(nb17.drop_in_variant(False, False, False, True, **TILE), tmp_path) != step1


@needs_nvcc
def test_every_layout_compiles_and_the_matrix_vector_kernels_too():
    for a_t in (False, True):
        for b_t in (False, True):
            assert nb17.drop_in_variant(a_t, b_t, False, True, **TILE).build()._module is not None
    assert 'matrix_vector' in compile_cuda(nb17.MATRIX_VECTOR).functions
