"Reference solutions of notebooks/exercises/04_threads_and_barriers.ipynb. Try the exercises first!"
from utils import cdiv, import_notebook
nb04 = import_notebook('04')


# Exercise 04.1: the second barrier
# The answer is notebook 04's kernel: a second syncb.wait() after the dot products, before the next phase refills the tiles.
matmul_tiled_k = nb04.matmul_tiled_bk


# Exercise 04.2: rectangular tiles with threads and barriers
def matmul_rect_k(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, tk):
    th, tw = blockDim.y, blockDim.x
    tc, tr = threadIdx.x, threadIdx.y
    r, c = blockIdx.y*th + tr, blockIdx.x*tw + tc
    ms, ns = shared[:th*tk], shared[th*tk:]        # ms: th x tk, ns: tk x tw
    p = 0.
    for ph in range(cdiv(k, tk)):
        idx = ph * tk
        for j in range(tc, tk, tw):                # row tr of ms: the tw threads of the row share its tk loads
            ms[tr*tk + j] = m[r*k + idx + j] if r < h and idx + j < k else 0.
        for i in range(tr, tk, th):                # column tc of ns: the th threads of the column share its tk loads
            ns[i*tw + tc] = n[(idx + i)*w + c] if c < w and idx + i < k else 0.
        syncb.wait()
        for i in range(tk): p += ms[tr*tk + i] * ns[i*tw + tc]
        syncb.wait()
    if r < h and c < w: out[r*w + c] = p
