"""The peer to beat: a matmul written in Triton, autotuned over eight tile configurations, in three precisions.

`matmul_triton` (precision 'ieee') keeps full float32 arithmetic: `tl.dot(..., input_precision='ieee')` uses no
TF32, so it does the same arithmetic as the course's fp32 kernels and cuBLAS with TF32 off. `matmul_triton_tf32`
takes the same float32 inputs onto the tensor cores as TF32, and `matmul_triton_bf16` multiplies bf16 matrices
into a bf16 result (fp32 accumulation), as torch's bf16 `a @ b` does. Triton ships with torch's CUDA builds; where
it is missing (a CPU-only torch), `triton_unavailable()` says why in one line and `matmul_triton` raises.
"""
import functools


def triton_unavailable():
    "None when Triton and a GPU are here; otherwise one line saying what is missing."
    try:
        import torch
        if not torch.cuda.is_available(): return "Triton needs a CUDA GPU, and this machine has none"
        import triton  # noqa: F401
    except ImportError:
        return "Triton is not installed (it comes with torch's CUDA builds)"
    return None


@functools.cache
def _kernel(input_precision):
    "The autotuned kernel for one input precision (each its own autotuner, so that each keeps its own choice)."
    import triton, triton.language as tl
    configs = [triton.Config({'BM': bm, 'BN': bn, 'BK': bk}, num_warps=warps, num_stages=stages)
               for bm, bn, bk, warps, stages in [(128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (128, 256, 32, 8, 3),
                                                 (256, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                                                 (64, 64, 32, 4, 5), (128, 128, 64, 8, 2)]]

    @triton.autotune(configs=configs, key=['M', 'N', 'K'])
    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, INPUT_PRECISION: tl.constexpr, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        # the same block order as the course's tile_origin: groups of 8 tile-rows, for L2 reuse
        pid, tiles_n = tl.program_id(0), tl.cdiv(N, BN)
        per_group = 8 * tiles_n
        first = pid // per_group * 8
        rows = min(tl.cdiv(M, BM) - first, 8)
        rm = (first + pid % per_group % rows) * BM + tl.arange(0, BM)
        rn = (pid % per_group // rows) * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k0 in range(0, K, BK):
            ka = k0 + rk
            x = tl.load(a + rm[:, None] * K + ka[None, :], mask=(rm[:, None] < M) & (ka[None, :] < K), other=0.)
            y = tl.load(b + ka[:, None] * N + rn[None, :], mask=(ka[:, None] < K) & (rn[None, :] < N), other=0.)
            acc = tl.dot(x, y, acc, input_precision=INPUT_PRECISION)   # bf16 inputs: tensor cores whatever it says
        tl.store(c + rm[:, None] * N + rn[None, :], acc.to(c.dtype.element_ty), mask=(rm[:, None] < M) & (rn[None, :] < N))
    return matmul_kernel


def matmul_triton(m, n, precision='ieee'):
    """m @ n by the Triton kernel (inputs checked like every wrapper of the course): float32 inputs in full float32
    ('ieee') or as TF32 ('tf32'), or bf16 inputs and output ('bf16')."""
    import torch
    from .input_checks import check_matmul_inputs
    if precision not in ('ieee', 'tf32', 'bf16'): raise ValueError(f"precision must be 'ieee', 'tf32' or 'bf16', got {precision!r}")
    why = triton_unavailable()
    if why: raise RuntimeError(why)
    dtype = 'bfloat16' if precision == 'bf16' else 'float32'
    h, k, w = check_matmul_inputs(m, n, dtype=dtype)
    out = torch.empty(h, w, device=m.device, dtype=getattr(torch, dtype))
    input_precision = 'ieee' if precision == 'bf16' else precision     # bf16 inputs: the tensor cores whatever it says
    kernel = _kernel(input_precision)
    kernel[lambda meta: ((h + meta['BM'] - 1) // meta['BM'] * ((w + meta['BN'] - 1) // meta['BN']),)](
        m, n, out, h, w, k, input_precision)
    return out


def matmul_triton_tf32(m, n):
    "m @ n of float32 matrices by the Triton kernel on the tensor cores, inputs as TF32."
    return matmul_triton(m, n, 'tf32')


def matmul_triton_bf16(m, n):
    "m @ n of bf16 matrices by the Triton kernel, a bf16 result (fp32 accumulation)."
    return matmul_triton(m, n, 'bf16')
