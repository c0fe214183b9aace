// The template of notebook 13's steps 3 to 8 and notebook 14's 9 and 10: a producer warpgroup and two consumers, with
// a compile-time switch per later step: PERSISTENT (step 4), CLUSTER (5), STORE_BUFFERS (6), OVERLAP (7), STREAM_K (8),
// IN_FLIGHT (9), PINGPONG (10). The notebooks read it as SPECIALIZED_KERNEL; each step's section shows the kernel it compiles, this template with its switches
// evaluated (course/step_listings.py).

// Steps 3 to 8. Warpgroup 0 produces: one of its threads issues every TMA copy. Warpgroups 1 to CONSUMERS each
// multiply 64 of the tile's BM = 64 x CONSUMERS rows. Stage s has two barriers: full[s] (its copies landed) and
// empty[s] (every consumer warp that reads it, in every block that received it, is done with it). A cluster of
// CLUSTER blocks computes a unit, CLUSTER tiles one above the other. The grid has a cluster per unit (unless
// PERSISTENT), and sk says that every unit is done whole (unless STREAM_K).
// PERSISTENT (step 4): as many clusters as fit on the GPU at once, each taking units blockIdx.x / CLUSTER, then
// + the number of clusters, and so on.
// CLUSTER > 1 (step 5): the CLUSTER tiles of a unit share B's tile: each block copies 1 / CLUSTER of B's boxes
// into the shared memory of every block of the cluster (TMA multicast).
// STORE_BUFFERS > 0 (step 6): each consumer converts its results to bf16 pairs, puts them in shared memory one box
// of 64 columns at a time through STORE_BUFFERS buffers of a box each, and one of its threads stores each box with
// TMA.
// OVERLAP (step 7): the consumer keeps the pairs and starts the next tile at once; each of that tile's first
// BN / 64 stages stores one box while its wgmmas run.
// STREAM_K (step 8): the last round's units are shared along K as `sk` says (STREAM_K_PIECES), and no block waits
// for another.
// IN_FLIGHT (step 9): a consumer waits for a stage's wgmmas only once the next stage's are issued, and then releases
// the stage before: the tensor cores always have a group queued (step 2b's change, in the consumers).
// PINGPONG (step 10): the consumers take turns instead of sharing a tile. A tile is 64 rows, the whole of one
// consumer's; consumer c takes pieces c, c + CONSUMERS, ... of the block's list and passes over the others' stages.
// A consumer starts its piece only once the consumer before it has waited for every stage of its own (turn[]): then
// the one finishing its tile packs and stores while the next one's wgmmas run.
template <int BN, int STAGES, int CONSUMERS, int GROUP, bool PERSISTENT, int CLUSTER, int STORE_BUFFERS, bool OVERLAP, bool STREAM_K,
          bool IN_FLIGHT, bool PINGPONG>
__global__ void __launch_bounds__(128 * (CONSUMERS + 1), 1) specialized(const __grid_constant__ CUtensorMap a_map,
        const __grid_constant__ CUtensorMap b_map, const __grid_constant__ CUtensorMap c_map, __nv_bfloat16* C,
        int M, int N, int K, const StreamK sk) {
    constexpr int BM = PINGPONG ? 64 : 64 * CONSUMERS, READERS = PINGPONG ? 1 : CONSUMERS, A_BYTES = BM * ROW, B_BYTES = BK * BN * 2, STAGE = A_BYTES + B_BYTES;
    constexpr int C_BYTES = CONSUMERS * STORE_BUFFERS * 64 * ROW;
    static_assert(CLUSTER == 1 || BN / BOX % CLUSTER == 0, "the blocks of a cluster share B's boxes evenly");
    static_assert(!OVERLAP || STORE_BUFFERS > 0, "step 7 stores through step 6's buffers");
    static_assert(!STREAM_K || PERSISTENT, "stream-K shares the last round of a persistent kernel");
    static_assert(!PINGPONG || (CONSUMERS == 2 && PERSISTENT && !OVERLAP), "two consumers take turns on a persistent "
                  "kernel's tiles, and each one's stores run under the other's wgmmas, not under its own");
    extern __shared__ char shared_raw[];
    char* tiles = align_1024(shared_raw), *c_tiles = tiles + STAGES * STAGE;
    uint64_t* full = reinterpret_cast<uint64_t*>(c_tiles + C_BYTES), *empty = full + STAGES;
    uint64_t* turn = empty + STAGES;                              // step 10: a consumer's turn has come (PINGPONG)
    int* told = reinterpret_cast<int*>(turn + 2);                 // step 8: an int per consumer (from_issuer)
    const int rank = CLUSTER > 1 ? cluster_rank() : 0, k_tiles = cdiv(K, BK);
    const int units = cdiv(cdiv(M, BM), CLUSTER) * cdiv(N, BN);
    const int cluster = blockIdx.x / CLUSTER, clusters = PERSISTENT ? gridDim.x / CLUSTER : units;
    if (threadIdx.x == 0) {
        for (int s = 0; s < STAGES; ++s) { barrier_init(&full[s], 1); barrier_init(&empty[s], 4 * READERS * CLUSTER); }
        if constexpr (PINGPONG) for (int c = 0; c < CONSUMERS; ++c) barrier_init(&turn[c], 1);   // step 10
        barrier_init_fence();
    }
    if (CLUSTER > 1) cluster_sync(); else __syncthreads();     // no copy may land in a block before its barriers exist
    if (threadIdx.x / 128 == 0) {                                // the producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");     // it needs few registers: give them to the consumers
        if (threadIdx.x == 0) {
            int use = 0;                                         // the how-many-th use of a stage, over all tiles
            for_each_piece<STREAM_K>(sk, cluster, clusters, k_tiles, [&](int unit, int k_begin, int k_end) {
                int m0, n0;
                tile_origin<BM * CLUSTER, BN, GROUP>(unit, M, N, m0, n0);
                for (int kt = k_begin; kt < k_end; ++kt, ++use) {
                    const int s = use % STAGES;
                    char* a = tiles + s * STAGE;
                    barrier_wait(&empty[s], (use / STAGES % 2) ^ 1);   // round 0 passes at once (see the model)
                    barrier_arrive_expect(&full[s], STAGE);
                    tma_load(a, a_map, &full[s], kt * BK, m0 + rank * BM);
                    for (int j = rank; j < BN / BOX; j += CLUSTER)      // this block's share of B's boxes
                        if constexpr (CLUSTER > 1)
                            tma_load_multicast(a + A_BYTES + j * BK * ROW, b_map, &full[s], n0 + j * BOX, kt * BK, (1 << CLUSTER) - 1);
                        else tma_load(a + A_BYTES + j * BK * ROW, b_map, &full[s], n0 + j * BOX, kt * BK);
                }
            });
        }
    } else {                                                     // a consumer
        asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int consumer = threadIdx.x / 128 - 1, row0 = PINGPONG ? 0 : consumer * 64;
        const int part = PINGPONG ? 0 : consumer;                // which slot and counter of step 8 are this consumer's
        int pieces = 0, turns = 0;                               // step 10: pieces seen, and turns waited for
        const bool issuer = threadIdx.x % 128 == 0;              // the consumer's thread that issues its stores
        float d[BN / 2];
        uint32_t pairs[BN / 4];                                  // steps 6 and 7: a tile's results as bf16 pairs ...
        int pairs_m0 = -1, pairs_n0 = 0;                         // ... and where they go in C (-1: none waiting)
        int use = 0;                                             // the how-many-th use of a stage, over all tiles
        // Wait for stage `use`'s bytes and start its wgmmas (`first`: the tile's first stage, which overwrites d) ...
        auto start_stage = [&](bool first) {
            const int s = use % STAGES;
            const char* a = tiles + s * STAGE;
            barrier_wait(&full[s], use / STAGES % 2);
            wgmma_fence();
            multiply_stage<BN>(d, a + row0 * ROW, a + A_BYTES, first);
            wgmma_commit();
        };
        // Stage s may take its next copies: this warp is done with it, in every block whose producer wrote into it.
        auto release = [&](int s) {
            if (threadIdx.x % 32 == 0)
                for (int r = 0; r < CLUSTER; ++r)
                    if constexpr (CLUSTER > 1) barrier_arrive_cluster(&empty[s], r); else barrier_arrive(&empty[s]);
        };
        // ... then wait for them, and release the stage (IN_FLIGHT: wait for the stage before, and release that one,
        // unless `first`: then there is none before in this tile).
        auto end_stage = [&](bool first) {
            if constexpr (IN_FLIGHT) {
                wgmma_wait<1>();
                touch(d);
                if (!first) release((use - 1) % STAGES);
                ++use;
            } else {
                wgmma_wait<0>();
                touch(d);
                release(use++ % STAGES);
            }
        };
        // IN_FLIGHT: after a piece's last stage, wait for its wgmmas too, and release its stage.
        auto end_piece = [&]() {
            if constexpr (IN_FLIGHT) {
                wgmma_wait<0>();
                touch(d);
                release((use - 1) % STAGES);
            }
        };
        // Box b of the pairs into C by TMA, through buffer b % STORE_BUFFERS of this consumer.
        auto store_box = [&](int b) {
            constexpr int BUFFERS = STORE_BUFFERS > 0 ? STORE_BUFFERS : 1;
            char* box = c_tiles + (consumer * BUFFERS + b % BUFFERS) * 64 * ROW;
            if (issuer) tma_store_wait_read<BUFFERS - 1>();      // the store that last read `box` is done
            named_barrier(1 + consumer, 128);
            stage_box<BN>(box, pairs, b);
            fence_async_proxy();
            named_barrier(1 + consumer, 128);                    // every thread of this consumer wrote its part
            if (issuer) {
                tma_store(c_map, box, pairs_n0 + b * BOX, pairs_m0);
                tma_store_commit();
            }
        };
        // Step 8: slot `finishing` (1 for the piece that holds a unit's first stage, 0 for the others) of this
        // consumer's partial sums in block `block` of the grid, a float4 per thread and step ...
        auto slot = [&](int block, bool finishing) {
            return ((block * 2 + finishing) * CONSUMERS + part) * (BN / 8) * 128 + threadIdx.x % 128;
        };
        // ... and a value one thread of this consumer has (`value`), for all its threads.
        auto from_issuer = [&](int value) {
            named_barrier(1 + consumer, 128);                    // every thread has read the last value told
            if (issuer) told[consumer] = value;
            named_barrier(1 + consumer, 128);
            return told[consumer];
        };
        for_each_piece<STREAM_K>(sk, cluster, clusters, k_tiles, [&](int unit, int k_begin, int k_end) {
            if constexpr (PINGPONG) {                            // not this consumer's piece: pass over its stages
                if (pieces++ % CONSUMERS != consumer) { use += k_end - k_begin; return; }
                if (pieces > 1) barrier_wait(&turn[consumer], turns++ % 2);   // the one before waited for its stages
            }
            int m0, n0;
            tile_origin<BM * CLUSTER, BN, GROUP>(unit, M, N, m0, n0);
            int kt = k_begin;
            if constexpr (OVERLAP) {                             // step 7: a box of the last tile per stage, while
                #pragma unroll                                   // this tile's wgmmas run
                for (int b = 0; b < BN / BOX; ++b, ++kt) {      // (start, store and end in one branch: split over
                                                                 // separate ifs, ptxas cannot see that each wgmma is
                                                                 // waited for, and serializes them: warning C7514)
                    if (kt < k_end) { start_stage(kt == k_begin); if (pairs_m0 >= 0) store_box(b); end_stage(kt == k_begin); }
                    else if (pairs_m0 >= 0) store_box(b);        // a piece shorter than BN / 64 stages
                }
            }
            for (; kt < k_end; ++kt) { start_stage(kt == k_begin); end_stage(kt == k_begin); }
            if constexpr (PINGPONG)                              // every stage of this piece has landed:
                if (issuer) barrier_arrive(&turn[(consumer + 1) % CONSUMERS]);   // the other consumer's turn
            end_piece();
            if constexpr (STREAM_K) {
                if (k_begin > 0 || k_end < k_tiles) {            // a unit shared along K, by clusters first to last:
                    const int begin = (unit - sk.whole_units) * k_tiles;    // the one whose stretch holds its first
                    const int first = cluster_of_stage(sk, begin), others = cluster_of_stage(sk, begin + k_tiles - 1) - first;
                    const int counter = ((unit - sk.whole_units) * CLUSTER + rank) * CONSUMERS + part;   // in sk.arrived
                    // The first's piece ends its stretch and the others' begin theirs, so it usually comes last:
                    // if all the others are counted in (it looks for a few microseconds at most), it keeps its sums
                    // in registers and writes none.
                    const bool kept = from_issuer(issuer && k_begin == 0 ? counted_within(sk.arrived + counter, others, SK_POLLS)
                                                                         : -1) == others;
                    // The last to come finishes the unit: the sums added cluster by cluster, first to last, so that
                    // C's bits are the same whoever comes last.
                    if (!kept) {                                 // hand the sums over ...
                        float4* mine = sk.partials + slot(blockIdx.x, k_begin == 0);
                        #pragma unroll
                        for (int i = 0; i < BN / 8; ++i)
                            __stcg(mine + 128 * i, make_float4(d[4 * i], d[4 * i + 1], d[4 * i + 2], d[4 * i + 3]));
                        named_barrier(1 + consumer, 128);        // (all of this consumer's sums are written)
                        if (from_issuer(issuer ? count_in(sk.arrived + counter) : 0) < others) {
                            pairs_m0 = -1;                       // ... to a later one, which finishes the unit
                            return;                              // (the last tile's boxes were stored above)
                        }
                        const float4* firsts = sk.partials + slot(first * CLUSTER + rank, true);
                        #pragma unroll
                        for (int i = 0; i < BN / 8; ++i) {
                            const float4 v = __ldcg(firsts + 128 * i);
                            d[4 * i] = v.x; d[4 * i + 1] = v.y; d[4 * i + 2] = v.z; d[4 * i + 3] = v.w;
                        }
                    }
                    for (int other = first + 1; other < sk.sk_clusters && stretch_start(sk, other) < begin + k_tiles; ++other) {
                        const float4* theirs = sk.partials + slot(other * CLUSTER + rank, false);
                        #pragma unroll
                        for (int i = 0; i < BN / 8; ++i) {
                            const float4 v = __ldcg(theirs + 128 * i);
                            d[4 * i] += v.x; d[4 * i + 1] += v.y; d[4 * i + 2] += v.z; d[4 * i + 3] += v.w;
                        }
                    }
                    if (issuer) sk.arrived[counter] = 0;                    // for the next launch: no one else reads it now
                }
            }
            if constexpr (STORE_BUFFERS > 0) {
                pack_bf16<BN>(pairs, d);
                pairs_m0 = m0 + rank * BM + row0, pairs_n0 = n0;
                if constexpr (!OVERLAP) {                        // step 6: store them now
                    #pragma unroll
                    for (int b = 0; b < BN / BOX; ++b) store_box(b);
                }
            } else store_accumulators<BN>(C, M, N, m0 + rank * BM + row0, n0, d);
        });
        if constexpr (OVERLAP) {                                 // the last tile: no next one to hide its stores
            if (pairs_m0 >= 0) {
                #pragma unroll
                for (int b = 0; b < BN / BOX; ++b) store_box(b);
            }
        }
        if constexpr (STORE_BUFFERS > 0)
            if (issuer) tma_store_wait<0>();                     // the last stores are done before the block ends
    }
    if (CLUSTER > 1) cluster_sync();        // a block leaves only when the other can no longer write into it
}
