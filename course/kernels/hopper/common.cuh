// What a warpgroup of every notebook-13 step does with a stage and with its results: the constants BK, BOX and
// ROW, multiply_stage (one stage's wgmmas, step 1 on), store_accumulators (C stored by the threads, steps 1 to 5),
// pack_bf16 and stage_box (C staged for a TMA store, steps 6 to 8). The notebook reads it as HOPPER_COMMON, after
// the wgmma_m64k16 functions that Python writes out (wgmma_function).

constexpr int BK = 64;       // K per stage: 64 bf16 = 128 bytes, one row of the 128-byte swizzle
constexpr int BOX = 64;      // columns of B per TMA box: 128 bytes again (a swizzled box is at most 128 bytes wide)
constexpr int ROW = 128;     // bytes per row of every shared tile

// One warpgroup's D (64 x BN) += its 64 rows of A's stage (from a_rows) x B's stage: BK / 16 wgmmas. The first
// call of a tile passes first = true, so that its first wgmma overwrites D instead of adding to it.
template <int BN>
__device__ inline void multiply_stage(float (&d)[BN / 2], const char* a_rows, const char* b_tile, bool first) {
    #pragma unroll
    for (int kk = 0; kk < BK / 16; ++kk)
        wgmma_m64k16(d, descriptor_a(a_rows + kk * 16 * 2), descriptor_b(b_tile + kk * 16 * ROW, BK * ROW), !(first && kk == 0));
}

// One warpgroup's 64 x BN accumulators into C at (m0, n0). Lane l of warp w holds rows 16w + l/4 and 16w + l/4 + 8,
// columns 8j + 2(l%4) and the next for each j < BN/8: notebook 12's mma.sync C layout, repeated along N.
template <int BN>
__device__ inline void store_accumulators(__nv_bfloat16* C, int M, int N, int m0, int n0, const float (&d)[BN / 2]) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
    const int r = m0 + 16 * warp + lane / 4, c = n0 + 2 * (lane % 4);
    #pragma unroll
    for (int j = 0; j < BN / 8; ++j) {
        store_pair(C, M, N, r, c + 8 * j, d[4 * j], d[4 * j + 1], true);
        store_pair(C, M, N, r + 8, c + 8 * j, d[4 * j + 2], d[4 * j + 3], true);
    }
}

// A warpgroup's accumulators as bf16 pairs, the form C is stored in: pair i holds d[2i] and d[2i + 1], two
// neighbouring columns of one row, in half the registers.
template <int BN>
__device__ inline void pack_bf16(uint32_t (&pairs)[BN / 4], const float (&d)[BN / 2]) {
    #pragma unroll
    for (int i = 0; i < BN / 4; ++i) {
        const __nv_bfloat162 pair = __floats2bfloat162_rn(d[2 * i], d[2 * i + 1]);
        pairs[i] = *reinterpret_cast<const uint32_t*>(&pair);
    }
}

// Box b of those pairs (columns 64b to 64b + 63) into a box of shared memory laid out for a TMA store: 64 rows x
// 128 bytes with the 128-byte swizzle, so that the 32 pairs a warp writes at once fall in 32 different banks. (b
// must be known when compiling, as it is in a loop the compiler unrolls: registers have no addresses, so pairs[]
// may only be indexed by constants.)
template <int BN>
__device__ inline void stage_box(char* box, const uint32_t (&pairs)[BN / 4], int b) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32 % 4;
    #pragma unroll
    for (int j = 0; j < BOX / 8; ++j)
        #pragma unroll
        for (int half = 0; half < 2; ++half) {
            const int row = 16 * warp + lane / 4 + 8 * half, col = 8 * j + 2 * (lane % 4), at = (row * ROW + col * 2) ^ (row % 8 * 16);
            *reinterpret_cast<uint32_t*>(box + at) = pairs[2 * (b * BOX / 8 + j) + half];
        }
}
