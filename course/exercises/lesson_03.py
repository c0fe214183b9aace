"""The exercises of notebook 03: per-thread functions and run_threads."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('03.1', 'a tiled matrix-vector product',
          hints=("Split v into chunks of tw values: in each chunk, every thread first copies one value of v into shared memory, then each thread adds up its row's products with the chunk.",
                 'Two run_threads calls per chunk: one where thread t writes shared[t] = v[c0 + t] (0. past k), one where thread t (row r = blockIdx.x*tw + t) adds m[r*k + c0 + j] * shared[j] for j in the chunk.'))
def tiled_matvec(ns, report):
    kernel, = need(ns, 'matvec_tiled_bk')
    tw = 4
    for h, k in ((5, 7), (1, 9), (9, 1), (13, 20)):
        m, v = rand(h, k), rand(k)
        trace = Trace()
        b = buffers(trace, m=m, v=v, out=m.new_zeros(h))
        restore = with_traced_run_threads(ns, trace)
        try:
            with running(f"matvec_tiled_bk on m {h}x{k}"):
                run_block_kernels(kernel, dim3(cdiv(h, tw), 1), dim3(tw, 1), tw, b['m'], b['v'], b['out'], h, k, trace=trace)
        finally: restore()
        compare(as_tensor(b['out'], h), m @ v, f"m {h}x{k} @ v {k}")
        at_most(trace, 'v', 'read', cdiv(k, tw),
                f"m {h}x{k} @ v: with v's chunks in shared memory, each thread reads one value of v per chunk, so it")
        if max((c[('shared', 'read')] for c in trace.counts.values()), default=0) == 0:
            raise NotYet("no thread reads shared memory: put each chunk of v in `shared` and read v from there")
    report.ok("right on 5x7, 1x9, 9x1 and 13x20 with 4 threads per block")
    report.ok("v is read from global memory once per chunk and thread; the dot products read it from shared memory")


@exercise('03.2', 'a transpose through a shared tile',
          hints=('Read the tile row by row (neighbouring threads, neighbouring columns of m), then write it out row by row of the result, reading the shared tile transposed.',
                 'Load: tile[tr*tw + tc] = m[(by*tw + tr)*w + bx*tw + tc]. Store: out[(bx*tw + tr)*h + by*tw + tc] = tile[tc*tw + tr], both guarded by the bounds of the element they touch.'))
def transpose_through_shared(ns, report):
    kernel, = need(ns, 'transpose_tiled_bk')
    tw = 4
    for h, w in ((5, 7), (1, 9), (9, 1), (6, 8)):
        m = rand(h, w)
        trace = Trace()
        b = buffers(trace, m=m)
        out = nan_buffer(trace, 'out', h * w)
        restore = with_traced_run_threads(ns, trace)
        try:
            with running(f"transpose_tiled_bk on a {h}x{w} m"):
                run_block_kernels(kernel, dim3(cdiv(w, tw), cdiv(h, tw)), dim3(tw, tw), tw * tw, b['m'], out, h, w, trace=trace)
        finally: restore()
        compare(as_tensor(out, w, h), m.t(), f"transposing a {h}x{w} m")
        at_most(trace, 'global', 'read', 1, "a transpose")
        at_most(trace, 'global', 'write', 1, "a transpose")
        uncoalesced('write', 'out', trace)
        uncoalesced('read', 'm', trace)
    report.ok("right on 5x7, 1x9, 9x1 and 6x8 with 4x4 blocks")
    report.ok("neighbouring threads read neighbouring elements of m and write neighbouring elements of out")
