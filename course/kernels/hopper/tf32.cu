// The lecture's fp32 inputs on Hopper's tensor cores: TF32 wgmma (course/hopper_tf32.py). Compiled after notebook 13's
// device code (its PTX wrappers and descriptors) and the wgmma_tf32 functions Python writes out (wgmma_tf32_function).

// wgmma takes TF32 operands from shared memory only K-major: along K, consecutive in memory. A (M x K, rows of K) is;
// B (K x N, rows of N) is not, and wgmma transposes only 16-bit types. So the kernel computes C's transpose,
// C^T = B^T A^T: the left operand, B^T, comes from registers, where any layout can be built (each consumer thread
// reads its values of B from shared memory), and the right one, A^T, is A's tile as TMA copies it, K-major as
// wgmma wants. Each wgmma multiplies 64 columns of C (rows of C^T) by all BM rows of the tile (its n = BM), 8 of K.
//
// A producer warpgroup copies A's tile (BM rows x 32 floats of K: 128 bytes a row, the 128-byte swizzle) and B's
// (32 rows of K x BN columns, in boxes of 32 columns) into STAGES stages; two consumers each multiply 64 of the
// tile's BN = 128 columns, and store their results to C from registers. The kernel is persistent: each cluster takes
// units blockIdx.x / CLUSTER, + the number of clusters, and so on. A unit is CLUSTER tiles side by side, which read
// the same rows of A: with CLUSTER = 2, each block's producer copies half of A's tile into the shared memory of both
// blocks (TMA multicast, as notebook 13's step 5 shares B's), so that each block reads half of A from L2.
constexpr int TBK = 32;      // K per stage: 32 floats = 128 bytes, one row of the 128-byte swizzle
constexpr int TBOX = 32;     // columns of B per TMA box (128 bytes)

// B's value at (k, n) of a stage's tile (n < BN), as TMA left it: box n / 32, row k of 128 bytes, whose 16-byte chunks
// are swizzled by the row's place in its group of 8 (the pattern of notebook 13's section 2).
__device__ inline float b_value(const char* b_tile, int k, int n) {
    const int c = n % TBOX;
    return *reinterpret_cast<const float*>(b_tile + n / TBOX * TBK * 128 + k * 128 + ((c / 4) ^ (k % 8)) * 16 + c % 4 * 4);
}

// The fragment of B^T one thread gives wgmma for 8 of K (from kk), rounded to TF32 (to nearest): a0 at (row g,
// column t) of the warp's 16 x 8 piece, a1 at (g + 8, t), a2 at (g, t + 4), a3 at (g + 8, t + 4), where g = lane / 4
// and t = lane % 4; rows of B^T are columns n of C, columns are K.
__device__ inline void b_fragment(uint32_t (&a)[4], const char* b_tile, int kk, int n) {
    const int t = threadIdx.x % 4;
    #pragma unroll
    for (int r = 0; r < 4; ++r) {
        const float v = b_value(b_tile, kk + t + 4 * (r / 2), n + 8 * (r % 2));
        asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(a[r]) : "f"(v));
    }
}

template <int BM, int BN, int STAGES, int GROUP, int CLUSTER>
__global__ void __launch_bounds__(384, 1) tf32_transposed(const __grid_constant__ CUtensorMap a_map,
        const __grid_constant__ CUtensorMap b_map, float* C, int M, int N, int K) {
    static_assert(BN == 128, "two consumers of 64 columns each");
    constexpr int A_BYTES = BM * 128, STAGE = A_BYTES + TBK * BN * 4;
    extern __shared__ char shared_raw[];
    char* tiles = align_1024(shared_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(tiles + STAGES * STAGE), *empty = full + STAGES;
    const int k_tiles = cdiv(K, TBK), units = cdiv(M, BM) * cdiv(N, BN * CLUSTER);
    const int rank = CLUSTER > 1 ? cluster_rank() : 0, cluster = blockIdx.x / CLUSTER, clusters = gridDim.x / CLUSTER;
    if (threadIdx.x == 0) {                                      // empty: the consumer warps of every block of the cluster
        for (int s = 0; s < STAGES; ++s) { barrier_init(&full[s], 1); barrier_init(&empty[s], 8 * CLUSTER); }
        barrier_init_fence();
    }
    if (CLUSTER > 1) cluster_sync(); else __syncthreads();     // no copy may land in a block before its barriers exist
    if (threadIdx.x / 128 == 0) {                                // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x == 0) {
            int use = 0;
            for (int unit = cluster; unit < units; unit += clusters) {
                int m0, n0;
                tile_origin<BM, BN * CLUSTER, GROUP>(unit, M, N, m0, n0);
                n0 += rank * BN;                                 // this block's tile of the unit
                for (int kt = 0; kt < k_tiles; ++kt, ++use) {
                    const int s = use % STAGES;
                    char* a = tiles + s * STAGE;
                    barrier_wait(&empty[s], (use / STAGES % 2) ^ 1);
                    barrier_arrive_expect(&full[s], STAGE);
                    if constexpr (CLUSTER > 1)                   // this block's share of A's rows, into every block
                        tma_load_multicast(a + rank * A_BYTES / CLUSTER, a_map, &full[s], kt * TBK, m0 + rank * BM / CLUSTER,
                                           (1 << CLUSTER) - 1);
                    else tma_load(a, a_map, &full[s], kt * TBK, m0);
                    for (int j = 0; j < BN / TBOX; ++j) tma_load(a + A_BYTES + j * TBK * 128, b_map, &full[s], n0 + j * TBOX, kt * TBK);
                }
            }
        }
    } else {                                                     // a consumer: columns 64 x consumer on of the tile
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = threadIdx.x / 128 - 1, warp = threadIdx.x / 32 % 4, lane = threadIdx.x % 32;
        const int column = 64 * consumer + 16 * warp + lane / 4;  // this thread's first column of the tile
        float d[BM / 2];
        int use = 0;
        for (int unit = cluster; unit < units; unit += clusters) {
            int m0, n0;
            tile_origin<BM, BN * CLUSTER, GROUP>(unit, M, N, m0, n0);
            n0 += rank * BN;
            for (int kt = 0; kt < k_tiles; ++kt, ++use) {
                const int s = use % STAGES;
                const char* a = tiles + s * STAGE;
                barrier_wait(&full[s], use / STAGES % 2);
                uint32_t frag[TBK / 8][4];
                #pragma unroll
                for (int kk = 0; kk < TBK / 8; ++kk) b_fragment(frag[kk], a + A_BYTES, 8 * kk, column);
                wgmma_fence();
                #pragma unroll
                for (int kk = 0; kk < TBK / 8; ++kk)          // A's tile, 8 of K (32 bytes) further each time
                    wgmma_tf32(d, frag[kk], descriptor_a(a + kk * 32), !(kt == 0 && kk == 0));
                wgmma_commit();
                wgmma_wait<0>();
                touch(d);
                if (lane == 0)                                   // done with stage s, in every block that wrote into it
                    for (int r = 0; r < CLUSTER; ++r)
                        if constexpr (CLUSTER > 1) barrier_arrive_cluster(&empty[s], r); else barrier_arrive(&empty[s]);
            }
            // d holds C^T: d[4j] is C at row m0 + 8j + 2(lane % 4), column n0 + column; d[4j + 1] the row below;
            // d[4j + 2] and d[4j + 3] the same rows 8 columns right. A warp's 32 stores of one register cover 4 rows
            // x 8 neighbouring columns: four whole 32-byte sectors.
            const int n = n0 + column;
            #pragma unroll
            for (int j = 0; j < BM / 8; ++j) {
                const int m = m0 + 8 * j + 2 * (lane % 4);
                #pragma unroll
                for (int r = 0; r < 4; ++r) {
                    const int row = m + r % 2, col = n + 8 * (r / 2);
                    if (row < M && col < N) C[(size_t)row * N + col] = d[4 * j + r];
                }
            }
        }
    }
    if (CLUSTER > 1) cluster_sync();        // a block leaves only when the other can no longer write into it
}
