// The host side of the TF32 wgmma kernel (course/hopper_tf32.py): fp32 tensor maps, and a persistent grid of as many
// blocks as run at once (one per multiprocessor). course.hopper_tf32 writes the lines before it (`kernel` and the
// constants THREADS, SHARED, BM, BN) and doubles this file's braces for str.format.

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
    static int resident_on[64] = {};                    // blocks that run at once: one per multiprocessor, asked once
    int resident = 0;
    const cudaError_t asked = once_per_gpu(resident_on, resident, [](int device, int& count) {
        int per_sm = 0, sms = 0;
        cudaError_t said = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, THREADS, SHARED);
        if (said == cudaSuccess) said = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
        count = per_sm * sms;
        return said;
    });
    if (asked != cudaSuccess) return asked;
    if (resident < 1) return cudaErrorInvalidConfiguration;
    CUtensorMap a_map, b_map;
    if (tensor_map(&a_map, A, M, K, BM) != CUDA_SUCCESS || tensor_map(&b_map, B, K, N, 32) != CUDA_SUCCESS) return cudaErrorInvalidValue;
    const long long units = (long long)cdiv(M, BM) * cdiv(N, BN);
    kernel<<<(unsigned)(units < resident ? units : resident), THREADS, SHARED, stream>>>(a_map, b_map, C, M, N, K);
    return cudaGetLastError();
}
