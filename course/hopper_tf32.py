"""The lecture's fp32 inputs on Hopper's tensor cores: TF32 wgmma (course/kernels/hopper/tf32.cu).

Notebook 12's TF32 kernel uses mma.sync, the instruction of the generation before Hopper's, on the lecture's fp32
matrices; Hopper's wgmma has a TF32 form too (k = 8: 8 values of K per instruction, 32 bytes as for bf16's 16). It takes
TF32 operands from shared memory only K-major, which B (K x N, rows of N) is not, so the kernel computes C's
transpose, C^T = B^T A^T, with B^T from registers (rounded to TF32 to nearest there) and A's tile from shared memory, as
TMA copies it. The tensor cores read A's values as they are, fp32, and use their upper 19 bits (TF32's): `tf32_error`
measures what that costs against rounding to nearest.

- `wgmma_tf32_function(n)`: the CUDA C of wgmma_tf32(d, a, b_desc, scale_d) for n / 2 accumulators.
- `tf32_variant(source, BM, STAGES)`: the kernel (tiles of BM rows x 128 columns) compiled after `source`, notebook 13's
  device code (HOPPER_SOURCE).
- `Tf32Matmul(variant)`: C = A B for fp32 inputs and output, inputs checked as everywhere; rows TMA cannot copy (K or N
  not a multiple of 4 floats, or an input off 16 bytes) run on padded copies.
- `TunedTf32(source)`: the cluster size (single blocks, or pairs sharing A's tile by multicast) timed per shape.
"""
from .cuda_toolkit import CudaUnavailableError, hopper_available
from .hopper_dispatch import padded_copies
from .hopper_ladder import read_kernel
from .input_checks import check_matmul_inputs
from .template_variants import TemplateVariant


TF32_KERNEL = read_kernel('tf32.cu')
TF32_LAUNCHER = r'''
static const auto kernel = {kernel}<{args}>;
static const int THREADS = {threads}, SHARED = {shared}, BM = {bm}, BN = {bn}, CLUSTER = {CLUSTER};
''' + read_kernel('tf32_launcher.cu').replace('{', '{{').replace('}', '}}')


def wgmma_tf32_function(n):
    """The CUDA C of `wgmma_tf32(d, a, b, scale_d)` for d of n / 2 floats: one warpgroup's D (64 x n fp32) += A (64 x 8,
    TF32, four registers per thread) B (8 x n, TF32, K-major in shared memory, through descriptor b); with scale_d == 0,
    D = A B. The form with A in registers ('RS'): its operands are {a0, a1, a2, a3}, then b's descriptor."""
    regs = n // 2
    operands = ', '.join(f'%{i}' for i in range(regs))
    outputs = ', '.join(f'"+f"(d[{i}])' for i in range(regs))
    return (f'__device__ inline void wgmma_tf32(float (&d)[{regs}], const uint32_t (&a)[4], uint64_t b, int scale_d) {{\n'
            f'    asm volatile("{{\\n.reg .pred p;\\nsetp.ne.b32 p, %{regs + 5}, 0;\\n"\n'
            f'                 "wgmma.mma_async.sync.aligned.m64n{n}k8.f32.tf32.tf32 {{{operands}}}, '
            f'{{%{regs}, %{regs + 1}, %{regs + 2}, %{regs + 3}}}, %{regs + 4}, p, 1, 1;\\n}}"\n'
            f'                 : {outputs}\n'
            f'                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "r"(scale_d));\n}}\n')


def tf32_variant(source, BM=256, STAGES=4, GROUP=8, CLUSTER=1):
    """The TF32 kernel with tiles of BM (128 or 256) rows x 128 columns and STAGES stages of 32 of K, compiled after
    `source` (notebook 13's HOPPER_SOURCE: notebook 10's tile order, the PTX wrappers and descriptors); with CLUSTER =
    2, pairs of blocks side by side share A's tile by TMA multicast."""
    if BM not in (128, 256): raise ValueError(f"BM must be 128 or 256 (the wgmma's n), got {BM!r}")
    if CLUSTER not in (1, 2): raise ValueError(f"CLUSTER must be 1 or 2, got {CLUSTER!r}")
    shared = 1024 + STAGES * (BM * 128 + 32 * 128 * 4) + 16 * STAGES
    return TemplateVariant(source + wgmma_tf32_function(BM) + TF32_KERNEL, 'tf32_transposed', 384, shared,
                           launcher=TF32_LAUNCHER, arch='sm_90a', BM=BM, BN=128, STAGES=STAGES, GROUP=GROUP, CLUSTER=CLUSTER)


class Tf32Matmul:
    "C = A B, fp32 in and out, on TF32 wgmma (`variant`, tf32_variant's). Needs a Hopper GPU."
    def __init__(self, variant):
        self.variant, self.params, self.source = variant, variant.params, variant.source

    def __call__(self, m, n):
        import torch
        h, k, w = check_matmul_inputs(m, n)
        if not hopper_available():
            raise CudaUnavailableError(f"TF32 wgmma needs a Hopper GPU (compute capability 9.0); this one is "
                                       f"{torch.cuda.get_device_name()}")
        if k % 4 or w % 4 or m.data_ptr() % 16 or n.data_ptr() % 16:       # rows TMA cannot copy: padded copies
            c = self(*padded_copies(m, n, 4))
            return c if c.shape[1] == w else c[:, :w].contiguous()
        from .cuda_library import current_stream_handle
        out = torch.empty(h, w, device=m.device)
        module = self.variant.build()._module
        error = module.unchecked('matmul')(m.data_ptr(), n.data_ptr(), out.data_ptr(), h, w, k,
                                           current_stream_handle(m.get_device()))
        if error: module.raise_if_error('matmul', error)
        return out

    def build(self):
        self.variant.build()
        return self

    def __repr__(self): return f"Tf32Matmul({self.variant!r})"


class TunedTf32:
    """TF32 wgmma with its cluster size chosen per shape: single blocks, or pairs side by side sharing A's tile by
    multicast (half of A's reads from L2, but units twice as wide, so coarser rounds). Both are timed on a shape's first
    call (course.autotune), once per GPU, code and shape, the winner kept on disk (course.tuning_cache); inside a CUDA
    graph capture, single blocks, and no timing."""
    def __init__(self, source, BM=256, path=None):
        self.candidates = [Tf32Matmul(tf32_variant(source, BM=BM, CLUSTER=c)) for c in (1, 2)]
        self.path, self.kept = path, {}

    def chosen(self, h, k, w, device=0):
        "The candidate kept for h x k @ k x w on GPU `device`: from memory, from disk, or timed now."
        import torch
        key = (device, h, k, w)
        if key in self.kept: return self.kept[key]
        if torch.cuda.is_current_stream_capturing(): return self.candidates[0]
        from .tuning_cache import tuned
        self.kept[key] = tuned(self.candidates, h, k, w, dtype='float32', path=self.path, progress=False)
        return self.kept[key]

    def __call__(self, m, n):
        h, k, w = check_matmul_inputs(m, n)
        if not hopper_available(): return self.candidates[0](m, n)      # which says why it cannot run
        return self.chosen(h, k, w, m.get_device())(m, n)

    def __repr__(self): return f"TunedTf32({', '.join(map(repr, self.candidates))})"


def tf32_error(fn, h=1024, k=1024, w=1024):
    """(worst error over tf32's bound, relative RMS error) of fn on random fp32 inputs, as
    course.reduced_precision.error_against_float64 measures them."""
    from .reduced_precision import error_against_float64, random_inputs
    m, n = random_inputs(h, k, w, 'tf32')
    return error_against_float64(fn(m, n), m, n, 'tf32')


# ---- the kernel's index arithmetic, modelled on the CPU (notebook 14 runs it before the CUDA C) ----

def kernel_fragment_place(lane, r):
    """(k, n) inside a warp's 8 x 16 piece of B (8 of K, 16 columns of C) of register r of `lane`, as b_fragment
    computes it: k = t + 4 (r / 2), n = g + 8 (r % 2), with g = lane / 4 and t = lane % 4."""
    return lane % 4 + 4 * (r // 2), lane // 4 + 8 * (r % 2)


def kernel_store_place(lane, j, r):
    """(row, column) inside a consumer's BM x 64 block of C where the kernel stores its accumulator d[4j + r] of `lane`
    in warp 0 (warp w: 16 w columns further): row 8j + 2t + r % 2, column g + 8 (r / 2)."""
    return 8 * j + 2 * (lane % 4) + r % 2, lane // 4 + 8 * (r // 2)


def simulate_tile(a, b, place=kernel_fragment_place, store=kernel_store_place):
    """One BM x 128 tile of C = a @ b (numpy: a BM x K, b K x 128, K a multiple of 8), computed the kernel's way: each
    consumer's 4 warps put their values of B in registers where `place` says (as a fragment of B^T, whose layout is
    PTX's: course.tensor_core_fragments.element for m16n8k8's A, one 16-row piece per warp), D = B^T A^T accumulates 8
    of K at a time, and each accumulator goes to C where `store` says (D's layout is PTX's for C). With the kernel's own
    arithmetic (the defaults) the tile is a @ b; a wrong place or store shows up as a wrong tile."""
    import numpy as np
    from .tensor_core_fragments import M16N8K8, element
    bm, k = a.shape
    c = np.full((bm, 128), np.nan)
    for consumer in range(2):
        d = np.zeros((64, bm))                               # this consumer's 64 columns of C, as rows of C^T
        for k0 in range(0, k, 8):
            fragment = np.zeros((64, 8))                     # B^T's 64 x 8 piece, as the warpgroup's registers hold it
            for warp in range(4):
                for lane in range(32):
                    for r in range(4):
                        kk, n = place(lane, r)
                        row, col = element(M16N8K8, 'a', lane, r)
                        fragment[16 * warp + row, col] = b[k0 + kk, 64 * consumer + 16 * warp + n]
            d += fragment @ a[:, k0:k0 + 8].T               # one wgmma: (64 x 8) @ (8 x BM)
        for warp in range(4):
            for lane in range(32):
                for j in range(bm // 8):
                    for r in range(4):
                        row, col = element(M16N8K8, 'c', lane, r)            # d[4j + r] holds D[16 w + row][8j + col]
                        m, n = store(lane, j, r)
                        c[m, 64 * consumer + 16 * warp + n] = d[16 * warp + row, 8 * j + col]
    return c


def draw_b_fragment():
    """A warp's 8 x 16 piece of B (8 of K down, 16 columns of C across), each value labelled with the lane and register
    that hold it (kernel_fragment_place): lanes of one group (lane / 4, one colour) hold one column of C."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    fig, ax = plt.subplots(figsize=(9.5, 3.6))
    colours = plt.get_cmap('tab10').colors
    for lane in range(32):
        for r in range(4):
            k, n = kernel_fragment_place(lane, r)
            ax.add_patch(Rectangle((n, k), 1, 1, facecolor=colours[lane // 4 % 10], alpha=0.5, edgecolor='0.4', lw=0.5))
            ax.text(n + 0.5, k + 0.5, f'{lane}:a{r}', ha='center', va='center', fontsize=7)
    ax.set_xlim(0, 16); ax.set_ylim(8, 0); ax.set_aspect('equal')
    ax.set_xticks([n + 0.5 for n in range(16)], range(16), fontsize=7)
    ax.set_yticks([k + 0.5 for k in range(8)], range(8), fontsize=7)
    ax.set_xlabel("column n of C (row of B^T), from the warp's first"); ax.set_ylabel("k")
    ax.set_title("B's values one warp gives a TF32 wgmma (8 of K): 'lane:aR' is register R of that lane; colour: lane / 4",
                 fontsize=10)
    fig.tight_layout()
    plt.close(fig)
    return fig
