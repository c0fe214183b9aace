"""A course kernel where `torch.matmul` was: the same inputs, the same result, for 2-D and 3-D float32 tensors.

`DropInMatmul(kernel, choose)` is `matmul(a, b)`, which follows torch.matmul's rules for 2-D and 3-D float32 tensors:

- 2-D @ 2-D: one product;
- 3-D @ 2-D (a batch of A times one B, as a layer applies its weights to a batch of sequences): where A's entries lie
  row after row, one after another, the batch is folded into A's rows, one product of (batch x m) x k @ k x n;
- otherwise a batch (2-D @ 3-D, 3-D @ 3-D, or a 3-D A that cannot be folded): one kernel call for the whole batch,
  a batch of 1 (or a 2-D operand) broadcast against the other's with a batch stride of 0;
- an empty dimension: torch's result (a K of 0 gives zeros).

The kernel reads each operand where it lies, with no copy, when each matrix of it is row-major or column-major (a
`.T` of a row-major one); anything else (a slice of columns, say) is copied to row-major first. `plan(a, b)` says,
without multiplying, how a call is carried out: the launch, the layouts and the copies. Anything torch.matmul takes
that this does not (1-D or 4-D tensors, another dtype, tensors on two devices, batches that do not broadcast, a
tensor that needs a gradient) is refused with a sentence that says what `matmul` takes.

The kernel is a function `kernel(a, b, out, problem, choice)`: `a` and `b` are `Operand`s (the tensor whose first
element is entry 0's, whether it is stored transposed, its batch stride), `out` a contiguous batch x m x n tensor,
`problem` the Plan, `choice` what `choose(h, k, w)` returned for the product (the tile sizes and pieces of K a tuner
kept, say; None without `choose`). Where the choice says `padded` and a row of A, B or C does not start on 16 bytes,
the operands are first copied into row-major tensors padded with zeros to widths that are multiples of 4 (as
notebook 11's `Padded` does), and C is cut back. `DROP_IN_LAUNCHER` is the launcher of notebook 17's kernel, and
`gpu_kernel` the kernel function that calls it.
"""
from typing import NamedTuple

from .input_checks import MAX_GRID_Y
from .template_variants import LAUNCHER, SPLIT_K_LAUNCHER, padded_widths, split_k_workspace

# The longest row a tile may hold (the drop-in kernel's offsets inside a tile are 32-bit: 256 rows of at most this
# many floats): K and N; and the most rows M of a transposed A (a tile of it holds 16 rows of M floats).
MAX_ROW = 2**23
MAX_TRANSPOSED_A_ROWS = 2**27


class Plan(NamedTuple):
    "How matmul(a, b) is carried out."
    out_shape: tuple        # torch.matmul's result shape
    batch: int              # entries of the one launch (1 where folded or 2-D); 0: nothing to launch (an empty result)
    m: int                  # the product of each entry: m x k @ k x n (m counts the folded rows)
    k: int
    n: int
    a_transposed: bool      # the kernel reads A stored K x M (column-major), B stored N x K
    b_transposed: bool
    copies: tuple           # 'A' and/or 'B' where an operand is copied into row-major order first
    folded: bool            # a 3-D A's batch folded into rows (one product for the whole batch)
    wide: bool = False      # a matrix of an entry (A, B, or C with rows padded to 4) has 2^31 elements or more


class Operand(NamedTuple):
    "One input as the kernel reads it."
    tensor: object          # its data_ptr() is entry 0's first element
    transposed: bool        # each entry stored column-major (A: K x M in memory, B: N x K)
    batch_stride: int       # elements from one entry to the next; 0 where every entry shares it


def _refuse(why):
    raise ValueError(f"matmul takes two float32 tensors of 2 or 3 dimensions (as torch.matmul does for those): {why}")


def _check(a, b):
    "The inputs' (batch of A, batch of B, m, k, n), a batch being None for a 2-D operand; or a clear error."
    import torch
    for name, t in (('A', a), ('B', b)):
        if not isinstance(t, torch.Tensor): _refuse(f"{name} is a {type(t).__name__}, not a tensor")
        if t.dim() not in (2, 3):
            hint = " (for a vector, x[None] or x[:, None] makes it a matrix)" if t.dim() == 1 else ""
            _refuse(f"{name} has {t.dim()} dimension(s){hint}")
        if t.dtype != torch.float32: _refuse(f"{name} is {t.dtype}")
        if t.requires_grad and torch.is_grad_enabled():
            _refuse(f"{name} requires a gradient, and this matmul has no backward (use torch.no_grad(), or torch.matmul)")
    if a.device != b.device: _refuse(f"A is on {a.device} and B on {b.device}")
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2: _refuse(f"A is ... x {m} x {k} and B ... x {k2} x {n}: A's columns must match B's rows")
    batch_a, batch_b = (a.shape[0] if a.dim() == 3 else None), (b.shape[0] if b.dim() == 3 else None)
    if batch_a is not None and batch_b is not None and batch_a != batch_b and 1 not in (batch_a, batch_b):
        _refuse(f"batches of {batch_a} and {batch_b} do not broadcast (one must be 1, or both the same)")
    return batch_a, batch_b, m, k, n


def stored_transposed(t):
    """How each matrix of t (its last two dimensions) lies in memory: False where row-major (each row right after the
    one before), True where column-major (each column after the one before: a `.T` of a row-major matrix), None where
    neither (a slice of columns, say). A dimension of 1 lies either way: row-major is said first."""
    rows, cols = t.shape[-2:]
    row_stride, col_stride = t.stride()[-2:]
    if (col_stride == 1 or cols == 1) and (row_stride == cols or rows == 1): return False
    if (row_stride == 1 or rows == 1) and (col_stride == rows or cols == 1): return True
    return None


class _Reading(NamedTuple):
    "How a call reads its inputs, found once per layout (shapes, strides, dtypes, devices) and kept."
    plan: Plan
    fold: bool              # A reshaped to its rows first
    copy_a: bool            # made row-major first
    copy_b: bool
    stride_a: int           # the batch strides, as the Operands take them
    stride_b: int


def _reading(a, b):
    "The _Reading of matmul(a, b), its inputs checked."
    batch_a, batch_b, m, k, n = _check(a, b)
    batch = batch_b if batch_a is None or batch_a == 1 and batch_b is not None else batch_a   # broadcast
    out_shape = (m, n) if batch is None else (batch, m, n)
    if 0 in (m, n, k) or batch == 0: return _Reading(Plan(out_shape, 0, m, k, n, False, False, (), False), 0, 0, 0, 0, 0)
    a_transposed, b_transposed = stored_transposed(a), stored_transposed(b)
    fold = (batch_a is not None and batch_b is None and a_transposed is False
            and (a.shape[0] == 1 or a.stride(0) == m * k))
    if fold: a, m = a.reshape(batch_a * m, k), batch_a * m          # a view: the entries lie one after another
    launched = 1 if fold or batch is None else batch
    wide = max(m * k, k * n, m * padded_widths(k, n)[1]) >= 2**31     # C's rows as split-K's workspace holds them
    a_rows = MAX_TRANSPOSED_A_ROWS if a_transposed else 2**31 - 1
    for what, size, most in (('k', k, MAX_ROW), ('n', n, MAX_ROW), ('m', m, a_rows)):      # checked before any copy
        if wide and size > most:
            _refuse(f"{what} = {size} is over {most} in a matrix of 2^31 elements or more: the kernel's offsets "
                    "inside a tile are 32-bit")
    strides = [0 if t.dim() == 2 or t.shape[0] == 1 else (t.shape[1] * t.shape[2] if layout is None else t.stride(0))
               for t, layout in ((a, a_transposed), (b, b_transposed))]            # a copy's entries lie one after another
    copies = tuple(name for name, layout in (('A', a_transposed), ('B', b_transposed)) if layout is None)
    p = Plan(out_shape, launched, m, k, n, bool(a_transposed), bool(b_transposed), copies, fold, wide)
    return _Reading(p, fold, 'A' in copies, 'B' in copies, *strides)


def _operands(a, b, r):
    "The two Operands of a call read as `r` says."
    if r.fold: a = a.reshape(-1, a.shape[-1])                 # a view: the entries lie one after another
    if r.copy_a: a = a.contiguous()
    if r.copy_b: b = b.contiguous()
    return Operand(a, r.plan.a_transposed, r.stride_a), Operand(b, r.plan.b_transposed, r.stride_b)


def plan(a, b):
    "How matmul(a, b) would be carried out (a Plan), its inputs checked as matmul checks them; nothing is copied."
    return _reading(a, b).plan


def rows_aligned(p, a, b):
    """Whether the kernel reads every row of A, B and C from 16 bytes (the launcher's test): the rows as stored, the
    batch strides and the first elements."""
    row_a, row_b = (p.m if a.transposed else p.k), (p.k if b.transposed else p.n)
    return (all(x % 4 == 0 for x in (row_a, row_b, p.n, a.batch_stride, b.batch_stride))
            and a.tensor.data_ptr() % 16 == 0 and b.tensor.data_ptr() % 16 == 0)


def padded(a, b):
    "a and b copied row-major, padded with zeros to widths that are multiples of 4 (zeros add nothing to the product)."
    import torch.nn.functional as F
    k, w = b.shape[-2:]
    k4, w4 = padded_widths(k, w)
    return F.pad(a, (0, k4 - k)), F.pad(b, (0, w4 - w, 0, k4 - k))


class DropInMatmul:
    """torch.matmul's result for 2-D and 3-D float32 tensors, by `kernel` (see the module), with what `choose(h, k, w)`
    returns for an h x k @ k x w product (a batch counted as batch x h rows)."""
    KEPT = 1024             # readings kept (by layout): a call of a layout seen before skips finding it again

    def __init__(self, kernel, choose=None):
        self.kernel, self.choose, self._readings = kernel, choose, {}

    def __call__(self, a, b):
        import torch
        try:
            key = (a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.device, b.device,
                   (a.requires_grad or b.requires_grad) and torch.is_grad_enabled())
            r = self._readings.get(key)
        except (AttributeError, TypeError): key = r = None      # not tensors: _reading says so
        if r is None:
            r = _reading(a, b)
            if key is not None:
                if len(self._readings) >= self.KEPT: self._readings.clear()
                self._readings[key] = r
        p = r.plan
        if p.batch == 0: return torch.zeros(p.out_shape, dtype=torch.float32, device=a.device)
        ra, rb = _operands(a, b, r)
        choice = self.choose(p.batch * p.m, p.k, p.n) if self.choose else None
        pad = isinstance(choice, dict) and choice.get('padded') and not rows_aligned(p, ra, rb)
        if pad:                                                   # the same choice, on the padded copies
            a, b = padded(a, b)
            r = _reading(a, b)
            ra, rb = _operands(a, b, r)
        out = torch.empty(r.plan.out_shape, dtype=torch.float32, device=a.device)
        self.kernel(ra, rb, out, r.plan, choice)
        return out[..., :p.n].contiguous() if pad else out

    def plan(self, a, b): return plan(a, b)


# The drop-in kernel's launcher: LAUNCHER's two kernels and resources, SPLIT_K_LAUNCHER's pieces and second pass, and
# matmul_batched, which launches a batch, in chunks of batch_chunk entries, with K in pieces.
DROP_IN_LAUNCHER = LAUNCHER[:LAUNCHER.index('// `copies` blocks')] + SPLIT_K_LAUNCHER[:SPLIT_K_LAUNCHER.index('// Split-K:')] + r'''
// add_partials over `rows` rows of C, launched as matmul_split launches it (a programmatic dependent launch on Hopper).
static cudaError_t add_pieces(const float* W, float* C, int rows, int N, int pieces, cudaStream_t stream) {{
    static int major = [] {{ int device = 0, value = 0; cudaGetDevice(&device);
                             cudaDeviceGetAttribute(&value, cudaDevAttrComputeCapabilityMajor, device); return value; }}();
    cudaLaunchAttribute attribute[1];
    attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attribute[0].val.programmaticStreamSerializationAllowed = 1;
    const long long blocks = ((long long)rows * ((N + 3) / 4) + 255) / 256;
    cudaLaunchConfig_t config = {{}};
    config.gridDim = dim3((unsigned)(blocks < 4096 ? blocks : 4096));
    config.blockDim = dim3(256);
    config.stream = stream;
    config.attrs = attribute;
    config.numAttrs = major >= 9 ? 1 : 0;
    return cudaLaunchKernelEx(&config, add_partials, W, C, rows, N, (N + 3) / 4 * 4, pieces);
}}
// C (batch x M x N, contiguous) = the product of each entry: A's entry i at A + i x batch_a, stored K x M where A_T,
// B's at B + i x batch_b, stored N x K where B_T; launched `chunk` entries at a time (batch_chunk in Python: the grid's
// y holds them, and add_partials's rows, entries x M, an int). W: the workspace, at least pieces x min(batch, chunk) x
// M x ldw floats where K goes in more than one piece (ldw: N rounded up to a multiple of 4).
extern "C" cudaError_t matmul_batched(const float* A, const float* B, float* C, float* W, int M, int N, int K, int batch,
                                      long long batch_a, long long batch_b, int splits, int chunk, cudaStream_t stream) {{
    static const cudaError_t shared_ok = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED) == cudaSuccess
        ? cudaFuncSetAttribute(kernel_unaligned, cudaFuncAttributeMaxDynamicSharedMemorySize, SHARED) : cudaErrorInvalidValue;
    if (shared_ok != cudaSuccess) return shared_ok;
    const long long row_a = {A_T} ? M : K, row_b = {B_T} ? K : N;          // the rows as stored
    const bool aligned = (row_a | row_b | N | batch_a | batch_b) % 4 == 0
                         && ((uintptr_t)A | (uintptr_t)B | (uintptr_t)C | (uintptr_t)W) % 16 == 0;
    const int pieces = pieces_of_k(K, splits);
    const unsigned tiles = cdiv(M, {bm}) * cdiv(N, {bn});
    for (int first = 0; first < batch; first += chunk) {{
        const int entries = batch - first < chunk ? batch - first : chunk;
        float* const out = C + (size_t)first * M * N;
        (aligned ? kernel : kernel_unaligned)<<<dim3(tiles * pieces, entries), THREADS, SHARED, stream>>>(
            A + first * batch_a, B + first * batch_b, pieces > 1 ? W : out, M, N, K, batch_a, batch_b);
        cudaError_t error = cudaGetLastError();
        if (error == cudaSuccess && pieces > 1) error = add_pieces(W, out, entries * M, N, pieces, stream);
        if (error != cudaSuccess) return error;
    }}
    return cudaSuccess;
}}
'''

def batch_chunk(m):
    """The entries of a batch of m-row products launched at once (matmul_batched's chunks): the grid's y holds
    MAX_GRID_Y, and add_partials's rows (entries x m) an int."""
    return max(1, min(MAX_GRID_Y, (2**31 - 1) // m))


def gpu_kernel(variant):
    """The kernel function of DropInMatmul for notebook 17's kernel on a GPU: `variant(a_transposed, b_transposed,
    wide, batched, **params)` returns the TemplateVariant (built with DROP_IN_LAUNCHER) for the choice's parameters
    (tile sizes, MIN_BLOCKS, GROUP; `splits` and `padded` are the call's), for matrices of 2^31 elements or more
    (wide) and for a batch of more than one product (batched). What a call finds once, the compiled library and the
    pieces of K, it keeps: on a small product the CPU's microseconds per call are the time (notebook 11)."""
    from .cuda_library import current_stream_handle
    built, pieces_of = {}, {}

    def kernel(a, b, out, p, choice):
        # (Found by the choice's id: a kept entry holds its choice, so that id cannot be another dict's while kept.)
        key = (a.transposed, b.transposed, p.wide, p.batch > 1, id(choice))
        found = built.get(key)
        if found is None or found[3] is not choice:
            params = {k: v for k, v in choice.items() if k not in ('splits', 'padded', 'vector')}
            module = variant(a.transposed, b.transposed, p.wide, p.batch > 1, **params).build()._module
            found = built[key] = (module, module.unchecked('matmul_batched'), choice.get('splits', 1), choice)
        module, launch, splits, _ = found
        pieces = pieces_of.get((module, splits, p.k))
        if pieces is None: pieces = pieces_of[module, splits, p.k] = module.pieces_of_k(p.k, splits)
        device = out.get_device()
        stream = current_stream_handle(device)
        chunk = batch_chunk(p.m)
        work = (out if pieces == 1 else
                split_k_workspace(pieces * min(p.batch, chunk) * p.m * padded_widths(p.k, p.n)[1], device, stream))
        error = launch(a.tensor.data_ptr(), b.tensor.data_ptr(), out.data_ptr(), work.data_ptr(),
                       p.m, p.n, p.k, p.batch, a.batch_stride, b.batch_stride, splits, chunk, stream)
        if error: module.raise_if_error('matmul_batched', error)
    return kernel
