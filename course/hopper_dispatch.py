"""The decision every Hopper (TMA) matmul wrapper of the course makes before it launches anything.

First the inputs are checked as everywhere in the course (bf16 here); then, where this machine cannot run the
kernel, a CudaUnavailableError says why; last, shapes TMA cannot copy (`tma_can_copy`) go to a kernel
without TMA. Notebook 13's `HopperMatmul` and `course.gluon_matmul.matmul_gluon_bf16` both decide through it."""
from .cuda_toolkit import CudaUnavailableError
from .input_checks import check_matmul_inputs, tma_can_copy


def dispatch_bf16(m, n, kernel, fallback, unavailable):
    """`kernel(m, n)` where TMA can copy the bf16 inputs, `fallback(m, n)` where it cannot. Before either: the inputs
    are checked (TypeError or ValueError saying which rule failed), then `unavailable()` is asked: None where this
    machine can run `kernel`, else the sentence of the CudaUnavailableError raised."""
    check_matmul_inputs(m, n, dtype='bfloat16')
    missing = unavailable()
    if missing: raise CudaUnavailableError(missing)
    return kernel(m, n) if tma_can_copy(m, n) else fallback(m, n)


def padded_copies(m, n, multiple):
    """Copies of m (h x k) and n (k x w) in new buffers (so starting on 16 bytes) whose rows are k and w rounded up to
    multiples of `multiple` elements, zeros in the new columns of A and rows and columns of B (they add nothing to any
    sum); only the padding is zeroed, the copies write the rest. For a product TMA cannot copy as it is: multiply the
    copies, then cut C back to w columns."""
    import torch
    (h, k), w = m.shape, n.shape[1]
    kp, wp = -(-k // multiple) * multiple, -(-w // multiple) * multiple
    a, b = torch.empty(h, kp, device=m.device, dtype=m.dtype), torch.empty(kp, wp, device=n.device, dtype=n.dtype)
    a[:, k:].zero_(); b[k:].zero_(); b[:k, w:].zero_()
    a[:, :k] = m
    b[:k, :w] = n
    return a, b
