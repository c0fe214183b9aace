"Reference solutions of notebooks/exercises/02_tiling_shared_memory.ipynb. Try the exercises first!"
from utils import cdiv


# Exercise 02.1: fill the tiles
def matmul_tiled_bk(blockIdx, blockDim, shared, m, n, out, h, w, k, tw):
    ms, ns = shared[:tw*tw], shared[tw*tw:]
    for ph in range(cdiv(k, tw)):
        idx = ph * tw
        for tr in range(blockDim.y):
            for tc in range(blockDim.x):
                r, c = blockIdx.y*blockDim.y + tr, blockIdx.x*blockDim.x + tc
                ms[tr*tw + tc] = m[r*k + idx + tc] if r < h and idx + tc < k else 0.
                ns[tr*tw + tc] = n[(idx + tr)*w + c] if c < w and idx + tr < k else 0.
        for tr in range(blockDim.y):
            for tc in range(blockDim.x):
                r, c = blockIdx.y*blockDim.y + tr, blockIdx.x*blockDim.x + tc
                if r < h and c < w:
                    for i in range(tw): out[r*w + c] += ms[tr*tw + i] * ns[i*tw + tc]


# Exercise 02.2: rectangular tiles
def matmul_rect_bk(blockIdx, blockDim, shared, m, n, out, h, w, k, tk):
    th, tw = blockDim.y, blockDim.x
    ms, ns = shared[:th*tk], shared[th*tk:]
    r0, c0 = blockIdx.y*th, blockIdx.x*tw
    for ph in range(cdiv(k, tk)):
        idx = ph * tk
        for i in range(th):                       # ms: th x tk
            for j in range(tk):
                ms[i*tk + j] = m[(r0 + i)*k + idx + j] if r0 + i < h and idx + j < k else 0.
        for i in range(tk):                       # ns: tk x tw
            for j in range(tw):
                ns[i*tw + j] = n[(idx + i)*w + c0 + j] if idx + i < k and c0 + j < w else 0.
        for tr in range(th):
            for tc in range(tw):
                r, c = r0 + tr, c0 + tc
                if r < h and c < w:
                    for i in range(tk): out[r*w + c] += ms[tr*tk + i] * ns[i*tw + tc]
