"Reference solutions of notebooks/exercises/10_register_tiling.ipynb. Try the exercises first!"
import functools
from utils import cdiv, cuda_prelude, import_notebook
nb10 = import_notebook('10')       # imports notebook 08 first, which picks Numba's simulator where there is no GPU
import numba
from numba import cuda
U, f32 = numba.uint32, numba.float32


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
// 4 floats x[r][c .. c+3] of a rows x cols row-major matrix: one 128-bit load when `fast` (all 4 inside the matrix,
// 16-byte aligned), else one at a time, 0 outside the matrix.
__device__ inline float4 load4(const float* __restrict__ x, int rows, int cols, int r, int c, bool fast) {
    if (fast) return *reinterpret_cast<const float4*>(&x[r * cols + c]);
    return make_float4(at(x, rows, cols, r, c), at(x, rows, cols, r, c + 1), at(x, rows, cols, r, c + 2), at(x, rows, cols, r, c + 3));
}

template <int BM, int BN, int BK, int TM, int TN>
__global__ void regtile_2d(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
                           int M, int N, int K, bool aligned) {
    constexpr int THREADS = BM * BN / (TM * TN), PAD = 4;
    static_assert(BM * BK / 4 == THREADS && BK * BN / 4 == THREADS, "each thread loads one float4 of each tile");
    __shared__ __align__(16) float AsT[BK][BM + PAD], Bs[BK][BN];    // AsT[k][m]: A's tile, transposed
    int m0, n0;
    tile_origin<BM, BN>(M, N, m0, n0);
    const bool full = aligned && m0 + BM <= M && n0 + BN <= N;
    const int row = threadIdx.x / (BN / TN) * TM, col = threadIdx.x % (BN / TN) * TN;   // this thread's TM x TN outputs
    const int ar = threadIdx.x / (BK / 4), ac = threadIdx.x % (BK / 4) * 4;            // its float4 of A's tile: row ar, columns ac ..
    const int br = threadIdx.x / (BN / 4), bc = threadIdx.x % (BN / 4) * 4;            // and of B's tile
    float acc[TM][TN] = {}, a[TM], b[TN];
    for (int k0 = 0; k0 < K; k0 += BK) {
        const bool fast = full && k0 + BK <= K;
        const float4 a4 = load4(A, M, K, m0 + ar, k0 + ac, fast);   // 4 neighbours in A's row: 4 values of k
        const float4 b4 = load4(B, K, N, k0 + br, n0 + bc, fast);
        AsT[ac][ar] = a4.x; AsT[ac + 1][ar] = a4.y; AsT[ac + 2][ar] = a4.z; AsT[ac + 3][ar] = a4.w;   // into 4 rows of AsT
        *reinterpret_cast<float4*>(&Bs[br][bc]) = b4;
        __syncthreads();
        #pragma unroll
        for (int k = 0; k < BK; ++k) {
            #pragma unroll
            for (int t = 0; t < TM; t += 4) *reinterpret_cast<float4*>(&a[t]) = *reinterpret_cast<const float4*>(&AsT[k][row + t]);
            #pragma unroll
            for (int u = 0; u < TN; u += 4) *reinterpret_cast<float4*>(&b[u]) = *reinterpret_cast<const float4*>(&Bs[k][col + u]);
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
    const bool aligned = K % 4 == 0 && N % 4 == 0 && ((uintptr_t)A | (uintptr_t)B) % 16 == 0;
    regtile_2d<128, 128, 8, 8, 8><<<cdiv(M, 128) * cdiv(N, 128), 256, 0, stream>>>(A, B, C, M, N, K, aligned);
    return cudaGetLastError();
}
'''


# Exercise 10.3: a register tile in Numba
@functools.cache
def regtile_numba_kernel(BM, BN, BK, TM, TN):
    "A Numba kernel in which each thread computes a TM x TN tile of C; all sizes are compile-time constants."
    THREADS = BM // TM * (BN // TN)
    A_PER, B_PER = BM * BK // THREADS, BK * BN // THREADS    # elements of each tile that one thread loads
    A_STRIDE = BM + 4                                        # a row of A's transposed tile, padded

    @cuda.jit
    def kernel(A, B, C):
        M, K, N = U(A.shape[0]), U(A.shape[1]), U(B.shape[1])
        As = cuda.shared.array((BK, A_STRIDE), f32)        # A's tile, transposed: As[k, m]
        Bs = cuda.shared.array((BK, BN), f32)
        tid = U(cuda.threadIdx.x)
        m0, n0 = U(cuda.blockIdx.y) * U(BM), U(cuda.blockIdx.x) * U(BN)
        row, col = tid // U(BN // TN) * U(TM), tid % U(BN // TN) * U(TN)   # this thread: C[m0 + row .., n0 + col ..]
        ra = cuda.local.array(A_PER, f32)
        rb = cuda.local.array(B_PER, f32)
        acc = cuda.local.array((TM, TN), f32)               # the register tile
        a = cuda.local.array(TM, f32)
        b = cuda.local.array(TN, f32)
        for i in range(TM):
            for j in range(TN): acc[i, j] = f32(0)
        k0 = U(0)
        while k0 < K:
            for l in range(A_PER):                          # all loads first, so that they are in flight together ...
                e = tid + U(l * THREADS)
                r, c = m0 + e // U(BK), k0 + e % U(BK)
                ra[l] = A[r, c] if r < M and c < K else f32(0)
            for l in range(B_PER):
                e = tid + U(l * THREADS)
                r, c = k0 + e // U(BN), n0 + e % U(BN)
                rb[l] = B[r, c] if r < K and c < N else f32(0)
            for l in range(A_PER):                          # ... then the stores into the tiles
                e = tid + U(l * THREADS)
                As[e % U(BK), e // U(BK)] = ra[l]
            for l in range(B_PER):
                e = tid + U(l * THREADS)
                Bs[e // U(BN), e % U(BN)] = rb[l]
            cuda.syncthreads()                              # the tiles are complete
            for k in range(BK):
                for i in range(TM): a[i] = As[k, row + U(i)]    # TM + TN shared reads ...
                for j in range(TN): b[j] = Bs[k, col + U(j)]
                for i in range(TM):
                    for j in range(TN): acc[i, j] += a[i] * b[j]   # ... for TM * TN multiply-adds, in registers
            cuda.syncthreads()                              # every thread is done with the tiles
            k0 += U(BK)
        for i in range(TM):
            for j in range(TN):
                r, c = m0 + row + U(i), n0 + col + U(j)
                if r < M and c < N: C[r, c] = acc[i, j]
    return kernel
