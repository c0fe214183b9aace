"Reference solutions of notebooks/exercises/04_threads_and_barriers.ipynb. Try the exercises first!"
from utils import cdiv


# Exercise 04.1: a fused bias + ReLU epilogue, with your own barriers
def matmul_bias_relu_k(blockIdx, threadIdx, blockDim, shared, syncb, m, n, bias, out, h, w, k, tw):
    tc, tr = threadIdx.x, threadIdx.y
    r = blockIdx.y*blockDim.y + tr
    c = blockIdx.x*blockDim.x + tc
    ms, ns = shared[:tw*tw], shared[tw*tw:]
    p = 0.
    for ph in range(cdiv(k, tw)):
        idx = ph * tw
        ms[tr*tw + tc] = m[r*k + idx + tc] if r < h and idx + tc < k else 0.
        ns[tr*tw + tc] = n[(idx + tr)*w + c] if c < w and idx + tr < k else 0.
        syncb.wait()                          # every thread has stored its elements: the tiles are complete
        for i in range(tw): p += ms[tr*tw + i] * ns[i*tw + tc]
        syncb.wait()                          # every thread has read them: the next phase may overwrite them
    if r < h and c < w: out[r*w + c] = max(p + bias[c], 0.)   # the epilogue: on the whole sum, still in a register


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
