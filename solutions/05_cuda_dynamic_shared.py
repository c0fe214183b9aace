"Reference solutions of notebooks/exercises/05_cuda_dynamic_shared.ipynb. Try the exercises first!"
import functools, torch
from utils import compile_cuda, cuda_prelude

# Exercise 05.1: a fused bias + ReLU epilogue, with a run-time tile width
bias_relu_cuda_src = cuda_prelude + r'''
__global__ void matmul_bias_relu_k(const float* m, const float* n, const float* bias, float* out,
                                   int h, int w, int k, int tw) {
    int tc = threadIdx.x, tr = threadIdx.y;
    int r = blockIdx.y*blockDim.y + tr, c = blockIdx.x*blockDim.x + tc;
    extern __shared__ float sh[];        // 2*tw*tw floats: tw is known only at run time, so the launch sizes it
    float *ms = sh, *ns = sh + tw*tw;    // two tw x tw tiles, one after the other
    float p = 0.0f;
    for (int idx = 0; idx < k; idx += tw) {
        ms[tr*tw + tc] = r < h && idx+tc < k ? m[r*k + idx+tc] : 0.0f;
        ns[tr*tw + tc] = c < w && idx+tr < k ? n[(idx+tr)*w + c] : 0.0f;
        __syncthreads();
        for (int i = 0; i < tw; ++i) p += ms[tr*tw + i] * ns[i*tw + tc];
        __syncthreads();
    }
    if (r < h && c < w) out[r*w + c] = fmaxf(p + bias[c], 0.0f);   // the epilogue: one pass over out, not three
}

extern "C" cudaError_t matmul_bias_relu(const float* m, const float* n, const float* bias, float* out,
                                        int h, int w, int k, int tw, cudaStream_t stream) {
    if (tw < 1 || tw > 32) return cudaErrorInvalidValue;
    dim3 tpb(tw, tw), blocks(cdiv(w, tw), cdiv(h, tw));
    size_t shared_bytes = 2 * tw * tw * sizeof(float);
    matmul_bias_relu_k<<<blocks, tpb, shared_bytes, stream>>>(m, n, bias, out, h, w, k, tw);
    return cudaGetLastError();
}
'''

# Exercise 05.2: a matrix-vector product in CUDA C, and its wrapper
matvec_cuda_src = cuda_prelude + r'''
constexpr int ROWS = 8, CHUNK = 256;   // a block: 8 warps, one row each; v goes through shared memory in chunks

__global__ void matvec_k(const float* m, const float* v, float* out, int h, int k) {
    extern __shared__ float vs[];      // CHUNK floats, sized by the launch
    int lane = threadIdx.x % 32, row = blockIdx.x*ROWS + threadIdx.x / 32;
    float acc = 0.0f;
    for (int c0 = 0; c0 < k; c0 += CHUNK) {
        int i = c0 + threadIdx.x;
        vs[threadIdx.x] = i < k ? v[i] : 0.0f;           // every thread helps, even past the last row
        __syncthreads();
        if (row < h)                                     // a warp reads its row's chunk: 32 neighbours at a time
            for (int j = lane; j < CHUNK && c0 + j < k; j += 32) acc += m[(size_t)row*k + c0 + j] * vs[j];
        __syncthreads();
    }
    for (int d = 16; d > 0; d /= 2) acc += __shfl_down_sync(0xffffffff, acc, d);   // the warp's sum, in lane 0
    if (lane == 0 && row < h) out[row] = acc;
}

extern "C" cudaError_t matvec_launch(const float* m, const float* v, float* out, int h, int k, cudaStream_t stream) {
    matvec_k<<<cdiv(h, ROWS), ROWS*32, CHUNK*sizeof(float), stream>>>(m, v, out, h, k);
    return cudaGetLastError();
}
'''


@functools.cache
def matvec_module(): return compile_cuda(matvec_cuda_src)


def matvec(m, v):
    for name, t, dims in (('m', m, 2), ('v', v, 1)):
        if not isinstance(t, torch.Tensor): raise TypeError(f"{name} must be a tensor")
        if t.dim() != dims: raise ValueError(f"{name} must have {dims} dimension(s), got {tuple(t.shape)}")
        if t.dtype != torch.float32: raise TypeError(f"{name} must be float32, got {t.dtype}")
        if not t.is_cuda: raise ValueError(f"{name} must be a CUDA tensor")
        if not t.is_contiguous(): raise ValueError(f"{name} must be contiguous")
        if t.numel() == 0: raise ValueError(f"{name} is empty")
    h, k = m.shape
    if v.shape[0] != k: raise ValueError(f"size mismatch: m is {h}x{k}, v has {v.shape[0]} values")
    out = torch.empty(h, device=m.device)
    matvec_module().matvec_launch(m, v, out, h, k)
    return out
