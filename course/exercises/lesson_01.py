"""The exercises of notebook 01: the naive kernel, one Python call per CUDA thread."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('01.1', 'a transpose kernel, with its bound check',
          hints=('Thread (x, y) of the grid owns one element of the output: read m[r*w + c] and write it where row c, column r of the w x h result lives.',
                 'Compute r = blockIdx.y*blockDim.y + threadIdx.y and c likewise in x; the grid has more threads than elements, so do nothing unless r < h and c < w. The result is w x h: element (c, r) is out[c*h + r].'))
def transpose_kernel(ns, report):
    kernel, = need(ns, 'transpose_bk')
    tpb = dim3(4, 4)
    for h, w in ((5, 7), (1, 9), (9, 1), (6, 4)):
        m = rand(h, w)
        trace = Trace()
        b = buffers(trace, m=m)
        out = nan_buffer(trace, 'out', h * w)
        with running(f"transpose_bk on a {h}x{w} m"):
            run_grid(kernel, dim3(cdiv(w, tpb.x), cdiv(h, tpb.y)), tpb, b['m'], out, h, w, trace=trace)
        compare(as_tensor(out, w, h), m.t(), f"transposing a {h}x{w} m")
        at_most(trace, 'global', 'read', 1, "a transpose")
        at_most(trace, 'global', 'write', 1, "a transpose")
    report.ok("right on 5x7, 1x9, 9x1 and 6x4 with 4x4 blocks; no thread reads or writes outside m and out")
    report.ok("each thread reads one value of m and writes one of out")


@exercise('01.2', 'reject what a kernel must not be given',
          hints=('Check each rule in turn and raise as soon as one fails: the type first (TypeError), then the dimensions, the dtype, the device, contiguity, emptiness and the sizes (ValueError).',
                 'isinstance(m, torch.Tensor); m.dim() == 2; m.dtype == torch.float32; m.device.type == device (compare torch.device(device).type); m.is_contiguous(); m.numel() > 0; m.shape[1] == n.shape[0].'))
def input_rules(ns, report):
    import torch
    check_inputs, = need(ns, 'check_inputs')
    with running("check_inputs(m 5x7, n 7x3, device='cpu')"):
        got = check_inputs(rand(5, 7), rand(7, 3), device='cpu')
    if tuple(got) != (5, 7, 3): raise NotYet(f"check_inputs(m 5x7, n 7x3) returned {got!r}, expected (h, k, w) = (5, 7, 3)")
    good = rand(8, 8)
    bad = {"m on the CPU when device='cuda'": (good, good, 'cuda'),
           "a non-contiguous m (a transposed view)": (rand(8, 8).t(), good, 'cpu'),
           "a non-contiguous n": (good, rand(8, 8).t(), 'cpu'),
           "a float64 m": (good.double(), good, 'cpu'),
           "an int32 n": (good, torch.ones(8, 8, dtype=torch.int32), 'cpu'),
           "a 1-D m": (rand(8), good, 'cpu'),
           "a 3-D n": (good, rand(8, 8, 1), 'cpu'),
           "m 8x5 with n 8x8 (a size mismatch)": (rand(8, 5), good, 'cpu'),
           "an empty m (0x8)": (rand(0, 8), good, 'cpu'),
           "a list instead of a tensor": ([[1.0]], good, 'cpu')}
    for what, (m, n, device) in bad.items():
        try: check_inputs(m, n, device=device)
        except (ValueError, TypeError) as e:
            if not str(e).strip(): raise NotYet(f"check_inputs rejects {what}, but with an empty message: say which rule failed")
            continue
        except Exception as e:
            raise NotYet(f"check_inputs raises {type(e).__name__} for {what}; raise ValueError or TypeError, with a "
                         "message saying which rule failed") from None
        raise NotYet(f"check_inputs accepts {what}: raise ValueError (or TypeError for a wrong type) with a message")
    report.ok("returns (h, k, w) for good inputs")
    report.ok(f"rejects, with a message, each of: {'; '.join(bad)}")
