"""Notebook 05's translations from Python to CUDA C: the draft written with a typical mistake (an early
`return` before the barriers) is caught by the barrier check on the CPU and by the test shapes on a GPU,
while the reviewed kernel passes both; and the warp shuffle's Python model agrees with its CUDA C."""
import math, random, re

import pytest
import torch

import utils
from conftest import gpu
from course.correctness import LECTURE_SHAPE, check_against_torch
from course.exercises.barrier_placement import cuda_barrier_problems

nvcc_needed = pytest.mark.skipif(not utils.nvcc_available(), reason="needs nvcc (the CUDA compiler), not found here")
NB05 = utils.import_notebook('05')
AWKWARD_SHAPES = ((1000, 300, 700), (1, 300, 700), (1000, 300, 1), (33, 17, 31))


def draft_cuda_src():
    "dyn_cuda_src with the draft's kernel in place of the reviewed one: the same launcher, as the notebook runs it."
    assert NB05.dyn_kernel_src in NB05.dyn_cuda_src
    return NB05.dyn_cuda_src.replace(NB05.dyn_kernel_src, NB05.draft_kernel_src)


def test_the_drafts_mistake_is_caught_on_the_cpu():
    problems = cuda_barrier_problems(NB05.draft_kernel_src)
    assert len(problems) == 1
    assert problems[0].startswith("the `return` at line 5 (matmul_dyn_k) comes before the __syncthreads() at line 15")


def test_the_reviewed_kernel_passes_the_barrier_check():
    assert cuda_barrier_problems(NB05.dyn_kernel_src) == []
    assert cuda_barrier_problems(NB05.dyn_cuda_src) == []


def test_the_draft_is_the_reviewed_kernel_with_an_early_return():
    "The draft differs in the guard alone, so what the tests catch is that mistake and nothing else."
    assert re.search(r'if \(r >= h \|\| c >= w\) return;', NB05.draft_kernel_src)
    assert 'return' not in NB05.dyn_kernel_src
    assert NB05.draft_kernel_src.count('__syncthreads()') == NB05.dyn_kernel_src.count('__syncthreads()') == 2
    assert NB05.draft_kernel_src.split('{', 1)[0] == NB05.dyn_kernel_src.split('{', 1)[0]   # the same signature


@nvcc_needed
def test_the_draft_compiles_through_the_same_launcher():
    "nvcc accepts the mistake: only the checks find it."
    mod = utils.compile_cuda(draft_cuda_src(), arch='sm_90')
    assert {'matmul_dyn', 'largest_tile_width'} <= set(mod.functions)


@gpu
def test_the_draft_is_wrong_on_awkward_shapes_and_the_reviewed_kernel_right():
    torch.backends.cuda.matmul.allow_tf32 = False
    draft = utils.compile_cuda(draft_cuda_src())

    def matmul_draft(m, n):
        out = torch.empty(m.shape[0], n.shape[1], device=m.device)
        draft.matmul_dyn(m, n, out, m.shape[0], n.shape[1], m.shape[1], 16)
        return out
    assert check_against_torch(matmul_draft, shapes=(LECTURE_SHAPE,))     # no thread returns: right by luck
    assert not check_against_torch(matmul_draft, shapes=AWKWARD_SHAPES)
    assert check_against_torch(NB05.matmul_dyn, shapes=AWKWARD_SHAPES)


# --------------------------------------------------------------------------------------------------
# The warp shuffle
# --------------------------------------------------------------------------------------------------

def test_shfl_down_model():
    lanes = list(range(32))
    assert NB05.shfl_down(lanes, 16) == list(range(16, 32)) + list(range(16, 32))   # lanes 16-31 keep their own
    assert NB05.shfl_down(lanes, 1) == list(range(1, 32)) + [31]


def test_warp_sum_model_puts_the_sum_in_lane_0():
    rng = random.Random(1)
    for _ in range(50):
        xs = [rng.uniform(-1, 1) for _ in range(32)]
        assert math.isclose(NB05.warp_sum(xs)[0], math.fsum(xs), rel_tol=1e-12, abs_tol=1e-12)
    assert NB05.warp_sum([1] * 32)[0] == 32 and NB05.warp_sum([1] * 32)[31] == 32   # lane 31 adds itself 5 times


@nvcc_needed
def test_warp_sum_uses_five_shuffles():
    from course.disassembly import cuda_ptx
    ptx = cuda_ptx(NB05.warp_sum_cuda_src, arch='sm_90')
    assert len(re.findall(r'\bshfl\.sync\.down', ptx)) == 5


@gpu
@pytest.mark.parametrize('n', [1, 31, 32, 33, 1000, 100_000])
def test_warp_sum_on_the_gpu(n):
    x = torch.rand(n, device='cuda')
    out = torch.empty(1, device='cuda')
    NB05.warp_sum_module().sum_one_warp(x, out, n)
    torch.testing.assert_close(out.double()[0], x.double().sum(), rtol=1e-4, atol=1e-6)
