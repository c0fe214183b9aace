"""The exercises of notebook 04: one Python thread per CUDA thread, and barriers."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('04.1', 'the second barrier',
          hints=('After the dot products, the next phase overwrites ms and ns. What if one thread gets there while another still reads the old tiles?',
                 'Add a second syncb.wait() at the end of the loop body, after the dot products, so no thread refills the tiles until every thread has finished reading them.'))
def second_barrier(ns, report):
    kernel, = need(ns, 'matmul_tiled_k')
    barriers_in_place(report, kernel, 'matmul_tiled_k')
    tw = 4
    for seed, (h, k, w) in enumerate(((5, 7, 3), (9, 13, 6), (1, 9, 5), (6, 9, 1))):
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, dim3(tw, tw), 2 * tw * tw, seed=seed, tw=tw)
        compare(got, expected, problem(h, k, w, tw=tw))
        at_most(trace, 'global', 'read', 2 * cdiv(k, tw), f"a tiled kernel on {problem(h, k, w, tw=tw)}")
        at_most(trace, 'shared', 'read', 2 * tw * cdiv(k, tw), f"a tiled kernel on {problem(h, k, w, tw=tw)}")
    report.ok("no shared-memory race and no deadlock, with threads started in shuffled orders and switching at random")
    report.ok("right on 5x7 @ 7x3, 9x13 @ 13x6, 1x9 @ 9x5 and 6x9 @ 9x1 with 4x4 blocks")
    report.ok("each thread reads 2 values per phase from global memory and 2*tw from shared memory")


@exercise('04.2', 'rectangular tiles with threads and barriers',
          hints=("A thread loads several elements of a tile: loop over them with a stride of the block's width (for ms) or height (for ns).",
                 'for j in range(tc, tk, tw): ms[tr*tk + j] = m[r*k + idx + j] (0. outside); for i in range(tr, tk, th): ns[i*tw + tc] = n[(idx + i)*w + c]; then p += ms[tr*tk + i] * ns[i*tw + tc] for i < tk.'))
def rectangular_thread_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_k')
    barriers_in_place(report, kernel, 'matmul_rect_k')
    for seed, ((h, k, w), (th, tw, tk)) in enumerate((((5, 7, 3), (4, 2, 6)), ((9, 11, 10), (2, 4, 3)),
                                                       ((1, 13, 6), (3, 3, 5)), ((7, 5, 1), (4, 2, 6)))):
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, dim3(tw, th), th * tk + tk * tw, seed=seed, tk=tk)
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        compare(got, expected, what)
        limit = (cdiv(tk, tw) + cdiv(tk, th)) * cdiv(k, tk)
        at_most(trace, 'global', 'read', limit, f"sharing the loads of each tile among the block's threads on {what}")
    report.ok("no race and no deadlock, with shuffled thread orders")
    report.ok("right with th x tw blocks of 4x2, 2x4 and 3x3 and k-tiles of 6, 3 and 5, on awkward shapes")
    report.ok("the block's threads share the loads of each tile")
