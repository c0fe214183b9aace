"Reference solutions of notebooks/exercises/08_numba.ipynb. Try the exercises first!"
import functools
from utils import import_notebook
nb08 = import_notebook('08')       # before numba: switches to the simulator where there is no GPU
import numba
from numba import cuda


# Exercise 08.1: B given transposed, with a compile-time tile width
@functools.cache                                    # one kernel per tile width: Numba compiles each once
def nt_tile_kernel(tw):
    "A kernel (m, nt, out) for tw x tw blocks: out = m @ nt.T, nt of shape (w, k), tw a compile-time constant."
    padded = tw + 1                                   # + 1: no bank conflicts; computed here, as Numba needs a constant shape
    @cuda.jit
    def kernel(m, nt, out):
        tr, tc = cuda.threadIdx.y, cuda.threadIdx.x
        r, c = cuda.blockIdx.y*tw + tr, cuda.blockIdx.x*tw + tc
        h, k = m.shape
        w = nt.shape[0]
        row = cuda.blockIdx.x*tw + tr                     # the row of nt (a column of out) this thread loads
        ms = cuda.shared.array((tw, tw), numba.float32)
        ns = cuda.shared.array((tw, padded), numba.float32)   # ns[i, j] = nt[column j, idx + i]
        p = numba.float32(0.0)
        for idx in range(0, k, tw):
            ms[tr, tc] = m[r, idx + tc] if r < h and idx + tc < k else numba.float32(0.0)
            ns[tc, tr] = nt[row, idx + tc] if row < w and idx + tc < k else numba.float32(0.0)   # tc runs along k
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
    acc = numba.float32(0.0)
    for c0 in range(0, k, CHUNK):
        vs[t] = v[c0 + t] if c0 + t < k else numba.float32(0.0)
        cuda.syncthreads()
        if r < h:
            for j in range(min(CHUNK, k - c0)): acc += m[r, c0 + j] * vs[j]
        cuda.syncthreads()
    if r < h: out[r] = acc
