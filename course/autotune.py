"""Compile many variants of a kernel at once, time them, keep the fastest for each shape.

nvcc runs as a separate process, so compiling in threads compiles in parallel: with `compile_cuda`'s
light prelude one variant takes a few seconds of one core, and a machine with 16 cores builds 16 at a time.
"""
import os, time
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import NamedTuple

from .progress import progress as progress_of
from .timing import cuda_time_ms


def compile_all(variants, workers=None, progress=True):
    """Call `v.build()` for every variant in parallel threads; return the seconds it took.
    Variants already built (or found in the compile cache) return at once. `progress` shows a bar of the
    variants compiled so far."""
    variants = list(variants)
    start = time.perf_counter()
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        builds = [pool.submit(v.build) for v in variants]
        for build in progress_of(as_completed(builds), 'compiling', 'variant', total=len(builds), show=progress):
            build.result()          # a failed compile raises here
    return time.perf_counter() - start


class Trial(NamedTuple):
    variant: object
    ms: float


def random_input_pairs(h, k, w, dtype='float32', count=4):
    "`count` pairs of uniform random h x k and k x w matrices on the GPU, of `dtype` (a torch dtype's name)."
    import torch
    t = getattr(torch, dtype)
    return [(torch.rand(h, k, device='cuda').to(t), torch.rand(k, w, device='cuda').to(t)) for _ in range(count)]


def autotune(variants, h, k, w, input_sets=4, progress=True, dtype='float32'):
    """Time every variant on h x k @ k x w (calls back to back, rotating `input_sets` random input pairs of
    `dtype`, a torch dtype's name) and return the trials, fastest first. Variants are compiled first, in
    parallel. `progress` shows bars of the variants compiled and timed so far."""
    variants = list(variants)
    compile_all(variants, progress=progress)
    sets = random_input_pairs(h, k, w, dtype, input_sets)
    trials = [Trial(v, cuda_time_ms(v, arg_sets=sets, back_to_back=10, reps=5, warmup=1, max_seconds=0.5))
              for v in progress_of(variants, f'timing {h}x{k}x{w}', 'variant', show=progress)]
    return sorted(trials, key=lambda t: t.ms)
