"Reference solutions of notebooks/exercises/08_numba.ipynb. Try the exercises first!"
from utils import import_notebook
nb08 = import_notebook('08')       # before numba: switches to the simulator where there is no GPU
import numba, numpy as np
from numba import cuda


# Exercise 08.1: a Numba kernel with a compile-time tile width
# The answer is notebook 08's factory, static_numba_kernel: a cached function that makes one kernel per tile width.
def static_tile_kernel(tw):
    return nb08.static_numba_kernel(tw)


# Exercise 08.2: a matrix-vector product in Numba
CHUNK = 32   # threads per block, and values of v per chunk

@cuda.jit
def matvec_numba_k(m, v, out):
    t = cuda.threadIdx.x
    r = cuda.blockIdx.x * CHUNK + t
    h, k = m.shape
    vs = cuda.shared.array(CHUNK, numba.float32)
    acc = np.float32(0.0)
    for c0 in range(0, k, CHUNK):
        vs[t] = v[c0 + t] if c0 + t < k else np.float32(0.0)
        cuda.syncthreads()
        if r < h:
            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]
        cuda.syncthreads()
    if r < h: out[r] = acc
