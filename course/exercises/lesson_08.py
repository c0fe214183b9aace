"""The exercises of notebook 08: Numba."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('08.1', 'a Numba kernel with a compile-time tile width',
          hints=("A Numba kernel's shared array must have a compile-time shape: build the kernel inside a function of tw, where tw is a constant.",
                 'Decorate the factory with @functools.cache so each tw compiles once, and inside it use cuda.shared.array((tw, tw), numba.float32).'), runs_on_gpu=True)
def numba_static_tile(ns, report):
    factory, = need(ns, 'static_tile_kernel')
    nb08 = numba_tools()
    with running("static_tile_kernel(4)"): first, again = factory(4), factory(4)
    if first is not again:
        raise NotYet("static_tile_kernel(4) makes a new kernel on every call, and Numba compiles each one anew: "
                     "cache the factory (functools.cache) so each tile width is compiled once")
    report.ok("static_tile_kernel compiles each tile width once")
    src = strip_comments(source_of(factory))
    if 'shared.array(0' in src.replace(' ', ''):
        raise NotYet("the shared arrays are dynamic (size 0): give them the compile-time shape (tw, tw)")
    check_numba_matmul(nb08, lambda tw: numba_matmul(nb08, factory(tw), tw), report, "static_tile_kernel")
    if nb08.SIMULATOR: return report.skip("speed (needs a GPU)")
    from ..correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    faster_than(report, numba_matmul(nb08, factory(16), 16), nb08.matmul_numba_static, (m, n), 1.1,
                "on the lecture's problem, tw=16", "notebook 08's matmul_numba_static")


@exercise('08.2', 'a matrix-vector product in Numba',
          hints=("One thread per row: each block copies a chunk of v into a cuda.shared.array, then every thread adds its row's products with it.",
                 'Per chunk: vs[t] = v[c0 + t] (0 past k), cuda.syncthreads(), the products, then a second cuda.syncthreads() before the next chunk overwrites vs.'), runs_on_gpu=True)
def numba_matvec(ns, report):
    import torch
    kernel, CHUNK = need(ns, 'matvec_numba_k', 'CHUNK')
    nb08 = numba_tools()
    shapes = ((5, 7), (1, 40), (40, 1), (70, 45)) if nb08.SIMULATOR else ((1000, 300), (1, 300), (1000, 1), (4096, 4096))
    for h, k in shapes:
        m, v = rand(h, k, device=nb08.DEVICE), rand(k, device=nb08.DEVICE)
        out = torch.full((h,), math.nan, device=nb08.DEVICE)
        with running(f"matvec_numba_k on m {h}x{k}"):
            kernel[cdiv(h, CHUNK), CHUNK, nb08.numba_stream()](*(nb08.as_kernel_array(t) for t in (m, v, out)))
        compare(out, m @ v, f"m {h}x{k} @ v" + (" in Numba's simulator" if nb08.SIMULATOR else ''), atol=1e-3)
    report.ok(f"right on m {', '.join(f'{h}x{k}' for h, k in shapes)}" + (" in Numba's simulator" if nb08.SIMULATOR else ' on the GPU'))
    src = strip_comments(source_of(kernel))
    if 'shared.array' not in src: raise NotYet("keep each chunk of v in a cuda.shared.array of CHUNK values")
    if src.count('syncthreads') < 2:
        raise NotYet("two cuda.syncthreads() per chunk are needed: after filling the chunk, and after using it")
    report.ok("v goes through shared memory, with a barrier after filling each chunk and after using it")
