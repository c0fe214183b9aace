"""The peer to beat: a float32 matmul written in Triton, autotuned over eight tile configurations.

`tl.dot(..., input_precision='ieee')` keeps full float32 arithmetic (no TF32), so it does the same
arithmetic as the course's kernels and cuBLAS with TF32 off. Triton ships with torch's CUDA builds; where
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
def _kernel():
    import triton, triton.language as tl
    configs = [triton.Config({'BM': bm, 'BN': bn, 'BK': bk}, num_warps=warps, num_stages=stages)
               for bm, bn, bk, warps, stages in [(128, 128, 32, 8, 3), (128, 128, 16, 8, 4), (128, 256, 32, 8, 3),
                                                 (256, 128, 32, 8, 3), (64, 128, 32, 4, 4), (128, 64, 32, 4, 4),
                                                 (64, 64, 32, 4, 5), (128, 128, 64, 8, 2)]]

    @triton.autotune(configs=configs, key=['M', 'N', 'K'])
    @triton.jit
    def matmul_kernel(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
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
            acc = tl.dot(x, y, acc, input_precision='ieee')
        tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))
    return matmul_kernel


def matmul_triton(m, n):
    "m @ n by the Triton kernel (inputs checked like every wrapper of the course)."
    import torch
    from .input_checks import check_matmul_inputs
    why = triton_unavailable()
    if why: raise RuntimeError(why)
    h, k, w = check_matmul_inputs(m, n)
    out = torch.empty(h, w, device=m.device)
    kernel = _kernel()
    kernel[lambda meta: ((h + meta['BM'] - 1) // meta['BM'] * ((w + meta['BN'] - 1) // meta['BN']),)](m, n, out, h, w, k)
    return out
