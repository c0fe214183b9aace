"Reference solutions of notebooks/exercises/03_run_threads.ipynb. Try the exercises first!"
from utils import cdiv, import_notebook
run_threads = import_notebook('03').run_threads


# Exercise 03.1: a tiled matrix-vector product
def matvec_tiled_bk(blockIdx, blockDim, shared, m, v, out, h, k):
    tw = blockDim.x

    def load_chunk(tr, tc, ph):
        i = ph*tw + tc
        shared[tc] = v[i] if i < k else 0.

    def dot_chunk(tr, tc, ph):
        r = blockIdx.x*tw + tc
        if r >= h: return
        for i in range(min(tw, k - ph*tw)):      # the last chunk may be short: stay inside row r
            out[r] += m[r*k + ph*tw + i] * shared[i]

    for ph in range(cdiv(k, tw)):
        run_threads(load_chunk, blockDim, ph)
        run_threads(dot_chunk, blockDim, ph)


# Exercise 03.2: a transpose through a shared tile
def transpose_tiled_bk(blockIdx, blockDim, shared, m, out, h, w):
    tw = blockDim.x

    def load_tile(tr, tc):                         # row tr of the tile: neighbours read neighbours in m
        r, c = blockIdx.y*tw + tr, blockIdx.x*tw + tc
        if r < h and c < w: shared[tr*tw + tc] = m[r*w + c]

    def store_tile(tr, tc):                        # row tr of out's tile is column tr of m's tile
        r, c = blockIdx.x*tw + tr, blockIdx.y*tw + tc     # out is w x h
        if r < w and c < h: out[r*h + c] = shared[tc*tw + tr]

    run_threads(load_tile, blockDim)
    run_threads(store_tile, blockDim)
