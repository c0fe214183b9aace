"""A course kernel where `torch.matmul` was: the same inputs, the same result, for 2-D and 3-D float32 tensors.

`as_torch_matmul(kernel)` wraps a 2-D kernel (`kernel(m, n)`: m x k @ k x n, both row-major and contiguous, float32,
as notebook 11's `matmul_fp32` takes them) into `matmul(a, b)`, which follows torch.matmul's rules:

- 2-D @ 2-D: one product;
- 3-D @ 2-D (a batch of A times one B, as a layer applies its weights to a batch of sequences): the batch is folded
  into A's rows, one product of (batch x m) x k @ k x n, with no copy where A's rows lie one after another;
- 2-D @ 3-D and 3-D @ 3-D: one product per batch entry, a batch of 1 broadcast against the other's (`torch.bmm` when
  both batches are equal);
- an empty dimension: torch's result (a K of 0 gives zeros);
- views of any strides (`.T`, slices): copied into row-major order first (`rows_of`), where the kernel needs it.

Anything else (1-D or 4-D tensors, another dtype, tensors on two devices, batches that do not broadcast) is refused
with a sentence that says what `matmul` takes. `plan(a, b)` says, without multiplying, how a call is carried out: the
products, the copies and the launches, so that the cost of a layout or a batch can be read before it is timed.
"""
from typing import NamedTuple


class Plan(NamedTuple):
    "How matmul(a, b) is carried out."
    out_shape: tuple        # torch.matmul's result shape
    products: int           # calls of the 2-D kernel
    copies: tuple           # 'A' and/or 'B' where an operand is copied into row-major order
    folded: bool            # a 3-D A's batch folded into rows (one product for the whole batch)


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
    if a.device != b.device: _refuse(f"A is on {a.device} and B on {b.device}")
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2: _refuse(f"A is ... x {m} x {k} and B ... x {k2} x {n}: A's columns must match B's rows")
    batch_a, batch_b = (a.shape[0] if a.dim() == 3 else None), (b.shape[0] if b.dim() == 3 else None)
    if batch_a is not None and batch_b is not None and batch_a != batch_b and 1 not in (batch_a, batch_b):
        _refuse(f"batches of {batch_a} and {batch_b} do not broadcast (one must be 1, or both the same)")
    return batch_a, batch_b, m, k, n


def rows_of(t):
    """A 2-D tensor in row-major order, each row right after the one before (what the kernels read: torch's
    `is_contiguous`): itself where it is, else a copy (a transposed view, a slice of columns)."""
    return t if t.is_contiguous() else t.contiguous()


def plan(a, b):
    "How matmul(a, b) would be carried out (a Plan), its inputs checked as matmul checks them."
    batch_a, batch_b, m, k, n = _check(a, b)
    batch = batch_b if batch_a is None or batch_a == 1 and batch_b is not None else batch_a   # broadcast
    out_shape = (m, n) if batch is None else (batch, m, n)
    if 0 in (m, n, k) or batch == 0: return Plan(out_shape, 0, (), False)
    if batch_a is not None and batch_b is None:                 # 3-D @ 2-D: one product of the folded rows
        return Plan(out_shape, 1, tuple(name for name, t in (('A', a), ('B', b)) if not t.is_contiguous()), True)
    copies = tuple(name for name, t, bt in (('A', a, batch_a), ('B', b, batch_b))
                   if not all((t[i] if bt is not None else t).is_contiguous() for i in range(bt or 1)))
    return Plan(out_shape, batch or 1, copies, False)


def as_torch_matmul(kernel):
    """matmul(a, b): torch.matmul's result for 2-D and 3-D float32 tensors, computed by `kernel` (a 2-D kernel that
    takes row-major contiguous inputs), a product per batch entry or one for a folded batch (see the module)."""
    import torch

    def matmul(a, b):
        p = plan(a, b)
        if p.products == 0: return torch.zeros(p.out_shape, dtype=torch.float32, device=a.device)
        if a.dim() == 2 and b.dim() == 2: return kernel(rows_of(a), rows_of(b))
        if p.folded:
            rows = a.reshape(-1, a.shape[2])        # a view where it can be (not always row-major: a batch of 1)
            return kernel(rows_of(rows), rows_of(b)).view(p.out_shape)
        out = torch.empty(p.out_shape, dtype=torch.float32, device=a.device)
        for i in range(p.out_shape[0]):
            left = a if a.dim() == 2 else a[i if a.shape[0] > 1 else 0]
            right = b if b.dim() == 2 else b[i if b.shape[0] > 1 else 0]
            out[i] = kernel(rows_of(left), rows_of(right))
        return out

    matmul.__doc__ = f"torch.matmul for 2-D and 3-D float32 tensors, by {getattr(kernel, '__name__', kernel)!s}."
    return matmul
