// The kernel of notebook 13's steps 1, 2 and 2b: one warpgroup, whose thread 0 issues the TMA copies. Step 1 is
// STAGES = 1, step 2 STAGES = 4, step 2b STAGES = 4 with IN_FLIGHT = 1. The notebook reads it as TMA_WGMMA_KERNEL;
// each step's section shows it with the step's parameters (course/step_listings.py).

// Steps 1, 2 and 2b: one warpgroup (128 threads) computes a BM x BN tile of C, BM / 64 wgmmas of 64 rows each.
// Thread 0 copies A's and B's tiles by TMA into STAGES shared buffers; buffer s has a barrier full[s] that
// completes when its bytes have landed. A copy into a buffer waits until the warpgroup is done with it.
// STAGES > 1 (step 2): the copies of the next stages fly while this one is multiplied.
// IN_FLIGHT > 0 (step 2b): a stage's wgmmas are waited for only after the next stage's are issued, so the tensor
// cores always have a group queued; the stage then released is the one before.
template <int BM, int BN, int STAGES, int GROUP, int IN_FLIGHT>
__global__ void __launch_bounds__(128) tma_wgmma(const __grid_constant__ CUtensorMap a_map,
        const __grid_constant__ CUtensorMap b_map, const __grid_constant__ CUtensorMap c_map, __nv_bfloat16* C,
        int M, int N, int K, const StreamK) {              // (c_map, StreamK: for the kernels that use them)
    constexpr int A_BYTES = BM * ROW, B_BYTES = BK * BN * 2, STAGE = A_BYTES + B_BYTES;
    static_assert(IN_FLIGHT < STAGES, "a stage whose wgmmas still run cannot take the next copy");
    extern __shared__ char shared_raw[];
    char* tiles = align_1024(shared_raw);
    uint64_t* full = reinterpret_cast<uint64_t*>(tiles + STAGES * STAGE);
    int m0, n0;
    tile_origin<BM, BN, GROUP>(blockIdx.x, M, N, m0, n0);
    const int k_tiles = cdiv(K, BK);
    auto load = [&](int kt) {                 // thread 0: A's and B's tiles at K = kt * BK into stage kt % STAGES
        char* a = tiles + kt % STAGES * STAGE;
        uint64_t* bar = &full[kt % STAGES];
        barrier_arrive_expect(bar, STAGE);
        tma_load(a, a_map, bar, kt * BK, m0);
        for (int j = 0; j < BN / BOX; ++j) tma_load(a + A_BYTES + j * BK * ROW, b_map, bar, n0 + j * BOX, kt * BK);
    };
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) barrier_init(&full[s], 1);
        barrier_init_fence();
        for (int kt = 0; kt < min(STAGES, k_tiles); ++kt) load(kt);
    }
    __syncthreads();
    float d[BM / 64][BN / 2];
    for (int kt = 0; kt < k_tiles; ++kt) {
        const char* a = tiles + kt % STAGES * STAGE;
        barrier_wait(&full[kt % STAGES], kt / STAGES % 2);      // the copy of round kt / STAGES landed
        wgmma_fence();
        #pragma unroll
        for (int h = 0; h < BM / 64; ++h) multiply_stage<BN>(d[h], a + h * 64 * ROW, a + A_BYTES, kt == 0);
        wgmma_commit();
        wgmma_wait<IN_FLIGHT>();                                  // the wgmmas of stage kt - IN_FLIGHT are done
        #pragma unroll
        for (int h = 0; h < BM / 64; ++h) touch(d[h]);
        __syncthreads();                                          // every warp is done with that stage
        const int done = kt - IN_FLIGHT;
        if (threadIdx.x == 0 && done >= 0 && done + STAGES < k_tiles) load(done + STAGES);
    }
    if constexpr (IN_FLIGHT > 0) {
        wgmma_wait<0>();
        #pragma unroll
        for (int h = 0; h < BM / 64; ++h) touch(d[h]);
    }
    #pragma unroll
    for (int h = 0; h < BM / 64; ++h) store_accumulators<BN>(C, M, N, m0 + h * 64, n0, d[h]);
}
