"""The exercises of notebook 06: CUDA C with static shared memory."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('06.1', 'rectangular tiles in static shared memory',
          hints=('With constants TH, TW and TK, the shared tiles are static arrays: __shared__ float ms[TH][TK], ns[TK][TW].',
                 'A th x tw block loads a th x tk tile of m and a tk x tw tile of n: each thread loads tk/tw values of ms and tk/th of ns in strided loops, then two __syncthreads() around the dot product.'), runs_on_gpu=True)
def static_rect_tiles(ns, report):
    import re
    src, = need(ns, 'rect_cuda_src')
    if re.search(r'extern\s+__shared__', src):
        raise NotYet("use static shared arrays sized by the constants (`__shared__ float ms[TH][TK];`), not `extern __shared__`")
    mod = compiled(report, src, 'rect_cuda_src')
    require_machine_code(report, src, 'matmul_rect_k', TILED_NEEDS, 'matmul_rect_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    check_matmul_on_gpu(matmul_via(mod.matmul_rect), "matmul_rect")
    report.ok("right on the lecture's problem and awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_rect', extra=''))
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_rect), import_notebook('06').matmul_static, (m, n), 1.1,
                "on the lecture's problem", "notebook 06's 16x16 matmul_static")


@exercise('06.2', 'a transpose through a padded shared tile',
          hints=('Read a tile with neighbouring threads on neighbouring columns of m, and write it with neighbouring threads on neighbouring columns of out: only the shared tile is read transposed.',
                 '__shared__ float tile[32][33]: the extra column shifts each row by one bank, so reading a column of the tile touches 32 different banks.'), runs_on_gpu=True)
def cuda_transpose(ns, report):
    import torch
    src, = need(ns, 'transpose_cuda_src')
    mod = compiled(report, src, 'transpose_cuda_src')
    require_machine_code(report, src, 'transpose_k', {
        'shared stores': (1, "the kernel never stores to shared memory: stage each tile in a __shared__ array"),
        'shared loads': (1, "the kernel never reads shared memory: write out from the tile"),
        'barriers': (1, "a __syncthreads() is missing between filling the tile and reading it")}, 'transpose_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    def transpose(m):
        out = torch.full((m.shape[1], m.shape[0]), math.nan, device=m.device)
        mod.transpose(m, out, m.shape[0], m.shape[1])
        return out
    for h, w in ((1000, 700), (1, 700), (700, 1), (33, 17), (4096, 4096)):
        m = rand(h, w, device='cuda')
        with running(f"transpose on a {h}x{w} m"): got = transpose(m)
        compare(got, m.t(), f"transposing a {h}x{w} m")
    report.ok("right on 1000x700, 1x700, 700x1, 33x17 and 4096x4096")
    sanitized(report, src, '''
for h, w in ((33, 17), (1, 70), (70, 1)):
    mod.transpose(torch.rand(h, w, device='cuda'), torch.empty(w, h, device='cuda'), h, w)
''')
    m = rand(8192, 8192, device='cuda')
    faster_than(report, transpose, lambda m: m.t().contiguous(), (m,), 1.25, "an 8192x8192 transpose",
                "torch's m.t().contiguous()")
