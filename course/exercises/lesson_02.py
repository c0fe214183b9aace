"""The exercises of notebook 02: tiles in simulated shared memory, one Python call per block."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('02.1', 'fill the tiles',
          hints=('Each thread of the block loads one element of each tile: the block kernel does it for all threads with run_threads or a double loop over tr, tc.',
                 'ms[tr*tw + tc] = m[r*k + idx + tc] and ns[tr*tw + tc] = n[(idx + tr)*w + c], with 0. where the index leaves the matrix; the dot products then read only ms and ns.'))
def fill_the_tiles(ns, report):
    kernel, = need(ns, 'matmul_tiled_bk')
    for (h, k, w), tw in (((5, 7, 3), 4), ((1, 37, 5), 8), ((6, 37, 1), 8), ((17, 9, 13), 4)):
        got, expected, trace = run_matmul_kernel(run_block_kernels, kernel, h, k, w, dim3(tw, tw), 2 * tw * tw, tw=tw)
        compare(got, expected, problem(h, k, w, tw=tw))
        limit = 2 * tw * tw * cdiv(k, tw)
        most, (block, _) = trace.most('m', 'read', 'n')
        if most > limit:
            raise NotYet(f"on {problem(h, k, w, tw=tw)}, block (x={block[0]}, y={block[1]}) reads {most} values from global "
                         f"memory, {most / (tw * tw):.1f} per thread; with each value of a tile read once, {limit} "
                         f"({limit // (tw * tw)} per thread) are enough: read the dot products from ms and ns")
    report.ok("right on 5x7 @ 7x3 (tw=4), 1x37 @ 37x5 and 6x37 @ 37x1 (tw=8), 17x9 @ 9x13 (tw=4)")
    report.ok("every block reads each element of its tiles from global memory once: 2*tw*tw per phase")


@exercise('02.2', 'rectangular tiles',
          hints=('With th x tk and tk x tw tiles, a phase covers tk values of k; rows of the output come in steps of th, columns in steps of tw.',
                 'ms has th rows of tk, ns has tk rows of tw: fill ms[i*tk + j] from m[(r0 + i)*k + idx + j] and ns[i*tw + j] from n[(idx + i)*w + c0 + j], 0. outside; then p += ms[tr*tk + i] * ns[i*tw + tc] for i < tk.'))
def rectangular_block_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_bk')
    for (h, k, w), (th, tw, tk) in (((5, 7, 3), (4, 8, 4)), ((9, 11, 10), (8, 2, 3)), ((1, 13, 6), (2, 4, 8)),
                                    ((7, 5, 1), (4, 2, 6))):
        got, expected, trace = run_matmul_kernel(run_block_kernels, kernel, h, k, w, dim3(tw, th), th * tk + tk * tw, tk=tk)
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        compare(got, expected, what)
        limit = (th * tk + tk * tw) * cdiv(k, tk)
        most, (block, _) = trace.most('m', 'read', 'n')
        if most > limit:
            raise NotYet(f"on {what}, block (x={block[0]}, y={block[1]}) reads {most} values from global memory; reading "
                         f"each tile once needs {limit} (th*tk + tk*tw per phase)")
    report.ok("right with th x tw blocks of 4x8, 8x2, 2x4 and 4x2 and k-tiles of 4, 3, 8 and 6, on awkward shapes")
    report.ok("every block reads each element of its tiles once")
