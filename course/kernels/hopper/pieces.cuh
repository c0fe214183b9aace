// Notebook 13's PTX wrappers, one inline function per instruction, so that the kernels read as the mbarrier
// protocol: mbarriers, TMA loads and wgmma (step 1 on), barrier_arrive (step 3), the cluster's wrappers and
// tma_load_multicast (step 5), TMA stores with their fence and named barrier (step 6). Every step compiles all of
// it: the notebook reads it as HOPPER_PIECES (read_kernel leaves this opening comment out).

#include <cuda.h>            // CUtensorMap and its enums (types only: libcuda is not linked, see the launcher)
#include <cudaTypedefs.h>    // PFN_cuTensorMapEncodeTiled, the encoder's type

__device__ inline uint32_t shared_address(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// The first 1024-byte boundary at or after p: the 128-byte swizzle repeats every 8 rows of 128 bytes, and both
// TMA and wgmma compute it from the address bits, so every tile must start on such a boundary.
__device__ inline char* align_1024(char* p) { return p + ((1024 - (shared_address(p) & 1023)) & 1023); }

// ---- mbarrier (the model: course.mbarrier_pipeline) ----
__device__ inline void barrier_init(uint64_t* bar, int arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(shared_address(bar)), "r"(arrivals) : "memory");
}
// Arrive, and raise the phase's expected bytes of asynchronous copies by `bytes`.
__device__ inline void barrier_arrive_expect(uint64_t* bar, int bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(shared_address(bar)), "r"(bytes) : "memory");
}
__device__ inline void barrier_arrive(uint64_t* bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(shared_address(bar)) : "memory");
}
// Arrive on the barrier at the same place in the shared memory of block `rank` of this cluster. (Not
// `.release.cluster`: that orders this thread's memory accesses before it with a fence, a MEMBAR that costs
// more than the arrive, and the only accesses to order here are the tensor cores' reads, done at wgmma_wait.)
__device__ inline void barrier_arrive_cluster(uint64_t* bar, uint32_t rank) {
    asm volatile("{\n.reg .b32 remote;\nmapa.shared::cluster.u32 remote, %0, %1;\n"
                 "mbarrier.arrive.shared::cluster.b64 _, [remote];\n}"
                 :: "r"(shared_address(bar)), "r"(rank) : "memory");
}
// Wait until the phase of parity `parity` has completed.
__device__ inline void barrier_wait(uint64_t* bar, int parity) {
    uint32_t done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}"
                     : "=r"(done) : "r"(shared_address(bar)), "r"(parity) : "memory");
}
// Make initialised barriers visible to the TMA unit (the async proxy) and to the other blocks of the cluster.
__device__ inline void barrier_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }

// ---- thread-block clusters ----
__device__ inline uint32_t cluster_rank() { uint32_t r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ inline void cluster_sync() {
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// ---- TMA: one box of a 2-D tensor map, from element (x, y) (x the contiguous one) into shared memory at dst;
// completion counts the box's bytes down on `bar`. Out of the matrix, the box is filled with zeros.
__device__ inline void tma_load(void* dst, const CUtensorMap& map, uint64_t* bar, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4}], [%2];"
                 :: "r"(shared_address(dst)), "l"(&map), "r"(shared_address(bar)), "r"(x), "r"(y) : "memory");
}
// The same box, written into the shared memory of every block of the cluster named in `blocks` (a bit mask), at
// the same offset, each completing on its own barrier at the same offset as `bar`.
__device__ inline void tma_load_multicast(void* dst, const CUtensorMap& map, uint64_t* bar, int x, int y, uint16_t blocks) {
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
                 " [%0], [%1, {%3, %4}], [%2], %5;"
                 :: "r"(shared_address(dst)), "l"(&map), "r"(shared_address(bar)), "r"(x), "r"(y), "h"(blocks) : "memory");
}

// ---- TMA stores: a box of this block's shared memory into the matrix at element (x, y); nothing is written outside
// the matrix. Stores are committed in groups; a group's shared memory may be written again once it has been read.
__device__ inline void tma_store(const CUtensorMap& map, const void* src, int x, int y) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];"
                 :: "l"(&map), "r"(shared_address(src)), "r"(x), "r"(y) : "memory");
}
__device__ inline void tma_store_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
template <int PENDING> __device__ inline void tma_store_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(PENDING) : "memory");
}
template <int PENDING> __device__ inline void tma_store_wait() { asm volatile("cp.async.bulk.wait_group %0;" :: "n"(PENDING) : "memory"); }
// Order this thread's ordinary (generic proxy) writes to shared memory before what the async proxy, the TMA unit,
// reads after it: a TMA store issued after this fence and a barrier sees those writes.
__device__ inline void fence_async_proxy() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// A barrier for the `threads` threads that name barrier `id` (1 to 15: 0 is __syncthreads's).
__device__ inline void named_barrier(int id, int threads) { asm volatile("bar.sync %0, %1;" :: "r"(id), "r"(threads) : "memory"); }

// ---- wgmma ----
// A shared-memory matrix descriptor (PTX ISA, "matrix descriptor"): the start address, the two strides (LBO,
// SBO), all in 16-byte units, and the layout: 1 in bits 62-63 says 128-byte swizzle.
__device__ inline uint64_t matrix_descriptor(const void* tile, uint32_t leading_bytes, uint32_t stride_bytes) {
    return (shared_address(tile) & 0x3FFFF) >> 4 | uint64_t(leading_bytes >> 4) << 16
           | uint64_t(stride_bytes >> 4) << 32 | 1ull << 62;
}
// A's tile: K-major (rows of 64 bf16 = 128 bytes), so one wgmma's 16 values of K lie inside a row; groups of
// 8 rows are 1024 bytes apart (SBO); LBO is unused with this swizzle.
__device__ inline uint64_t descriptor_a(const void* rows) { return matrix_descriptor(rows, 16, 1024); }
// B's tile: MN-major (B is K x N, N contiguous), stored as boxes of 64 columns x 64 rows of K, 128 bytes per row:
// LBO steps from one 64-column box to the next, SBO from one group of 8 rows of K to the next.
__device__ inline uint64_t descriptor_b(const void* rows, int box_bytes) { return matrix_descriptor(rows, box_bytes, 1024); }

__device__ inline void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ inline void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int PENDING> __device__ inline void wgmma_wait() { asm volatile("wgmma.wait_group.sync.aligned %0;" :: "n"(PENDING) : "memory"); }
// Tell the compiler that the accumulators may have changed here (the tensor cores wrote them behind its back),
// so that it neither reads them before wgmma_wait nor moves their writes past wgmma_fence.
template <int R> __device__ inline void touch(float (&d)[R]) {
    #pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i]) :: "memory");
}

// ---- the host side every launcher shares (launcher.cu, tf32_launcher.cu) ----
// cuTensorMapEncodeTiled is a function of the driver, not of the runtime. The runtime hands out the running
// driver's own entry point, so this library needs no link to libcuda (and no libcuda at build time).
static PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
    static void* encode = nullptr;
    cudaDriverEntryPointQueryResult found;
    if (!encode && (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &encode, 12000, cudaEnableDefault, &found) != cudaSuccess
                    || found != cudaDriverEntryPointSuccess)) encode = nullptr;
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(encode);
}
// The tensor map of a rows x cols row-major matrix x of `type` (elements of `bytes` bytes), copied in boxes of box_rows
// x box_cols elements (box_cols x bytes = 128: one row of the 128-byte swizzle, which it uses); TMA fills what lies
// outside the matrix with zeros.
static CUresult tensor_map_2d(CUtensorMap* map, CUtensorMapDataType type, int bytes, const void* x, int rows, int cols,
                              int box_cols, int box_rows) {
    const cuuint64_t size[2] = {(cuuint64_t)cols, (cuuint64_t)rows}, row_bytes[1] = {(cuuint64_t)cols * bytes};
    const cuuint32_t box[2] = {(cuuint32_t)box_cols, (cuuint32_t)box_rows}, unit_steps[2] = {1, 1};
    return tensor_map_encoder()(map, type, 2, const_cast<void*>(x), size, row_bytes, box, unit_steps, CU_TENSOR_MAP_INTERLEAVE_NONE,
                                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}
// A count that costs microseconds to ask the runtime (as much as a small product's launch), asked once per GPU:
// kept[device] once known (past the 64th GPU, asked every time); ask(device, count) asks it.
template <class Ask> static cudaError_t once_per_gpu(int (&kept)[64], int& count, Ask ask) {
    int device = 0;
    const cudaError_t current = cudaGetDevice(&device);
    if (current != cudaSuccess) return current;
    if (device < 64 && kept[device] > 0) { count = kept[device]; return cudaSuccess; }
    const cudaError_t asked = ask(device, count);
    if (asked == cudaSuccess && device < 64) kept[device] = count;
    return asked;
}
