"""Notebook 17 builds the drop-in kernel from notebook 11's in listings of one change each (`patched` diffs). Each
listing compiles for sm_90 (no GPU needed), and a switch that is off costs nothing because it leaves nothing behind:
with WIDE and BATCHED off, each step's kernels compile to step 1's PTX, instruction for instruction (the kernels'
names and unused parameters aside), while each switch on changes it; step 4's pad of Bs changes only the kernels
that turn B. The matrix-vector kernels of step 5 compile."""
import re

import pytest

from course.cuda_library import compile_cuda
from course.cuda_toolkit import nvcc_available
from course.disassembly import cuda_ptx
from utils import import_notebook

nb17 = import_notebook('17')
TILE = dict(nb17.nb11.WARP_TILE, MIN_BLOCKS=2, GROUP=8)
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="needs nvcc, the CUDA compiler")


def test_the_listings_follow_each_other_and_the_last_is_the_kernel():
    steps = [nb17.nb11.EVERY_SHAPE, nb17.EITHER_LAYOUT_TILES, nb17.EITHER_LAYOUT, nb17.WIDE_OFFSETS, nb17.BATCHED,
             nb17.PADDED_B]
    assert all(before != after for before, after in zip(steps, steps[1:]))
    assert nb17.DROP_IN is nb17.PADDED_B and 'DropInWarpTile' in nb17.DROP_IN and 'DropInWarpTile' in nb17.DROP_IN_WARP
    for switch in ('bool A_T, bool B_T', 'bool WIDE', 'bool BATCHED'): assert switch in nb17.DROP_IN


def kernel_bodies(variant):
    """The PTX of the variant's two drop_in kernels (rows aligned and not), from their first instruction to their end:
    the names and the parameter lists left out."""
    ptx = cuda_ptx(variant.source, arch='sm_90')
    bodies = [body for name, body in re.findall(r'\.entry (_Z7drop_in\w+)\(.*?\n\)\n(.*?\n\})', ptx, re.S)]
    assert len(bodies) == 2, "a variant holds two drop_in kernels"
    return [re.sub(r'_Z7drop_in\w+', 'KERNEL', body) for body in bodies]


@needs_nvcc
def test_with_the_switches_off_each_step_compiles_to_step_1s_kernel():
    step1 = kernel_bodies(nb17.step_variant(nb17.EITHER_LAYOUT, **TILE))
    assert kernel_bodies(nb17.step_variant(nb17.WIDE_OFFSETS, **TILE)) == step1
    assert kernel_bodies(nb17.drop_in_variant(False, False, False, False, **TILE)) == step1
    assert kernel_bodies(nb17.step_variant(nb17.WIDE_OFFSETS, wide=True, **TILE)) != step1
    assert kernel_bodies(nb17.drop_in_variant(False, False, False, True, **TILE)) != step1
    turned = dict(b_t=True, **TILE)          # step 4 pads Bs only where B is turned: its kernels differ from step 3's
    assert (kernel_bodies(nb17.drop_in_variant(False, True, False, False, **TILE))
            != kernel_bodies(nb17.step_variant(nb17.BATCHED, launcher=nb17.DROP_IN_LAUNCHER, **turned)))


def test_step_4_gives_a_turned_bs_rows_a_pad_of_4_floats_in_both_buffers():
    tile = dict(BM=128, BN=256, BK=16)
    assert nb17.drop_in_shared_bytes(False, **tile) == nb17.nb10.double_buffer_bytes(**tile)
    assert nb17.drop_in_shared_bytes(True, **tile) == nb17.nb10.double_buffer_bytes(**tile) + 2 * 16 * 4 * 4
    assert 'B_T ? BN + 4 : BN' in nb17.DROP_IN and 'Bs[k * B_STRIDE +' in nb17.DROP_IN_WARP


@needs_nvcc
def test_every_layout_compiles_and_the_matrix_vector_kernels_too():
    for a_t in (False, True):
        for b_t in (False, True):
            assert nb17.drop_in_variant(a_t, b_t, False, True, **TILE).build()._module is not None
    assert 'matrix_vector' in compile_cuda(nb17.MATRIX_VECTOR).functions


# Step 6's try: notebook 11's kernel with cp.async copies into STAGES buffers.
TRY_TILE = dict(BM=128, BN=256, BK=8, WM=32, WN=128, WMITER=1, TM=8, TN=4, MIN_BLOCKS=1)


def test_the_tries_listings_follow_each_other_from_notebook_11s_kernel():
    steps = [nb17.nb11.EVERY_SHAPE, nb17.PIPELINED_HEAD, nb17.PIPELINED_COPIES, nb17.PIPELINED]
    assert all(before != after for before, after in zip(steps, steps[1:]))
    assert 'int STAGES' in nb17.PIPELINED and 'TileInRegisters' not in nb17.PIPELINED
    assert 'wait_for_copies<STAGES - 2>' in nb17.PIPELINED and 'copy_async' in nb17.ASYNC_COPIES


@pytest.mark.parametrize('stages', [2, 3, 4, 5])
def test_the_tries_schedule_reads_each_step_after_its_copies_and_never_overwrites_a_buffer_in_use(stages):
    "A model of the loop: the groups of copies sent and waited for, the buffer each step reads and each copy fills."
    count = 11
    sent = []                                     # the step of each group of copies (None: an empty group)
    for s in range(stages - 1): sent.append(s if s < count else None)
    for t in range(count):
        done = len(sent) - (stages - 2)           # wait_for_copies<STAGES - 2>: all but the last STAGES - 2 groups landed
        assert t in sent[:done], f"step {t} read before its copies landed"
        ahead = t + stages - 1
        if ahead < count:
            assert ahead % stages != t % stages, "a copy into the buffer this step reads"
            assert t == 0 or ahead % stages == (t - 1) % stages   # the buffer step t - 1 read, done at the barrier
        sent.append(ahead if ahead < count else None)
    assert sorted(s for s in sent if s is not None) == list(range(count))


@needs_nvcc
@pytest.mark.parametrize('stages', [3, 4])
def test_the_try_compiles_with_its_copies_and_waits(stages):
    ptx = cuda_ptx(nb17.pipelined(STAGES=stages, **TRY_TILE).source, arch='sm_90')
    assert 'cp.async.ca.shared.global' in ptx and 'cp.async.cg.shared.global' in ptx   # A turned, B in 16 bytes
    assert f'cp.async.wait_group {stages - 2};' in ptx and 'cp.async.commit_group' in ptx


@pytest.mark.parametrize('multiprocessors', [132, 114, 78])       # H100 SXM, H100 PCIe, and one that 4 does not divide
def test_whole_wave_splits_are_the_most_pieces_that_keep_1_2_or_4_tiles_in_one_wave(multiprocessors):
    for tiles, pieces in zip((1, 2, 4), nb17.whole_wave_splits(multiprocessors)):
        assert tiles * pieces <= multiprocessors < tiles * (pieces + 1)
    assert set(nb17.whole_wave_splits(nb17.MULTIPROCESSORS)) <= set(nb17.LONG_K_SPLITS)
    assert {candidate.params["splits"] for candidate in nb17.DROP_IN_CANDIDATES} >= set(nb17.LONG_K_SPLITS)
