"Reference solutions of notebooks/exercises/02_tiling_shared_memory.ipynb. Try the exercises first!"
from utils import cdiv


# Exercise 02.1: the tiled kernel, with n given transposed
def matmul_nt_bk(blockIdx, blockDim, shared, m, nT, out, h, w, k, tw):
    ms, ns = shared[:tw*tw], shared[tw*tw:]
    r0, c0 = blockIdx.y*tw, blockIdx.x*tw         # the block's first output row and column
    for ph in range(cdiv(k, tw)):
        idx = ph * tw
        for tr in range(tw):
            for tc in range(tw):
                ms[tr*tw + tc] = m[(r0 + tr)*k + idx + tc] if r0 + tr < h and idx + tc < k else 0.
                # Row c0 + tr of nT is column c0 + tr of n. Thread (tr, tc) reads along that row, so neighbours in
                # tc read neighbours in nT (on a GPU: one coalesced read), and stores the value where notebook 02's
                # ns has it, ns[i*tw + j] = n[idx + i, c0 + j]: the dot products stay as they were.
                ns[tc*tw + tr] = nT[(c0 + tr)*k + idx + tc] if c0 + tr < w and idx + tc < k else 0.
        for tr in range(tw):                      # the dot products, unchanged from notebook 02
            for tc in range(tw):
                if r0 + tr < h and c0 + tc < w:
                    out[(r0 + tr)*w + c0 + tc] += sum(ms[tr*tw + i] * ns[i*tw + tc] for i in range(tw))


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
