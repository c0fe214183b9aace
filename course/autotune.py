"""Compile many variants of a kernel at once, time them, keep the fastest for each shape.

nvcc runs as a separate process, so compiling in threads compiles in parallel: with `compile_cuda`'s
light prelude one variant takes a few seconds of one core, and a machine with 16 cores builds 16 at a time.
"""
import os, time
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

from .timing import cuda_time_ms


def compile_all(variants, workers=None):
    """Call `v.build()` for every variant in parallel threads; return the seconds it took.
    Variants already built (or found in the compile cache) return at once."""
    start = time.perf_counter()
    with ThreadPoolExecutor(workers or os.cpu_count() or 1) as pool:
        list(pool.map(lambda v: v.build(), variants))
    return time.perf_counter() - start


class Trial(NamedTuple):
    variant: object
    ms: float


def autotune(variants, h, k, w, input_sets=4):
    """Time every variant on h x k @ k x w (calls back to back, rotating `input_sets` random input pairs)
    and return the trials, fastest first. Variants are compiled first, in parallel."""
    import torch
    compile_all(variants)
    sets = [(torch.rand(h, k, device='cuda'), torch.rand(k, w, device='cuda')) for _ in range(input_sets)]
    trials = [Trial(v, cuda_time_ms(v, arg_sets=sets, back_to_back=10, reps=5, warmup=1, max_seconds=0.5)) for v in variants]
    return sorted(trials, key=lambda t: t.ms)
