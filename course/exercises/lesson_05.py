"""The exercises of notebook 05: CUDA C with dynamic shared memory."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('05.1', 'the Python kernel in CUDA C, with dynamic shared memory',
          hints=("Notebook 05 translates the Python kernel line by line: blockIdx/threadIdx become CUDA's built-ins, the shared buffer becomes `extern __shared__ float ms[];` sized by the launch.",
                 'Split the dynamic buffer into ms = sh and ns = sh + tw*tw, keep both __syncthreads() per phase, and launch with 2*tw*tw*sizeof(float) bytes of shared memory.'), runs_on_gpu=True)
def translate_to_cuda(ns, report):
    import re
    src, = need(ns, 'dyn_cuda_src')
    if not re.search(r'extern\s+__shared__', src):
        raise NotYet("the kernel declares no dynamic shared memory: `extern __shared__ float ms[];`, sized by the launch")
    mod = compiled(report, src, 'dyn_cuda_src')
    require_machine_code(report, src, 'my_matmul_dyn_k', TILED_NEEDS, 'my_matmul_dyn_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    from ..notebook_import import import_notebook
    for tw in (16, 8, 32, 13):
        check_matmul_on_gpu(matmul_via(mod.my_matmul_dyn, tw), f"tw={tw}",
                            GPU_SHAPES if tw == 16 else GPU_SHAPES[1:])
    report.ok("right on the lecture's problem and awkward shapes, with tw = 16, 8, 32 and 13")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='my_matmul_dyn', extra=', 8'))
    from ..correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    nb05 = import_notebook('05')
    faster_than(report, matmul_via(mod.my_matmul_dyn, 16), nb05.matmul_dyn, (m, n), 1.15,
                "on the lecture's problem, tw=16", "notebook 05's matmul_dyn")


@exercise('05.2', 'a matrix-vector product in CUDA C, and its wrapper',
          hints=('One warp per row: its 32 lanes read neighbouring elements of the row (coalesced), each keeps a partial sum, and the warp adds them at the end.',
                 "Copy each chunk of v into shared memory (all threads help, then __syncthreads()), loop j = lane; j < chunk; j += 32, and after the last chunk add the lanes' sums with __shfl_down_sync(0xffffffff, acc, d) for d = 16, 8, 4, 2, 1. The wrapper checks device, dtype, dims, contiguity and sizes before launching."), runs_on_gpu=True)
def cuda_matvec(ns, report):
    import re, torch
    src, matvec = need(ns, 'matvec_cuda_src', 'matvec')
    if not re.search(r'extern\s+__shared__', src):
        raise NotYet("the kernel keeps no chunk of v in dynamic shared memory (`extern __shared__ float vs[];`)")
    mod = compiled(report, src, 'matvec_cuda_src')
    require_machine_code(report, src, 'matvec_k', {
        'shared stores': (1, "the kernel never stores to shared memory: copy each chunk of v into it"),
        'barriers': (2, "the kernel needs two __syncthreads() per chunk of v: after filling it, and after using it"),
        'multiply-adds': (1, "the kernel does no multiply-add")}, 'matvec_k')
    device = 'cuda' if gpu_here() else 'cpu'
    good_m, good_v = rand(8, 8, device=device), rand(8, device=device)
    bad = {"m on the CPU": (rand(8, 8), good_v), "a non-contiguous m": (rand(8, 8, device=device).t(), good_v),
           "a float64 m": (good_m.double(), good_v), "a 2-D v": (good_m, rand(8, 1, device=device)),
           "v of 5 values for m 8x8": (good_m, rand(5, device=device)), "an empty m": (rand(0, 8, device=device), good_v)}
    if device == 'cpu': bad = {k: v for k, v in bad.items() if k == "m on the CPU"}
    for what, (m, v) in bad.items():
        try: matvec(m, v)
        except (ValueError, TypeError) as e:
            if str(e).strip(): continue
            raise NotYet(f"matvec rejects {what}, but with an empty message") from None
        except Exception as e:
            raise NotYet(f"matvec raises {type(e).__name__} for {what}: check the inputs in Python first and raise "
                         "ValueError (or TypeError) with a message") from None
        raise NotYet(f"matvec accepts {what}: check it and raise ValueError (or TypeError) with a message")
    report.ok("matvec rejects " + ', '.join(bad) + " with a message")
    if device == 'cpu' or mod is None:
        return report.skip("running it: correctness, the rest of the bad inputs, out-of-bounds accesses, races and speed need a GPU")
    for h, k in ((1000, 300), (1, 300), (1000, 1), (33, 17), (4096, 4096), (2000, 1500)):
        m, v = rand(h, k, device='cuda'), rand(k, device='cuda')
        with running(f"matvec on m {h}x{k}"): got = matvec(m, v)
        compare(got, m @ v, f"matvec on m {h}x{k}", atol=1e-3)
    report.ok("right on m 1000x300, 1x300, 1000x1, 33x17, 4096x4096 and 2000x1500")
    sanitized(report, src, '''
for h, k in ((33, 17), (1, 300), (70, 1)):
    m, v = torch.rand(h, k, device='cuda'), torch.rand(k, device='cuda')
    mod.matvec_launch(m, v, torch.empty(h, device='cuda'), h, k)
''')
    m, v = rand(8192, 8192, device='cuda'), rand(8192, device='cuda')
    faster_than(report, matvec, torch.mv, (m, v), 1.5, "m 8192x8192 @ v", "torch.mv (cuBLAS)")
