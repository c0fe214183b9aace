"""What the checks of CUDA C and Numba kernels share: the shapes they run on, a matmul around a learner's
launcher, the machine code a kernel must have, and Numba on the GPU or in its simulator."""
import math

from .parts import NotYet, compare, count_in, machine_code, running
from .simulated import cdiv, problem, rand


# The shapes CUDA C kernels are checked on: the lecture's problem, then awkward shapes.
GPU_SHAPES = ((5120, 256, 5120), (1000, 300, 700), (1, 300, 700), (1000, 300, 1), (33, 17, 31))


def matmul_via(launcher, *extra):
    "A matmul(m, n) that checks its inputs and calls a learner's launcher(m, n, out, h, w, k, *extra)."
    def matmul(m, n):
        import torch
        from ..input_checks import check_matmul_inputs
        h, k, w = check_matmul_inputs(m, n)
        out = torch.full((h, w), math.nan, device=m.device)
        launcher(m, n, out, h, w, k, *extra)
        return out
    return matmul


def check_matmul_on_gpu(fn, what, shapes=GPU_SHAPES):
    import torch
    for h, k, w in shapes:
        torch.manual_seed(h * 1_000_003 + k * 1009 + w)    # the same inputs on every run: the same sentence in Jupyter and make check
        m, n = rand(h, k, device='cuda'), rand(k, w, device='cuda')
        with running(f"{what} on {problem(h, k, w)}"):
            got = fn(m, n)
            torch.cuda.synchronize()
        compare(got, m @ n, f"{what} on {problem(h, k, w)}", atol=1e-3, rtol=1e-4)


def require_machine_code(report, src, kernel, needs, what):
    """Read the kernel's machine code (nvcc, no GPU needed) and fail if it lacks what the task asks for:
    needs = {'barriers': (at least, the sentence if not), ...}; a value of (0, sentence) for 'local memory' means none."""
    from ..cuda_toolkit import nvcc_available
    if not nvcc_available(): return None
    kind, listing = machine_code(src, kernel)
    if not listing: raise NotYet(f"nvcc made no kernel whose name contains {kernel!r}: name your kernel {kernel}")
    for thing, (least, sentence) in needs.items():
        n = count_in(kind, listing, thing)
        if (least == 0 and n) or (least and n < least): raise NotYet(f"{sentence} (the {kind} of {what} has {n} {thing})")
    report.ok(f"the machine code ({kind}) of {what} has " + ', '.join(t for t, (l, _) in needs.items() if l) +
              ''.join(f", no {t}" for t, (l, _) in needs.items() if l == 0))
    return kind, listing


TILED_NEEDS = {'shared stores': (1, "the kernel never stores to shared memory, so no tile reaches it"),
               'barriers': (2, "a tiled kernel needs two __syncthreads() per phase: after filling the tiles, and after using them"),
               'multiply-adds': (1, "the kernel does no multiply-add, so no product of the tiles is added up")}

SMALL_MATMUL_CALLS = '''
for h, k, w in ((33, 17, 31), (1, 20, 9), (9, 20, 1)):
    m, n = torch.rand(h, k, device='cuda'), torch.rand(k, w, device='cuda')
    out = torch.empty(h, w, device='cuda')
    mod.{fn}(m, n, out, h, w, k{extra})
'''


def numba_tools():
    "Notebook 08's helpers (importing it switches Numba to its simulator where there is no GPU)."
    from ..notebook_import import import_notebook
    return import_notebook('08')


def numba_matmul(nb08, kernel, tw, dynamic=False):
    "matmul(m, n) that launches a Numba kernel(m, n, out[, tw]) on tw x tw blocks."
    import torch
    from ..input_checks import check_matmul_inputs
    def matmul(m, n):
        h, k, w = check_matmul_inputs(m, n, device=nb08.DEVICE)
        out = torch.full((h, w), math.nan, device=m.device)
        args = [nb08.as_kernel_array(t) for t in (m, n, out)]
        if dynamic: kernel[(cdiv(w, tw), cdiv(h, tw)), (tw, tw), nb08.numba_stream(), 2 * tw * tw * 4](*args, tw)
        else: kernel[(cdiv(w, tw), cdiv(h, tw)), (tw, tw), nb08.numba_stream()](*args)
        return out
    return matmul


SIMULATOR_SHAPES = (((5, 7, 3), 4), ((1, 9, 5), 4), ((6, 10, 1), 4), ((9, 13, 11), 8))


def check_numba_matmul(nb08, make_fn, report, what):
    "On the simulator, small awkward shapes; on a GPU, the lecture's problem and awkward shapes."
    if nb08.SIMULATOR:
        for (h, k, w), tw in SIMULATOR_SHAPES:
            m, n = rand(h, k), rand(k, w)
            with running(f"{what} on {problem(h, k, w, tw=tw)} in Numba's simulator"): got = make_fn(tw)(m, n)
            compare(got, m @ n, f"{problem(h, k, w, tw=tw)}, in Numba's simulator")
        report.ok("right in Numba's CUDA simulator on 5x7 @ 7x3, 1x9 @ 9x5, 6x10 @ 10x1 (tw=4) and 9x13 @ 13x11 (tw=8)")
    else:
        for tw in (16, 32):
            check_matmul_on_gpu(make_fn(tw), f"{what}, tw={tw}", GPU_SHAPES if tw == 16 else GPU_SHAPES[1:])
        report.ok("right on the GPU on the lecture's problem and awkward shapes, with tw = 16 and 32")
