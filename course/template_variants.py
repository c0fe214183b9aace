"""One compiled variant of a C++ template kernel, callable as a matmul: notebook 10's kernels and its autotuner.

A template kernel's tile sizes are compile-time constants, so each choice of them is a kernel of its own.
`TemplateVariant` writes, for one choice, an `extern "C"` launcher that instantiates the template with those
values, compiles kernel and launcher with `compile_cuda` (a few seconds, cached), and calls it on torch
tensors with the course's input checks. It also reads back the resources the compiler gave the kernel.

The kernel's signature is fixed: `(const float* A, const float* B, float* C, int M, int N, int K, bool aligned)`,
with `aligned` saying whether 16-byte (float4) loads are allowed: every row of A, B and C starts on 16 bytes.
Tensor-core kernels take other element types (`dtype` for A and B, `out_dtype` for C: torch dtype names such as
'bfloat16'), with the same parameters.
"""
import re

from .cuda_library import compile_cuda, cuda_prelude, current_stream_handle
from .input_checks import check_matmul_inputs

LAUNCHER = r'''
// The kernel, and its version for rows that do not all start on 16 bytes: the same one unless the template has
// a parameter ALIGNED, which makes the two versions separate kernels with registers of their own.
static const auto kernel = {kernel}<{args}>, kernel_unaligned = {kernel}<{args_unaligned}>;
template <typename Kernel> static int resource_of(Kernel k, int which);          // in RESOURCES, below
// What the runtime says of kernel_unaligned, as kernel_resource does of kernel.
extern "C" int unaligned_kernel_resource(int which) {{
    return resource_of(kernel_unaligned, which);
}}
static const int THREADS = {threads}, SHARED = {shared};
// `copies` blocks per BM x BN tile of C, in a 1-D grid (no 65535 limit): 1, unless the kernel splits K (see matmul_split).
static cudaError_t launch_tiles(const {c_in}* A, const {c_in}* B, {c_out}* C, int M, int N, int K, int copies, cudaStream_t stream) {{
    // A kernel may use more than 48 KiB of dynamic shared memory only if it says so first.
    static const cudaError_t shared_ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED) == cudaSuccess
        ? cudaFuncSetAttribute(kernel_unaligned, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED) : cudaErrorInvalidValue;
    if (shared_ok != cudaSuccess) return shared_ok;
    const bool aligned = K * sizeof(*A) % 16 == 0 && N * sizeof(*B) % 16 == 0 && N * sizeof(*C) % 16 == 0
                         && ((uintptr_t)A | (uintptr_t)B | (uintptr_t)C) % 16 == 0;
    const unsigned blocks = cdiv(M, {bm}) * cdiv(N, {bn}) * copies;
    (aligned ? kernel : kernel_unaligned)<<<blocks, THREADS, SHARED, stream>>>(A, B, C, M, N, K, aligned);
    return cudaGetLastError();
}}
extern "C" cudaError_t matmul(const {c_in}* A, const {c_in}* B, {c_out}* C, int M, int N, int K, cudaStream_t stream) {{
    return launch_tiles(A, B, C, M, N, K, 1, stream);
}}
'''

# Joined to LAUNCHER for a float32 kernel that can split K: given `copies` = splits blocks per tile, block b computes
# tile b % tiles over piece b / tiles of K and writes its partial tile at C + piece x M x ldc, where ldc is N rounded
# up to a multiple of 4 (notebook 11's every_shape), so that the workspace's rows start on 16 bytes.
SPLIT_K_LAUNCHER = r'''
// The pieces K is cut into: at most `splits`, each a whole number of BK steps, none empty.
extern "C" int pieces_of_k(int K, int splits) {{
    const int steps = cdiv(K, {BK}), wanted = splits < 1 ? 1 : splits > steps ? steps : splits, per_piece = cdiv(steps, wanted);
    return cdiv(steps, per_piece);
}}
// C (M x N) = the sum of the `pieces` partial products in W (each M rows of ldw floats), added in the same order every
// time (the same bits every run). A thread adds 4 neighbouring outputs of a row: ldw is a multiple of 4 and W starts
// on 16 bytes, so it reads them as one float4 from each piece, and writes them as one where C's rows allow. The last
// 4 of a row may pass N (where N is not a multiple of 4): those columns of the workspace were never written, so that
// thread reads and adds only the columns inside C, float by float.
__global__ void add_partials(const float* __restrict__ W, float* __restrict__ C, int M, int N, int ldw, int pieces) {{
    const int quads = ldw / 4;                                         // float4s in a row of a piece
    const long long count = (long long)M * quads;                      // ... and in a piece
    const float4* __restrict__ W4 = reinterpret_cast<const float4*>(W);
    const bool vector = N % 4 == 0 && (uintptr_t)C % 16 == 0;
#if __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");   // launched early (see matmul_split): wait for the pieces
#endif
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < count; i += (long long)gridDim.x * blockDim.x) {{
        const int c = (int)(i % quads) * 4;
        float* out = C + i / quads * N + c;
        if (c + 4 <= N) {{
            float4 sum = W4[i];
            for (int p = 1; p < pieces; ++p) {{
                const float4 v = W4[p * count + i];
                sum.x += v.x; sum.y += v.y; sum.z += v.z; sum.w += v.w;
            }}
            if (vector) *reinterpret_cast<float4*>(out) = sum;
            else {{ out[0] = sum.x; out[1] = sum.y; out[2] = sum.z; out[3] = sum.w; }}
        }} else
            for (int e = 0; c + e < N; ++e) {{
                float sum = W[4 * i + e];
                for (int p = 1; p < pieces; ++p) sum += W[4 * (p * count + i) + e];
                out[e] = sum;
            }}
    }}
}}
// Split-K: the kernel writes pieces_of_k(K, splits) partial products into the workspace W (at least splits x M x ldw
// floats, ldw = N rounded up to a multiple of 4), then add_partials sums them into C: a second pass, rather than
// atomic adds into C. On Hopper and later the second pass is a programmatic dependent launch: the GPU may start it
// before the first kernel has drained, instead of after a gap of a few microseconds, and each of its threads waits in
// griddepcontrol.wait until the first kernel's writes are done and visible.
extern "C" cudaError_t matmul_split(const float* A, const float* B, float* C, float* W, int M, int N, int K, int splits,
                                    cudaStream_t stream) {{
    const int pieces = pieces_of_k(K, splits);
    if (pieces == 1) return launch_tiles(A, B, C, M, N, K, 1, stream);
    const cudaError_t launched = launch_tiles(A, B, W, M, N, K, pieces, stream);
    if (launched != cudaSuccess) return launched;
    const long long blocks = ((long long)M * ((N + 3) / 4) + 255) / 256;     // a thread per float4 of C
    static const bool dependent_launch = [] {{
        int device = 0, major = 0;
        cudaGetDevice(&device);
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device);
        return major >= 9;
    }}();
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t config = {{}};
    config.gridDim = dim3((unsigned)(blocks < 4096 ? blocks : 4096));
    config.blockDim = dim3(256);
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = dependent_launch ? 1 : 0;
    return cudaLaunchKernelEx(&config, add_partials, (const float*)W, C, M, N, (N + 3) / 4 * 4, pieces);
}}
'''

# Read back by `TemplateVariant.resources`; joined to every launcher (it names `kernel`, THREADS and SHARED).
RESOURCES = r'''
// Of a kernel (`kernel` for kernel_resource): 0: registers per thread, 1: shared memory per block (bytes), 2: blocks
// per multiprocessor, 3: local memory per thread
template <typename Kernel> static int resource_of(Kernel k, int which) {{
    cudaFuncAttributes attr;
    if (cudaFuncGetAttributes(&attr, k) != cudaSuccess) return -1;
    int blocks = 0;
    cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, k, THREADS, SHARED);
    const int values[] = {{attr.numRegs, (int)attr.sharedSizeBytes + SHARED, blocks, (int)attr.localSizeBytes}};
    return values[which];
}}
extern "C" int kernel_resource(int which) {{
    return resource_of(kernel, which);
}}
'''


# The C type of each torch dtype a kernel's matrices may hold.
C_TYPES = {'float32': 'float', 'bfloat16': '__nv_bfloat16'}


def c_literal(value):
    "A template argument as C++ writes it: True -> 'true', 8 -> '8', 'Bf16' -> 'Bf16'."
    return str(value).lower() if isinstance(value, bool) else str(value)


def template_parameters(source, name):
    "The names of kernel `name`'s template parameters, in order (defaults dropped)."
    found = re.search(r'template\s*<([^>]*)>\s*__global__.*?\b' + name + r'\s*\(', source, re.S)
    if not found: raise ValueError(f"no `template <...> __global__ ... {name}(` in the source")
    return [p.split('=')[0].split()[-1] for p in found.group(1).split(',')]


class TemplateVariant:
    """Kernel `name` of `source` (a template) instantiated with `params`, launched with `threads` threads per
    block, `shared_bytes` of dynamic shared memory, and one block per BM x BN tile of C; A and B hold `dtype`, C
    `out_dtype` (float32 unless said). Callable as fn(m, n); compiled on first use or by build(). Parameters
    named in `params` but not in the template (e.g. 'vector') only describe the variant, or fill the launcher's
    fields of the same name. `launcher` is the launcher's text (a format string, `LAUNCHER` unless said); `arch`
    the GPU target (`compile_cuda`'s)."""
    def __init__(self, source, name, threads, shared_bytes=0, dtype='float32', out_dtype='float32', launcher=LAUNCHER,
                 arch=None, **params):
        self.name, self.params, self.threads, self.shared_bytes = name, params, threads, shared_bytes
        self.dtype, self.out_dtype, self.arch = dtype, out_dtype, arch
        values = {k: c_literal(v) for k, v in {**params, 'THREADS': threads}.items()}
        names = template_parameters(source, name)
        args, args_unaligned = (', '.join({**values, 'ALIGNED': a}[p] for p in names) for a in ('true', 'false'))
        self.source = cuda_prelude + source + (launcher + RESOURCES).format(
            kernel=name, args=args, args_unaligned=args_unaligned, threads=threads, shared=shared_bytes, bm=params['BM'], bn=params['BN'],
            c_in=C_TYPES[dtype], c_out=C_TYPES[out_dtype], **values)
        self._module = None

    def build(self):
        if self._module is None: self._module = compile_cuda(self.source, arch=self.arch)
        return self

    def __call__(self, m, n):
        import torch
        h, k, w = check_matmul_inputs(m, n, dtype=self.dtype)
        out = torch.empty(h, w, device=m.device, dtype=getattr(torch, self.out_dtype))
        self.build()._module.matmul(m, n, out, h, w, k)
        return out

    def resources(self, aligned=True):
        """Registers and local memory per thread, shared KiB per block, threads per block, blocks per SM and
        occupancy, from the CUDA runtime: of the kernel for aligned rows, or (`aligned=False`, where the launcher has
        two) of the one for unaligned rows."""
        import torch
        module = self.build()._module
        read = module.kernel_resource if aligned else module.unaligned_kernel_resource
        regs, shared, blocks, local = (read(i) for i in range(4))
        per_sm = torch.cuda.get_device_properties(0).max_threads_per_multi_processor
        return dict(registers=regs, shared_kib=shared / 1024, threads=self.threads, blocks_per_sm=blocks,
                    occupancy=blocks * self.threads / per_sm, local_bytes=local)

    def __repr__(self):
        return f"{self.name}({', '.join(f'{k}={v}' for k, v in self.params.items() if k != 'vector')})"


# Workspaces kept per (GPU, stream), as torch keeps cuBLAS's: a call finds its stream's workspace free, since the
# calls before it on its stream have ended, while calls on other streams, which may run at the same time, have
# workspaces of their own. Only workspaces up to WORKSPACE_KEPT_BYTES are kept: a product that needs more runs
# long enough for an allocation's microseconds not to count.
WORKSPACE_KEPT_BYTES = 64 * 2**20
_WORKSPACES = {}


def kept_workspace(kept, key, numel, make):
    """kept[key] (key: GPU and stream, with whatever else tells workspaces apart) if it holds at least `numel`
    elements; else make(numel), kept under key if it is at most WORKSPACE_KEPT_BYTES. While a CUDA graph is being
    captured, always a new one: the graph keeps what it allocates, and replays it in the order captured."""
    import torch
    if torch.cuda.is_current_stream_capturing(): return make(numel)
    work = kept.get(key)
    if work is None or work.numel() < numel:
        work = make(numel)
        if work.numel() * work.element_size() <= WORKSPACE_KEPT_BYTES: kept[key] = work
    return work


def split_k_workspace(floats, device, stream):
    """A float32 tensor of at least `floats` elements on GPU `device` (an index), for split-K's partial products on
    `stream` (a cudaStream_t, as an int)."""
    import torch
    return kept_workspace(_WORKSPACES, (device, stream), floats, lambda n: torch.empty(n, device=device))


class SplitK:
    """A TemplateVariant whose kernel can split K (one built with `launcher=LAUNCHER + SPLIT_K_LAUNCHER`), run with K
    cut into `splits` pieces (fewer where K has fewer BK steps): callable as fn(m, n), like the variant itself. Its
    `params` are the variant's plus `splits`, so that a tuning result names both."""
    def __init__(self, variant, splits):
        if not isinstance(splits, int) or splits < 1: raise ValueError(f"splits must be a positive int, got {splits!r}")
        self.variant, self.splits = variant, splits
        self.params, self.source, self.threads = {**variant.params, 'splits': splits}, variant.source, variant.threads
        self._pieces = {}                                  # K -> pieces(K), asked of the library once per K

    def build(self):
        self.variant.build()
        self._launch = self.variant._module.unchecked('matmul_split')
        return self

    def pieces(self, k):
        "The pieces K is cut into for this K."
        if k not in self._pieces: self._pieces[k] = self.build().variant._module.pieces_of_k(k, self.splits)
        return self._pieces[k]

    def __call__(self, m, n):
        # On a product of a few hundredths of a millisecond, a call must cost the CPU much less than the GPU's time,
        # or the GPU waits for the next call: so the inputs are checked once, here, the pieces and the workspace
        # are found without asking the library or allocating, and the library's function gets bare pointers.
        import torch
        h, k, w = check_matmul_inputs(m, n)
        out, pieces, device = torch.empty(h, w, device=m.device), self.pieces(k), m.get_device()
        stream = current_stream_handle(device)
        # the partial products, in rows of w rounded up to a multiple of 4 floats (see SPLIT_K_LAUNCHER)
        work = out if pieces == 1 else split_k_workspace(pieces * h * padded_widths(k, w)[1], device, stream)
        error = self._launch(m.data_ptr(), n.data_ptr(), out.data_ptr(), work.data_ptr(), h, w, k, self.splits, stream)
        if error: self.variant._module.raise_if_error('matmul_split', error)
        return out

    def resources(self, aligned=True): return self.variant.resources(aligned)

    def __repr__(self): return f"{self.variant!r} x {self.splits} split(s) of K"


def padded_widths(k, w):
    "K and w rounded up to multiples of 4 floats: the row lengths of `Padded`'s copies of A (k) and of B and C (w)."
    return (k + 3) // 4 * 4, (w + 3) // 4 * 4


class Padded:
    """A candidate (a TemplateVariant or SplitK) run on copies of m and n padded with zeros to widths that are multiples
    of 4, so that every row starts on 16 bytes and the kernel takes its float4 path; C is computed padded too, and
    cut back to its width. The copies cost three passes over memory (A, B, and C's cut), which pays only on products
    large enough for the float-by-float path to cost more. Shapes already aligned run the candidate as it is."""
    def __init__(self, candidate):
        self.candidate = candidate
        self.params, self.source, self.threads = {**candidate.params, 'padded': True}, candidate.source, candidate.threads

    def build(self):
        self.candidate.build()
        return self

    def __call__(self, m, n):
        import torch.nn.functional as F
        h, k, w = check_matmul_inputs(m, n)
        k4, w4 = padded_widths(k, w)
        if (k4, w4) == (k, w): return self.candidate(m, n)
        c = self.candidate(F.pad(m, (0, k4 - k)), F.pad(n, (0, w4 - w, 0, k4 - k)))     # zeros: they add nothing
        return c[:, :w].contiguous()

    def resources(self, aligned=True): return self.candidate.resources(aligned)

    def __repr__(self): return f"{self.candidate!r}, on copies padded to widths of 4"
