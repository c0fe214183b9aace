"""The exercises of notebook 10: register tiling."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('10.1', 'a register tile, in the thread simulator',
          hints=('A thread computes TM outputs of one column: per k it reads one value of Bs and reuses it for TM multiply-adds.',
                 'for kk in range(BK): b = Bs[kk*BN + tc]; then for t in range(TM): acc[t] += As[(tr*TM + t)*BK + kk] * b.'))
def register_tile_1d(ns, report):
    kernel, = need(ns, 'regtile_1d_k')
    barriers_in_place(report, kernel, 'regtile_1d_k')
    TM, BK = 4, 4
    threads = dim3(4, 2)                  # BN = 4 columns, BM = 2 * TM = 8 rows of outputs per block
    BM, BN = threads.y * TM, threads.x
    for seed, (h, k, w) in enumerate(((9, 10, 7), (1, 9, 5), (8, 13, 1), (17, 8, 9))):
        what = problem(h, k, w, TM=TM, BK=BK)
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, threads, BM * BK + BK * BN,
                                                 rows_per_block=BM, seed=seed, TM=TM, BK=BK)
        compare(got, expected, what)
        fmas = cdiv(k, BK) * BK * TM
        most, (block, thread) = trace.most('shared', 'read')
        limit = cdiv(k, BK) * BK * (TM + 1)
        if most > limit:
            raise NotYet(f"on {what}, thread (x={thread[0]}, y={thread[1]}) of block (x={block[0]}, y={block[1]}) reads "
                         f"{most} shared values for its {fmas} multiply-adds ({most / fmas:.2f} per multiply-add); keep "
                         f"the value of Bs it multiplies with in a register and one read serves TM of them: "
                         f"{limit} reads ({(TM + 1) / TM:.2f} per multiply-add)")
    report.ok("no race, no deadlock; right on 9x10 @ 10x7, 1x9 @ 9x5, 8x13 @ 13x1 and 17x8 @ 8x9")
    report.ok(f"each thread reads at most {(TM + 1) / TM:.2f} shared values per multiply-add (TM={TM})")


@exercise('10.2', 'a 2-D register tile in CUDA C',
          hints=("Store A's tile transposed, AsT[k][row], so that a thread's TM values of A for one k are next to each other, like B's.",
                 'Per k: load a[t] = AsT[k][row + t] and b[u] = Bs[k][col + u] into registers, then acc[t][u] += a[t] * b[u]; every loop bound a constant and #pragma unroll, so acc stays in registers.'), runs_on_gpu=True)
def register_tile_2d(ns, report):
    src, = need(ns, 'regtile_cuda_src')
    mod = compiled(report, src, 'regtile_cuda_src')
    code = require_machine_code(report, src, 'regtile_2d', {
        'multiply-adds': (8 * 8 * 8, "the inner loop does too few multiply-adds: each thread adds a TM x TN outer "
                                     "product per k, 8*8*8 = 512 multiply-adds per tile of k, unrolled"),
        'local memory': (0, "the register tile spilled to local memory: index acc, a and b only with compile-time "
                            "constants (unrolled loops), so they stay in registers")}, 'regtile_2d')
    if code and code[0] == 'SASS':
        wide = count_in(*code, '128-bit shared loads')
        if wide < 2 * 8 * 2:   # per k: TM/4 loads of A and TN/4 of B, 128 bits each, for BK = 8
            raise NotYet(f"the SASS of regtile_2d has {wide} 128-bit shared loads (LDS.128); with A's tile stored "
                         "transposed, a thread's TM values of A are contiguous too and nvcc reads them 4 at a time: "
                         "32 per tile of k (16 for A, 16 for B)")
        report.ok(f"{wide} 128-bit shared loads (LDS.128): A's values are read 4 at a time, like B's")
    elif code:
        report.skip("whether A's values are read 4 at a time (LDS.128: needs cuobjdump's SASS; PTX does not show it)")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and speed need a GPU")
    check_matmul_on_gpu(matmul_via(mod.matmul_regtile), "matmul_regtile",
                        GPU_SHAPES + ((129, 68, 260), (257, 1020, 131)))
    report.ok("right on the lecture's problem and awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_regtile', extra=''))
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_regtile), import_notebook('10').step2, (m, n), 1.15,
                "on the lecture's problem", "notebook 10's step 2")
