// The host side of the TF32 wgmma kernel (course/hopper_tf32.py): fp32 tensor maps, and a persistent grid of as many
// clusters as run at once, launched by cudaLaunchKernelEx. course.hopper_tf32 writes the lines before it (`kernel` and
// the constants THREADS, SHARED, BM, BN, CLUSTER) and doubles this file's braces for str.format.

// The tensor map of a rows x cols row-major fp32 matrix x, copied in boxes of box_rows x 32 columns (128 bytes) with the
// 128-byte swizzle; TMA fills what lies outside the matrix with zeros (the helper: pieces.cuh).
static CUresult tensor_map(CUtensorMap* map, const float* x, int rows, int cols, int box_rows) {
    return tensor_map_2d(map, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, x, rows, cols, 32, box_rows);
}
extern "C" cudaError_t matmul(const float* A, const float* B, float* C, int M, int N, int K, cudaStream_t stream) {
    // TMA's rule: every row starts on 16 bytes. The Python side pads other shapes.
    if (K % 4 || N % 4 || ((uintptr_t)A | (uintptr_t)B) % 16) return cudaErrorInvalidValue;
    if (!tensor_map_encoder()) return cudaErrorNotSupported;
    static const cudaError_t shared_ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED);
    if (shared_ok != cudaSuccess) return shared_ok;
    cudaLaunchConfig_t config = {};
    cudaLaunchAttribute cluster;
    cluster.id = cudaLaunchAttributeClusterDimension;
    cluster.val.clusterDim.x = CLUSTER; cluster.val.clusterDim.y = cluster.val.clusterDim.z = 1;
    config.blockDim = dim3(THREADS);
    config.dynamicSmemBytes = SHARED;
    config.stream = stream;
    config.attrs = &cluster;
    config.numAttrs = 1;
    static int resident_on[64] = {};                    // clusters that run at once, asked once per GPU
    int resident = 0;
    const cudaError_t asked = once_per_gpu(resident_on, resident, [&](int, int& count) {
        config.gridDim = dim3(CLUSTER);
        return cudaOccupancyMaxActiveClusters(&count, kernel, &config);
    });
    if (asked != cudaSuccess) return asked;
    if (resident < 1) return cudaErrorInvalidConfiguration;
    CUtensorMap a_map, b_map;                           // A in boxes of BM / CLUSTER rows: each block's share
    if (tensor_map(&a_map, A, M, K, BM / CLUSTER) != CUDA_SUCCESS || tensor_map(&b_map, B, K, N, 32) != CUDA_SUCCESS)
        return cudaErrorInvalidValue;
    const long long units = (long long)cdiv(M, BM) * cdiv(N, BN * CLUSTER);
    config.gridDim = dim3((unsigned)(units < resident ? units : resident) * CLUSTER);
    return cudaLaunchKernelEx(&config, kernel, a_map, b_map, C, M, N, K);
}
