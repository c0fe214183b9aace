// Step 8's stream-K pieces (notebook 13; the model and the rule: course/stream_k.py): the plan the launcher passes
// (StreamK), the loop over a cluster's pieces of work (for_each_piece; steps 3 to 7 use only its loop over whole
// units) and the atomics that count partial sums in. The notebook reads it as STREAM_K_PIECES, after two constants
// it writes from course.stream_k (SK_MIN_STRETCH, SK_POLLS).

// What the launcher decided: units [0, whole_units) are done whole, round after round; the stages of K of the
// units after them, sk_stages in all, are dealt out in equal stretches to clusters 0 to sk_clusters - 1. A block
// that hands its partial sums of a shared unit over writes them to one of its two slots of `partials` (BN / 2
// floats per consumer thread, stored thread-major so that a warp's stores are contiguous) and counts itself in at
// the unit's counter in `arrived` (one per block of a cluster and consumer). Whoever comes last finishes the unit
// and sets the counter back to 0, so every launch finds the counters at 0, a CUDA graph's replays too.
struct StreamK { float4* partials; int* arrived; int whole_units, sk_clusters, sk_stages; };

// (The launcher uses stream-K only where sk_clusters x sk_stages fits in an int.)
__device__ inline int stretch_start(const StreamK& sk, int cluster) { return cluster * sk.sk_stages / sk.sk_clusters; }
// The cluster whose stretch holds stage `stage`: the last c with stretch_start(c) <= stage.
__device__ inline int cluster_of_stage(const StreamK& sk, int stage) {
    return ((stage + 1) * sk.sk_clusters + sk.sk_stages - 1) / sk.sk_stages - 1;
}
// f(unit, k_begin, k_end) for each piece of work of this block's cluster, in order: the whole units, one every
// `clusters`, then (STREAM_K) the cluster's stretch, cut where it crosses from one unit into the next. One loop
// with one int of state calls f: a second copy of the consumer's loop, or two more live registers, make the
// compiler spill.
template <bool STREAM_K, class F>
__device__ inline void for_each_piece(const StreamK& sk, int cluster, int clusters, int k_tiles, F&& f) {
    if constexpr (!STREAM_K) {
        for (int unit = cluster; unit < sk.whole_units; unit += clusters) f(unit, 0, k_tiles);
    } else {
        int next = cluster;              // the next whole unit; once negative, -1 - the next stage of the stretch
        for (;;) {
            int unit = next, k_begin = 0, k_end = k_tiles;
            if (next >= sk.whole_units) {                       // the whole units are done: on to the stretch
                if (cluster >= sk.sk_clusters) return;
                next = -1 - stretch_start(sk, cluster);
            } else if (next >= 0) next += clusters;
            if (next < 0) {
                const int at = -1 - next, end = stretch_start(sk, cluster + 1);
                if (at >= end) return;
                unit = sk.whole_units + at / k_tiles, k_begin = at % k_tiles, k_end = min(k_tiles, k_begin + end - at);
                next -= k_end - k_begin;
            }
            f(unit, k_begin, k_end);
        }
    }
}
// One thread of a consumer counts it in, once the barrier before this call has seen all its threads' sums written:
// a release at GPU scope (those sums are visible to whoever reads the count after it) and an acquire (this thread
// then sees the sums of everyone counted in before it). It returns how many were counted in before it.
__device__ inline int count_in(int* counter) {
    int before;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(before) : "l"(counter) : "memory");
    return before;
}
// How many have counted in, read with an acquire: their sums are visible after it (to the other threads of the
// block once a barrier follows).
__device__ inline int counted(const int* counter) {
    int seen;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(seen) : "l"(counter) : "memory");
    return seen;
}
// The count once it reaches `all`, or after `polls` reads a few hundred nanoseconds apart, whichever comes first: a
// wait that always ends, so it needs no other block to be running.
__device__ inline int counted_within(const int* counter, int all, int polls) {
    int seen = counted(counter);
    for (int i = 0; i < polls && seen != all; ++i) { __nanosleep(256); seen = counted(counter); }
    return seen;
}
