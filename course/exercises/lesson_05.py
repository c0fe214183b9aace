"""The exercises of notebook 05: CUDA C with dynamic shared memory."""
import functools, re
from pathlib import Path

from .barrier_placement import strip_c
from .gpu_kernels import GPU_SHAPES, TILED_NEEDS, require_machine_code
from .fenced_runs import (SMALL_EPILOGUE_CALLS, check_matmul_fenced, crash_explained, inside_a_loop, ptx_listing,
                          relu_ops, run_fenced, sanitized_cell, seeded)
from .parts import NotYet, cell_place, compare, compiled, faster_than, gpu_here, need, running
from .registry import exercise
from .simulated import rand


# --------------------------------------------------------------------------------------------------
# The exercises
# --------------------------------------------------------------------------------------------------

DYN_WIDTHS = (16, 8, 32, 13)


@exercise('05.1', 'a fused bias + ReLU epilogue, with a run-time tile width',
          hints=("Start from notebook 05's kernel: the tile width is an argument, so the tiles can only live in `extern __shared__` memory, sized by the launch. The epilogue is the last line, where each thread writes its one element: fmaxf(p + bias[c], 0.0f).",
                 "float *ms = sh, *ns = sh + tw*tw inside `extern __shared__ float sh[];`; after the loop over phases, `if (r < h && c < w) out[r*w + c] = fmaxf(p + bias[c], 0.0f);` (bias[c]: one value per column). The launch needs 2*tw*tw*sizeof(float) bytes for the two tiles."),
          runs_on_gpu=True)
def fused_bias_relu(ns, report):
    src, = need(ns, 'bias_relu_cuda_src')
    if not isinstance(src, str): raise NotYet("bias_relu_cuda_src must be a string of CUDA C")
    if not re.search(r'extern\s+__shared__', strip_c(src)):
        raise NotYet("the kernel declares no dynamic shared memory (no `extern __shared__` array): with tw known only "
                     "at run time, no array of a size fixed at compile time fits its tiles")
    mod = compiled(report, src, 'bias_relu_cuda_src')
    require_machine_code(report, src, 'matmul_bias_relu_k', TILED_NEEDS, 'matmul_bias_relu_k')
    listing = ptx_listing(src, 'matmul_bias_relu_k')
    if listing is not None:
        if not relu_ops(listing):
            raise NotYet("matmul_bias_relu_k never clamps at 0 (its PTX has no max.f32 and no float comparison): the "
                         "ReLU is missing")
        report.ok("the PTX of matmul_bias_relu_k clamps at 0 (a max.f32 or a float comparison)")
    if mod is None: return
    if not gpu_here():
        return report.skip("running it: correctness with the bias and the ReLU, out-of-bounds accesses, the dynamic "
                           "shared memory the launch gives, races and speed need a GPU")
    calls = SMALL_EPILOGUE_CALLS.format(fn='matmul_bias_relu', extra=', 8')
    def launcher(tw): return lambda m, n, bias, out, h, w, k: mod.matmul_bias_relu(m, n, bias, out, h, w, k, tw)
    with crash_explained(report, src, 'bias_relu_cuda_src', calls, advice="Shared memory counts too: does the launch "
                         "give the kernel enough dynamic shared memory for both of its tiles?"):
        for tw in DYN_WIDTHS:
            check_matmul_fenced(launcher(tw), f"matmul_bias_relu with tw={tw}", GPU_SHAPES if tw == 16 else GPU_SHAPES[1:],
                                bias=True, relu=True)
    report.ok("relu(m @ n + bias) right on the lecture's problem and awkward shapes, with tw = 16, 8, 32 and 13, "
              "nothing read or written outside the buffers")
    sanitized_cell(report, src, 'bias_relu_cuda_src', calls)
    import torch
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    bias = torch.randn(n.shape[1], device='cuda')
    def fused(m, n):
        out = torch.empty(m.shape[0], n.shape[1], device='cuda')
        mod.matmul_bias_relu(m, n, bias, out, m.shape[0], n.shape[1], m.shape[1], 16)
        return out
    faster_than(report, fused, import_notebook('05').matmul_dyn, (m, n), 1.15,
                "on the lecture's problem, tw=16", "notebook 05's matmul_dyn (no epilogue)")


@functools.cache
def tensor_seen_on_a_gpu():
    "A tensor class whose instances say they are on a GPU (is_cuda, device) while their data stay on the CPU."
    import torch
    class OnAGpuToAllAppearances(torch.Tensor):
        is_cuda = property(lambda self: True)
        device = property(lambda self: torch.device('cuda', 0))
    return OnAGpuToAllAppearances


def seen_on_a_gpu(t):
    """t, saying it is on a GPU: where there is none, a wrapper called with it and a CPU tensor shows whether it checks
    the CPU tensor's device too (anything that really needs a GPU fails on it, as a launch would on a CPU tensor)."""
    return t.as_subclass(tensor_seen_on_a_gpu())


# --------------------------------------------------------------------------------------------------
# 05.2: what matvec_k's PTX says about its loads (no GPU needed)
# --------------------------------------------------------------------------------------------------

# The problem whose sizes the reading of the PTX gives matvec_k's scalar arguments.
READ_AS = {'h': 1000, 'k': 300}


def kernel_parameters(src, kernel):
    "The parameter names of the __global__ function `kernel` in src, in order ([] if it is not found)."
    m = re.search(rf'__global__[^{{;(]*?\b{kernel}\s*\(([^)]*)\)', strip_c(src))
    if not m: return []
    return [(re.findall(r'(\w+)\s*(?:\[\s*\])?\s*$', p.strip()) or [''])[0] for p in m.group(1).split(',') if p.strip()]


def source_line_of(report, src, pattern, what):
    "'line N of the `#| exercise ...` cell (`<code>`)' for the first line of src that matches `pattern`, or ''."
    code = strip_c(src).splitlines()
    hit = next((i for i, line in enumerate(code) if re.search(pattern, line)), None)
    if hit is None: return ''
    return f" at {cell_place(report, src, what)(hit + 1)} (`{code[hit].strip()}`)"


def unguarded_loads(listing, parameters, buffer, bound):
    """The loads of `buffer` that no comparison with `bound` decides on: none that involves the thread's index, none
    made on every pass of the loop around them, and no clamping of the index to the bound."""
    from .ptx_dataflow import LANE_INDEX, global_accesses, guards_of, value_origins
    origins = value_origins(listing, parameters)
    def guarded(access):
        if bound in origins[access.address]: return True          # an index clamped to the bound: min(i, k - 1)
        return any(bound in g.origins and (LANE_INDEX in g.origins or g.inside)
                   for g in guards_of(listing, access.line, parameters))
    return [a for a in global_accesses(listing, parameters) if a.kind == 'read' and a.buffer == buffer and not guarded(a)]


def warp_sectors(access):
    "(sectors, fewest) of one warp instruction of `access` (a GlobalAccess whose address moves by access.step bytes a lane)."
    from ..memory_access import ELEMENT_BYTES, fewest_sectors, sectors_touched
    indices = [(lane * access.step + byte) // ELEMENT_BYTES for lane in range(32)
               for byte in range(0, access.width, ELEMENT_BYTES)]
    return sectors_touched(indices), fewest_sectors(indices)


def matvec_loads_read(report, src, listing):
    """Fail if matvec_k's PTX reads v without a bound check on k, or reads m with loads whose lanes are far apart; say
    what it found otherwise. Silent where the parameters are not named m, v, k or an address cannot be followed."""
    from ..memory_access import SECTOR_BYTES, SLACK_SECTORS
    from .ptx_dataflow import global_accesses
    parameters = kernel_parameters(src, 'matvec_k')
    if not {'m', 'v', 'k'} <= set(parameters): return
    if unguarded_loads(listing, parameters, 'v', 'k'):
        at = source_line_of(report, src, r'\bv\s*\[', 'matvec_cuda_src')
        raise NotYet(f"matvec_k reads v without a bound check{at}: "
                     "in its PTX no comparison of the index with k decides whether the load of v runs, so in the last chunk "
                     "the threads past v's end read memory after v (even where their values are never used, the read "
                     "itself is outside the buffer)")
    scalars = {parameters.index(name): value for name, value in READ_AS.items() if name in parameters}
    for access in global_accesses(listing, parameters, scalars):
        if access.buffer != 'm' or not access.step: continue
        sectors, fewest = warp_sectors(access)
        if sectors > fewest + SLACK_SECTORS:
            load = ' '.join(access.text.split())
            raise NotYet(f"matvec_k reads m uncoalesced: in its PTX, `{load}` loads from an address that moves by "
                         f"{access.step} bytes from one lane of a warp to the next (neighbouring lanes read elements "
                         f"{access.step // 4} apart), so one warp's load touches {sectors} sectors of {SECTOR_BYTES} bytes "
                         f"where {fewest} would do")
    report.ok("in the PTX of matvec_k, the load of v is guarded by a comparison with k, and each warp's loads of m read "
              "neighbouring elements (coalesced)")


def refused_by_launcher(exc):
    "Whether an exception came from calling the compiled module (course/cuda_library.py), not from the learner's own checks."
    tb = exc.__traceback__
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename).name == 'cuda_library.py': return True
        tb = tb.tb_next
    return False


@exercise('05.2', 'a matrix-vector product in CUDA C, and its wrapper',
          hints=("One warp per row: lane j reads elements j, j + 32, ... of the row (coalesced) and of the chunk of v in shared memory, whose load is guarded by k (0. past it); each lane keeps a partial sum, and the warp adds them in 5 shuffles (offsets 16, 8, 4, 2, 1). matvec itself raises ValueError (or TypeError) for bad inputs, v's device included, before launching.",
                 "Copy each chunk of v into shared memory (all threads help, then __syncthreads()), loop j = lane; j < chunk; j += 32, and after the last chunk add the lanes' sums with __shfl_down_sync(0xffffffff, acc, d) for d = 16, 8, 4, 2, 1. The wrapper checks device, dtype, dims, contiguity and sizes before launching."), runs_on_gpu=True)
def cuda_matvec(ns, report):
    src, matvec = need(ns, 'matvec_cuda_src', 'matvec')
    if not isinstance(src, str): raise NotYet("matvec_cuda_src must be a string of CUDA C")
    if not re.search(r'extern\s+__shared__', strip_c(src)):
        raise NotYet("the kernel declares no dynamic shared memory (no `extern __shared__` array), so no chunk of v "
                     "is shared by the block's warps")
    mod = compiled(report, src, 'matvec_cuda_src')
    require_machine_code(report, src, 'matvec_k', {
        'shared stores': (1, "the kernel never stores to shared memory, so no chunk of v reaches it"),
        'barriers': (2, "the kernel needs two __syncthreads() per chunk of v: after filling it, and after using it"),
        'multiply-adds': (1, "the kernel does no multiply-add")}, 'matvec_k')
    listing = ptx_listing(src, 'matvec_k')
    if listing is not None:
        shuffles = len(re.findall(r'\bshfl\.sync\b', listing))
        if not shuffles:
            raise NotYet("the kernel never shuffles (the PTX of matvec_k has no shfl.sync): the 32 partial sums of a "
                         "warp's lanes are never added up into one")
        if shuffles < 5 and not inside_a_loop(listing, r'\bshfl\.sync\b'):
            raise NotYet(f"the warp adds up its partial sums in {shuffles} shuffle steps (the PTX of matvec_k has "
                         f"{shuffles} shfl.sync): it takes 5 to bring all 32 lanes' sums into lane 0")
        report.ok("the warp adds up its lanes' sums with shuffles (shfl.sync in the PTX)")
        matvec_loads_read(report, src, listing)
    device = 'cuda' if gpu_here() else 'cpu'
    good_m, good_v = rand(8, 8, device=device), rand(8, device=device)
    bad = {"m on the CPU": (rand(8, 8), good_v),
           "v on the CPU": (good_m if device == 'cuda' else seen_on_a_gpu(good_m), rand(8)),
           "a non-contiguous m": (rand(8, 8, device=device).t(), good_v),
           "a float64 m": (good_m.double(), good_v), "a 2-D v": (good_m, rand(8, 1, device=device)),
           "v of 5 values for m 8x8": (good_m, rand(5, device=device)), "an empty m": (rand(0, 8, device=device), good_v)}
    if device == 'cpu': bad = {k: v for k, v in bad.items() if k in ("m on the CPU", "v on the CPU")}
    for what, (m, v) in bad.items():
        try: matvec(m, v)
        except Exception as e:
            msg = str(e).strip().splitlines()[0] if str(e).strip() else ''
            if refused_by_launcher(e):
                raise NotYet(f"matvec hands {what} to the launcher instead of refusing it itself (which fails: "
                             f"{type(e).__name__}: {msg})") from None
            if not isinstance(e, (ValueError, TypeError)) and isinstance(m, tensor_seen_on_a_gpu()):
                raise NotYet(f"matvec does not refuse {what} (with m on the GPU) itself: it went on past its checks and "
                             f"failed with {type(e).__name__}: {msg}. Its checks leave v's device unchecked") from None
            if not isinstance(e, (ValueError, TypeError)):
                raise NotYet(f"matvec raises {type(e).__name__} for {what}, where the task asks for ValueError (or "
                             "TypeError) with a message, raised by its own checks before the launch") from None
            if msg: continue
            raise NotYet(f"matvec rejects {what}, but with an empty message") from None
        raise NotYet(f"matvec accepts {what}: it returns where it must raise ValueError (or TypeError)")
    report.ok("matvec rejects " + ', '.join(bad) + " itself, with a message")
    if device == 'cpu' or mod is None:
        return report.skip("running it: correctness, the rest of the bad inputs, out-of-bounds accesses, races and speed need a GPU")
    calls = '''
for h, k in ((33, 17), (1, 300), (70, 1)):
    m, v = torch.rand(h, k, device='cuda'), torch.rand(k, device='cuda')
    mod.matvec_launch(m, v, torch.empty(h, device='cuda'), h, k)
'''
    with crash_explained(report, src, 'matvec_cuda_src', calls):
        for seed, (h, k) in enumerate(((1000, 300), (1, 300), (1000, 1), (33, 17), (4096, 4096), (2000, 1500))):
            m, v = seeded(h, k, seed=seed), seeded(k, seed=seed + 100)
            got = run_fenced(f"matvec_launch on m {h}x{k}", lambda m, v, out: mod.matvec_launch(m, v, out, h, k),
                             {'m': m, 'v': v}, (h,))
            compare(got, m @ v, f"matvec_launch on m {h}x{k}", atol=1e-3)
        m, v = seeded(33, 17, seed=7), seeded(17, seed=8)
        with running("matvec on m 33x17"): got = matvec(m, v)
        compare(got, m @ v, "matvec on m 33x17", atol=1e-3)
    report.ok("right on m 1000x300, 1x300, 1000x1, 33x17, 4096x4096 and 2000x1500, nothing read or written outside "
              "the buffers; the wrapper too")
    sanitized_cell(report, src, 'matvec_cuda_src', calls)
    import torch
    m, v = rand(8192, 8192, device='cuda'), rand(8192, device='cuda')
    faster_than(report, matvec, torch.mv, (m, v), 1.5, "m 8192x8192 @ v", "torch.mv (cuBLAS)")
