"Reference solutions of notebooks/exercises/10_register_tiling.ipynb. Try the exercises first!"
from utils import cdiv, cuda_prelude, import_notebook
nb10 = import_notebook('10')


# Exercise 10.1: a register tile, in the thread simulator
def regtile_1d_k(blockIdx, threadIdx, blockDim, shared, syncb, m, n, out, h, w, k, TM, BK):
    BN, BM = blockDim.x, blockDim.y * TM
    tc, tr = threadIdx.x, threadIdx.y
    tid, nthreads = tr * BN + tc, BN * blockDim.y
    r0, c0 = blockIdx.y * BM, blockIdx.x * BN
    As, Bs = shared[:BM*BK], shared[BM*BK:]          # As: BM x BK, Bs: BK x BN
    acc = [0.] * TM
    for idx in range(0, k, BK):
        for i in range(tid, BM * BK, nthreads):
            r, j = r0 + i // BK, idx + i % BK
            As[i] = m[r*k + j] if r < h and j < k else 0.
        for i in range(tid, BK * BN, nthreads):
            j, c = idx + i // BN, c0 + i % BN
            Bs[i] = n[j*w + c] if j < k and c < w else 0.
        syncb.wait()
        for kk in range(BK):
            b = Bs[kk*BN + tc]                        # one shared read ...
            for t in range(TM): acc[t] += As[(tr*TM + t)*BK + kk] * b   # ... serves TM multiply-adds
        syncb.wait()
    for t in range(TM):
        r, c = r0 + tr*TM + t, c0 + tc
        if r < h and c < w: out[r*w + c] = acc[t]


# Exercise 10.2: a 2-D register tile in CUDA C, with A's tile stored transposed
regtile_cuda_src = cuda_prelude + nb10.TILE_PRELUDE + r'''
template <int BM, int BN, int BK, int TM, int TN>
__global__ void regtile_2d(const float* A, const float* B, float* C, int M, int N, int K) {
    __shared__ float AsT[BK][BM], Bs[BK][BN];         // A's tile transposed: a thread's TM values of a column are contiguous
    int m0, n0;
    tile_origin<BM, BN>(M, N, m0, n0);
    const int row = threadIdx.x / (BN / TN) * TM, col = threadIdx.x % (BN / TN) * TN;
    float acc[TM][TN] = {}, a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        for (int i = threadIdx.x; i < BM * BK; i += blockDim.x) AsT[i % BK][i / BK] = at(A, M, K, m0 + i / BK, k0 + i % BK);
        for (int i = threadIdx.x; i < BK * BN; i += blockDim.x) Bs[i / BN][i % BN] = at(B, K, N, k0 + i / BN, n0 + i % BN);
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            #pragma unroll
            for (int t = 0; t < TM; ++t) a[t] = AsT[k][row + t];   // contiguous: nvcc reads them with LDS.128
            #pragma unroll
            for (int u = 0; u < TN; ++u) b[u] = Bs[k][col + u];
            #pragma unroll
            for (int t = 0; t < TM; ++t)
                #pragma unroll
                for (int u = 0; u < TN; ++u) acc[t][u] += a[t] * b[u];
        }
        __syncthreads();
    }
    #pragma unroll
    for (int t = 0; t < TM; ++t)
        #pragma unroll
        for (int u = 0; u < TN; ++u)
            if (m0 + row + t < M && n0 + col + u < N) C[(m0 + row + t) * N + n0 + col + u] = acc[t][u];
}

extern "C" cudaError_t matmul_regtile(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    regtile_2d<128, 128, 8, 8, 8><<<cdiv(M, 128) * cdiv(N, 128), 256, 0, stream>>>(A, B, C, M, N, K);
    return cudaGetLastError();
}
'''
