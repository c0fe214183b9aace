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
