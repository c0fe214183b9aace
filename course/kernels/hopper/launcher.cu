// The host side of every notebook-13 step: the tensor maps (step 1), the launch of a grid of clusters by
// cudaLaunchKernelEx, only as many as fit at once for the persistent steps (4 to 8, clusters from step 5), and step
// 8's stream-K plan and workspace. The notebook reads it as HOPPER_LAUNCHER: for each step, Python writes the lines
// before it (`kernel`, the step's instantiated kernel, and the constants THREADS, SHARED, BM, BN, CLUSTER,
// PERSISTENT, STREAM_K, SK_HANDOVER) and doubles this file's braces for str.format.

// The tensor map of a rows x cols row-major bf16 matrix x, copied in boxes of box_rows x 64 columns with the
// 128-byte swizzle; TMA fills what lies outside the matrix with zeros (the helper: pieces.cuh).
static CUresult tensor_map(CUtensorMap* map, const void* x, int rows, int cols, int box_rows) {
    return tensor_map_2d(map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, x, rows, cols, 64, box_rows);
}
// Step 8: course.stream_k's rule. Stream-K where the last round is partly empty and a stretch of it, plus handing
// partial sums over, is shorter than a whole unit; the stretches are at least SK_MIN_STRETCH stages long.
static StreamK stream_k_plan(int units, int clusters, int k_tiles) {
    const StreamK whole{nullptr, nullptr, units, 0, 0};
    const int left = units % clusters;
    const long long stages = (long long)left * k_tiles;
    if (!STREAM_K || left == 0 || (long long)clusters * stages > INT_MAX) return whole;   // (stretch_start's int)
    const int sharing = min(clusters, (int)stages / SK_MIN_STRETCH);
    if (sharing < 2 || (int)cdiv(stages, sharing) + SK_HANDOVER >= k_tiles) return whole;
    return StreamK{nullptr, nullptr, units - left, sharing, (int)stages};
}
// Step 8's workspace for a grid of `blocks`: a counter per block and consumer (the shared units' counters, at 0
// between launches), then two slots of partial sums per block and consumer. The caller passes it: one per stream,
// so that launches on two streams never share one, and one that a CUDA graph keeps for its replays.
static size_t counters_bytes(int blocks) { return ((size_t)blocks * (THREADS / 128 - 1) * sizeof(int) + 255) / 256 * 256; }
static size_t workspace_bytes(int blocks) { return counters_bytes(blocks) + (size_t)blocks * 2 * (THREADS / 128 - 1) * 128 * (BN / 2) * sizeof(float); }
// The launch of an M x N x K product: its grid of clusters and, for step 8, its stream-K plan. (In place: the
// configuration points at the cluster attribute beside it.)
struct Launch { cudaLaunchConfig_t config; cudaLaunchAttribute cluster; StreamK sk; };
static cudaError_t plan_launch(Launch& launch, int M, int N, int K, cudaStream_t stream) {
    static const cudaError_t shared_ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED);
    if (shared_ok != cudaSuccess) return shared_ok;
    const int units = cdiv(cdiv(M, BM), CLUSTER) * cdiv(N, BN);
    launch.sk = StreamK{nullptr, nullptr, units, 0, 0};      // steps 1 to 7: every unit whole
    cudaLaunchConfig_t& config = launch.config;
    config = cudaLaunchConfig_t{};
    config.gridDim = dim3(units * CLUSTER);
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = SHARED;
    config.stream = stream;
    launch.cluster.id = cudaLaunchAttributeClusterDimension;
    launch.cluster.val.clusterDim.x = CLUSTER; launch.cluster.val.clusterDim.y = launch.cluster.val.clusterDim.z = 1;
    config.attrs = &launch.cluster;
    config.numAttrs = 1;
    if (PERSISTENT) {
        // As many clusters as can run at once: not always multiprocessors / CLUSTER, since a cluster's blocks must
        // share one GPC (graphics processing cluster), and the GPCs do not all hold an even number of them. The
        // runtime's answer costs microseconds: it is asked once per GPU.
        static int resident_on[64] = {};
        int resident = 0;
        const cudaError_t asked = once_per_gpu(resident_on, resident, [&](int, int& count) {
            return cudaOccupancyMaxActiveClusters(&count, kernel, &config);
        });
        if (asked != cudaSuccess) return asked;
        if (resident < 1) return cudaErrorInvalidConfiguration;
        launch.sk = stream_k_plan(units, resident, cdiv(K, BK));
        // With stream-K, as many clusters as run at once: each shares the last round (none waits for another).
        config.gridDim = dim3((launch.sk.sk_clusters ? resident : min(units, resident)) * CLUSTER);
    }
    return cudaSuccess;
}
// What plan_launch decides for M x N x K (which: 0 the clusters launched, 1 the units done whole, 2 the clusters
// that share the rest along K), or -1 if it cannot say: for notebook 13 to print, and for a test to hold course.stream_k to.
extern "C" int launch_plan(int M, int N, int K, int which) {
    Launch launch;
    if (plan_launch(launch, M, N, K, 0) != cudaSuccess) return -1;
    const int values[] = {(int)launch.config.gridDim.x / CLUSTER, launch.sk.whole_units, launch.sk.sk_clusters};
    return values[which];
}
// The bytes of workspace `matmul` needs on the current GPU (0 for steps 1 to 7), and of them the first that must be
// 0 when it is made (the counters); 0 and 0 if it cannot say.
extern "C" size_t workspace_size(int zeroed) {
    Launch launch;                              // a product of as many units as clusters run at once, or more
    if (!STREAM_K || plan_launch(launch, 1 << 16, 1 << 16, BK, 0) != cudaSuccess) return 0;
    const int blocks = launch.config.gridDim.x;
    return zeroed ? counters_bytes(blocks) : workspace_bytes(blocks);
}
extern "C" cudaError_t matmul(const __nv_bfloat16* A, const __nv_bfloat16* B, __nv_bfloat16* C, int M, int N, int K,
                              unsigned char* workspace, size_t workspace_size, cudaStream_t stream) {
    // TMA's rule: every row starts on 16 bytes. The Python side sends other shapes to notebook 12's kernel.
    if (K % 8 || N % 8 || ((uintptr_t)A | (uintptr_t)B | (uintptr_t)C) % 16) return cudaErrorInvalidValue;
    if (!tensor_map_encoder()) return cudaErrorNotSupported;
    CUtensorMap a_map, b_map, c_map;          // C: boxes of 64 rows, one consumer's share of a tile
    if (tensor_map(&a_map, A, M, K, BM) != CUDA_SUCCESS || tensor_map(&b_map, B, K, N, 64) != CUDA_SUCCESS
        || tensor_map(&c_map, C, M, N, 64) != CUDA_SUCCESS) return cudaErrorInvalidValue;
    Launch launch;
    const cudaError_t planned = plan_launch(launch, M, N, K, stream);
    if (planned != cudaSuccess) return planned;
    if (launch.sk.sk_clusters) {                // step 8 sharing the last round: the caller's workspace
        const int blocks = launch.config.gridDim.x;
        if (!workspace || (uintptr_t)workspace % 256 || workspace_size < workspace_bytes(blocks)) return cudaErrorInvalidValue;
        launch.sk.arrived = reinterpret_cast<int*>(workspace);
        launch.sk.partials = reinterpret_cast<float4*>(workspace + counters_bytes(blocks));
    }
    return cudaLaunchKernelEx(&launch.config, kernel, a_map, b_map, c_map, C, M, N, K, launch.sk);
}
