"Reference solutions of notebooks/exercises/08_numba.ipynb. Try the exercises first!"
import functools
from utils import import_notebook
nb08 = import_notebook('08')       # before numba: switches to the simulator where there is no GPU
import numba, numpy as np
from numba import cuda


# Exercise 08.1: a Numba kernel with a compile-time tile width
@functools.cache
def static_tile_kernel(tw):
    @cuda.jit
    def kernel(m, n, out):
        tr, tc = cuda.threadIdx.y, cuda.threadIdx.x
        r, c = cuda.blockIdx.y*tw + tr, cuda.blockIdx.x*tw + tc
        h, k = m.shape
        w = n.shape[1]
        ms = cuda.shared.array((tw, tw), numba.float32)   # tw is a constant here: static shared memory
        ns = cuda.shared.array((tw, tw), numba.float32)
        p = np.float32(0.0)
        for idx in range(0, k, tw):
            ms[tr, tc] = m[r, idx + tc] if r < h and idx + tc < k else np.float32(0.0)
            ns[tr, tc] = n[idx + tr, c] if c < w and idx + tr < k else np.float32(0.0)
            cuda.syncthreads()
            for i in range(tw): p += ms[tr, i] * ns[i, tc]
            cuda.syncthreads()
        if r < h and c < w: out[r, c] = p
    return kernel


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
