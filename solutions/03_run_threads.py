"Reference solutions of notebooks/exercises/03_run_threads.ipynb. Try the exercises first!"
from utils import cdiv, cuda_prelude, dim3, import_notebook
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


# Exercise 03.3: coalesced reads and writes: which thread takes which element
def scale_rows_k(blockIdx, threadIdx, blockDim, m, s, out, h, w):
    "out = s[:, None] * m for h x w matrices stored column by column: element (r, c) at m[c*h + r]."
    r = blockIdx.x*blockDim.x + threadIdx.x     # threadIdx.x along r: from one thread of a warp to the next,
    c = blockIdx.y*blockDim.y + threadIdx.y     # c*h + r grows by one element, so the warp's accesses coalesce
    if r < h and c < w: out[c*h + r] = m[c*h + r] * s[r]


def scale_rows_blocks(h, w, blockDim):
    "x covers the rows, y the columns."
    return dim3(cdiv(h, blockDim.x), cdiv(w, blockDim.y))


# Exercise 03.4: coalescing on a GPU: the same kernel in CUDA C
scale_rows_cuda_src = cuda_prelude + r"""
__global__ void scale_rows_k(const float* m, const float* s, float* out, int h, int w) {
    int r = blockIdx.x*blockDim.x + threadIdx.x;     // threadIdx.x along r: a warp reads 32 neighbours of a column
    int c = blockIdx.y*blockDim.y + threadIdx.y;
    if (r < h && c < w) out[(size_t)c*h + r] = m[(size_t)c*h + r] * s[r];
}

extern "C" cudaError_t scale_rows(const float* m, const float* s, float* out, int h, int w, cudaStream_t stream) {
    dim3 tpb(32, 8), blocks(cdiv(h, tpb.x), cdiv(w, tpb.y));
    scale_rows_k<<<blocks, tpb, 0, stream>>>(m, s, out, h, w);
    return cudaGetLastError();
}
"""
