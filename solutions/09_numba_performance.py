"Reference solutions of notebooks/exercises/09_numba_performance.ipynb. Try the exercises first!"
import statistics, time, torch
from utils import import_notebook
nb08 = import_notebook('08')       # before numba: switches to the simulator where there is no GPU
import numba
from numba import cuda

U = numba.uint32


# Exercise 09.1: a Numba kernel without Python's index fix-ups
@cuda.jit
def lean_dynamic_kernel(m, n, out, tw):
    tw = U(tw)
    tr, tc = U(cuda.threadIdx.y), U(cuda.threadIdx.x)
    r, c = U(cuda.blockIdx.y) * tw + tr, U(cuda.blockIdx.x) * tw + tc
    h, k, w = U(m.shape[0]), U(m.shape[1]), U(n.shape[1])
    shar = cuda.shared.array(0, dtype=numba.float32)
    p = numba.float32(0.0)
    idx = U(0)
    while idx < k:
        shar[tr*tw + tc] = m[r, idx + tc] if r < h and idx + tc < k else numba.float32(0.0)
        shar[tw*tw + tr*tw + tc] = n[idx + tr, c] if c < w and idx + tr < k else numba.float32(0.0)
        cuda.syncthreads()
        i = U(0)
        while i < tw:
            p += shar[tr*tw + i] * shar[tw*tw + i*tw + tc]
            i += U(1)
        cuda.syncthreads()
        idx += tw
    if r < h and c < w: out[r, c] = p


# Exercise 09.2: a timer you can trust
def time_ms(fn, *args, sync=torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None), warmup=3, reps=21):
    "Median milliseconds per call of fn(*args), after `warmup` calls, with sync() (wait for the GPU) before each reading."
    for _ in range(warmup): fn(*args)             # the first calls compile and warm caches: not timed
    sync()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn(*args)
        sync()                                     # a launch returns at once: wait for the work it queued
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)                # one slow call (another process, a clock change) cannot pull it off
