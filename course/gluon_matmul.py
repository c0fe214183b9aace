"""Hopper's TMA, mbarriers and wgmma from Python: a bf16 matmul in Gluon, Triton's lower-level language.

Triton (`course.triton_matmul`) decides the layouts, the pipeline and the warps' roles itself. Gluon, shipped with
Triton as `triton.experimental.gluon`, keeps Triton's Python front end but leaves those choices to the programmer:
the kernel allocates its shared-memory stages, initialises and waits on mbarriers, issues TMA copies and wgmmas,
and stores through shared memory with a TMA store, the same steps as notebook 13's CUDA C. Here one program of
two warpgroups (8 warps) computes a 128 x 256 tile with 3 stages, as notebook 13's step 2 does with one warpgroup,
and stores it as step 6 does. Where Gluon or a Hopper GPU is missing, `gluon_unavailable()` says why in one line.
"""
import functools

from .hopper_dispatch import dispatch_bf16

BM, BN, BK, STAGES, WARPS = 128, 256, 64, 3, 8


def gluon_unavailable():
    "None when Gluon and a Hopper GPU are here; otherwise one line saying what is missing."
    try:
        import torch
        import triton.experimental.gluon  # noqa: F401
    except ImportError:
        return "Triton's Gluon is not installed here (it comes with torch's CUDA builds, Triton 3.4 or newer)"
    from .cuda_toolkit import hopper_available
    if not hopper_available(): return "Gluon's wgmma and TMA need a Hopper GPU (compute capability 9.0)"
    return None


@functools.cache
def gluon_kernel():
    "The Gluon kernel, built on first use (importing Gluon needs Triton)."
    from triton.experimental import gluon
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                                  warpgroup_mma_wait)

    @gluon.jit
    def tma_wgmma_gluon(a_desc, b_desc, c_desc, K, STAGES: gl.constexpr, num_warps: gl.constexpr):
        BM: gl.constexpr = c_desc.block_type.shape[0]
        BN: gl.constexpr = c_desc.block_type.shape[1]
        BK: gl.constexpr = a_desc.block_type.shape[1]
        STAGE_BYTES: gl.constexpr = a_desc.block_type.nbytes + b_desc.block_type.nbytes
        m0, n0 = gl.program_id(0) * BM, gl.program_id(1) * BN
        a_tiles = gl.allocate_shared_memory(a_desc.dtype, [STAGES, BM, BK], a_desc.layout)
        b_tiles = gl.allocate_shared_memory(b_desc.dtype, [STAGES, BK, BN], b_desc.layout)
        full = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for i in gl.static_range(STAGES):
            mbarrier.init(full.index(i), count=1)
        k_tiles = gl.cdiv(K, BK)
        for i in gl.static_range(STAGES):                  # the first STAGES tiles of K, as far as there are
            mbarrier.expect(full.index(i), STAGE_BYTES, pred=i < k_tiles)
            tma.async_copy_global_to_shared(a_desc, [m0, i * BK], full.index(i), a_tiles.index(i), pred=i < k_tiles)
            tma.async_copy_global_to_shared(b_desc, [i * BK, n0], full.index(i), b_tiles.index(i), pred=i < k_tiles)
        # the accumulators as wgmma holds them: each warpgroup 64 rows, num_warps // 4 warpgroups
        acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[num_warps, 1], instr_shape=[16, BN, 16])
        acc = gl.zeros((BM, BN), dtype=gl.float32, layout=acc_layout)
        for kt in range(k_tiles):
            stage = kt % STAGES
            mbarrier.wait(full.index(stage), (kt // STAGES) & 1)
            acc = warpgroup_mma(a_tiles.index(stage), b_tiles.index(stage), acc, is_async=True)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            gl.thread_barrier()                               # every warp is done with this stage: refill it
            later = kt + STAGES
            mbarrier.expect(full.index(stage), STAGE_BYTES, pred=later < k_tiles)
            tma.async_copy_global_to_shared(a_desc, [m0, later * BK], full.index(stage), a_tiles.index(stage), pred=later < k_tiles)
            tma.async_copy_global_to_shared(b_desc, [later * BK, n0], full.index(stage), b_tiles.index(stage), pred=later < k_tiles)
        for i in gl.static_range(STAGES):
            mbarrier.invalidate(full.index(i))
        c_tile = gl.allocate_shared_memory(c_desc.dtype, [BM, BN], c_desc.layout)
        c_tile.store(acc.to(c_desc.dtype))                    # the epilogue of step 6: through shared memory,
        fence_async_shared()                                  # made visible to the TMA unit (async proxy),
        tma.async_copy_shared_to_global(c_desc, [m0, n0], c_tile)    # and one TMA store
        tma.store_wait(0)

    return tma_wgmma_gluon


def matmul_gluon_bf16(m, n, fallback):
    """C = A B (bf16 in and out, fp32 sums) by the Gluon kernel; shapes TMA cannot copy (`tma_can_copy` false) go
    to `fallback`. Inputs are checked as everywhere in the course (`course.hopper_dispatch`)."""
    return dispatch_bf16(m, n, launch_gluon, fallback, gluon_unavailable)


def launch_gluon(m, n):
    "The Gluon kernel on inputs already checked, which TMA can copy: a new bf16 output."
    import torch
    from triton.experimental.gluon import language as gl
    from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    (h, k), w = m.shape, n.shape[1]
    out = torch.empty(h, w, device=m.device, dtype=torch.bfloat16)
    def described(t, block): return TensorDescriptor.from_tensor(t, block, gl.NVMMASharedLayout.get_default_for(block, gl.bfloat16))
    grid = ((h + BM - 1) // BM, (w + BN - 1) // BN)
    gluon_kernel()[grid](described(m, [BM, BK]), described(n, [BK, BN]), described(out, [BM, BN]), k, STAGES, num_warps=WARPS)
    return out
