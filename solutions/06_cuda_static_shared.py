"Reference solutions of notebooks/exercises/06_cuda_static_shared.ipynb. Try the exercises first!"
from utils import cuda_prelude

# Exercise 06.1: rectangular tiles in static shared memory
rect_cuda_src = cuda_prelude + r'''
constexpr int TH = 8, TW = 32, TK = 32;   // a block: TH x TW outputs, TW x TH threads; k in steps of TK

__global__ void matmul_rect_k(const float* m, const float* n, float* out, int h, int w, int k) {
    __shared__ float ms[TH][TK], ns[TK][TW];
    int tc = threadIdx.x, tr = threadIdx.y;
    int r = blockIdx.y*TH + tr, c = blockIdx.x*TW + tc;
    float p = 0.0f;
    for (int idx = 0; idx < k; idx += TK) {
        for (int j = tc; j < TK; j += TW) ms[tr][j] = r < h && idx+j < k ? m[r*k + idx+j] : 0.0f;
        for (int i = tr; i < TK; i += TH) ns[i][tc] = c < w && idx+i < k ? n[(idx+i)*w + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < TK; ++i) p += ms[tr][i] * ns[i][tc];
        __syncthreads();
    }
    if (r < h && c < w) out[r*w + c] = p;
}

extern "C" cudaError_t matmul_rect(const float* m, const float* n, float* out, int h, int w, int k, cudaStream_t stream) {
    dim3 tpb(TW, TH), blocks(cdiv(w, TW), cdiv(h, TH));
    matmul_rect_k<<<blocks, tpb, 0, stream>>>(m, n, out, h, w, k);
    return cudaGetLastError();
}
'''

# Exercise 06.2: a transpose through a padded shared tile
transpose_cuda_src = cuda_prelude + r'''
constexpr int TILE = 32, ROWS = 8;   // a block: a 32 x 32 tile, 32 x 8 threads, 4 rows each

__global__ void transpose_k(const float* m, float* out, int h, int w) {
    __shared__ float tile[TILE][TILE + 1];   // +1: a column of the tile spreads over all 32 banks
    int x = blockIdx.x*TILE + threadIdx.x, y0 = blockIdx.y*TILE;
    for (int j = threadIdx.y; j < TILE; j += ROWS)
        if (y0 + j < h && x < w) tile[j][threadIdx.x] = m[(size_t)(y0 + j)*w + x];   // a warp reads a row of m
    __syncthreads();
    int ox = y0 + threadIdx.x, oy0 = blockIdx.x*TILE;
    for (int j = threadIdx.y; j < TILE; j += ROWS)
        if (oy0 + j < w && ox < h) out[(size_t)(oy0 + j)*h + ox] = tile[threadIdx.x][j];   // and writes a row of out
}

extern "C" cudaError_t transpose(const float* m, float* out, int h, int w, cudaStream_t stream) {
    dim3 tpb(TILE, ROWS), blocks(cdiv(w, TILE), cdiv(h, TILE));
    transpose_k<<<blocks, tpb, 0, stream>>>(m, out, h, w);
    return cudaGetLastError();
}
'''

# Exercise 06.3: shared-memory banks, with n given transposed
TH, TW, TK = 8, 32, 32      # a block: TH x TW outputs, TW x TH threads (a warp is one row of them); k in steps of TK
NT_STRIDE = TK + 1          # the row stride of nt's tile in shared memory: one float of padding per row


def matmul_nt_k(blockIdx, threadIdx, blockDim, shared, syncb, m, nt, out, h, w, k):
    tc, tr = threadIdx.x, threadIdx.y
    r, c = blockIdx.y*TH + tr, blockIdx.x*TW + tc
    ms, nts = shared[:TH*TK], shared[TH*TK:]    # ms: TH x TK; nts: the TW rows of nt this block needs, NT_STRIDE apart
    p = 0.
    for idx in range(0, k, TK):
        ms[tr*TK + tc] = m[r*k + idx + tc] if r < h and idx + tc < k else 0.      # TK == TW: one value each
        for j in range(tr, TW, TH):             # row j of the tile: a warp reads 32 neighbours of one row of nt
            row = blockIdx.x*TW + j
            nts[j*NT_STRIDE + tc] = nt[row*k + idx + tc] if row < w and idx + tc < k else 0.
        syncb.wait()
        for i in range(TK): p += ms[tr*TK + i] * nts[tc*NT_STRIDE + i]   # lane tc reads row tc: 33 words apart, 32 banks
        syncb.wait()
    if r < h and c < w: out[r*w + c] = p
