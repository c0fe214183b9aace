"""Every exercise's check, in course order. Each check runs the learner's definitions (a namespace: the
exercise notebook's, or `solutions/`'s) on awkward shapes and says what is wrong in one sentence.

Python kernels (01-04, 10.1) run in `course.checked_simulator`, which finds out-of-bounds indices, races
and deadlocks and counts each thread's memory traffic. CUDA C (05-07, 10.2) is compiled by nvcc and its
machine code read on any machine; on a GPU it also runs, under compute-sanitizer, and against a speed
target. Numba (08-09) runs in Numba's CUDA simulator where there is no GPU."""
import functools, math, re

from .checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks, traced_run_threads
from .exercise_checks import (NotYet, at_most, compare, compiled, count_in, faster_than, gpu_here, machine_code, need,
                              running, sanitized, source_of, strip_comments)
from .exercises import exercise


def cdiv(a, b): return (a + b - 1) // b


def rand(*shape, device='cpu'):
    import torch
    return torch.rand(*shape, device=device)


def nan_buffer(trace, name, size):
    "An output buffer whose elements are NaN until written, so that an element no thread writes shows."
    from .checked_simulator import Buffer
    return Buffer(name, [math.nan] * size, 'global', trace)


def as_tensor(buffer, *shape):
    import torch
    return torch.tensor(buffer.tolist()).reshape(*shape)


def problem(h, k, w, **extra):
    return f"m {h}x{k} @ n {k}x{w}" + ''.join(f", {a}={v}" for a, v in extra.items())


# ==================================================================================================
# 01: the naive kernel, one Python call per CUDA thread
# ==================================================================================================

@exercise('01.1', 'a transpose kernel, with its bound check')
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


@exercise('01.2', 'reject what a kernel must not be given')
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


# ==================================================================================================
# 02: tiles in simulated shared memory, one Python call per block
# ==================================================================================================

def run_matmul_kernel(runner, kernel, h, k, w, threads, shared_size, rows_per_block=None, **kwargs):
    """Run a simulated matmul kernel on random m, n with `runner` (run_block_kernels for notebook 02's block
    kernels, which add into out; run_threaded_blocks for thread kernels, whose out starts as NaN so an element
    no thread writes shows). Each block covers threads.x columns and rows_per_block rows (default threads.y).
    Returns (result, expected, trace)."""
    m, n = rand(h, k), rand(k, w)
    trace = Trace()
    b = buffers(trace, m=m, n=n)
    out = buffers(trace, out=m.new_zeros(h, w))['out'] if runner is run_block_kernels else nan_buffer(trace, 'out', h * w)
    rows = rows_per_block or threads.y
    shown = {a: v for a, v in kwargs.items() if a != 'seed'}
    with running(f"{kernel.__name__} on {problem(h, k, w, **shown)}"):
        runner(kernel, dim3(cdiv(w, threads.x), cdiv(h, rows)), threads, shared_size,
               b['m'], b['n'], out, h, w, k, trace=trace, **kwargs)
    return as_tensor(out, h, w), m @ n, trace


@exercise('02.1', 'fill the tiles')
def fill_the_tiles(ns, report):
    kernel, = need(ns, 'matmul_tiled_bk')
    for (h, k, w), tw in (((5, 7, 3), 4), ((1, 37, 5), 8), ((6, 37, 1), 8), ((17, 9, 13), 4)):
        got, expected, trace = run_matmul_kernel(run_block_kernels, kernel, h, k, w, dim3(tw, tw), 2 * tw * tw, tw=tw)
        compare(got, expected, problem(h, k, w, tw=tw))
        limit = 2 * tw * tw * cdiv(k, tw)
        most, (block, _) = trace.most('m', 'read', 'n')
        if most > limit:
            raise NotYet(f"on {problem(h, k, w, tw=tw)}, block (x={block[0]}, y={block[1]}) reads {most} values from global "
                         f"memory, {most / (tw * tw):.1f} per thread; with each value of a tile read once, {limit} "
                         f"({limit // (tw * tw)} per thread) are enough: read the dot products from ms and ns")
    report.ok("right on 5x7 @ 7x3 (tw=4), 1x37 @ 37x5 and 6x37 @ 37x1 (tw=8), 17x9 @ 9x13 (tw=4)")
    report.ok("every block reads each element of its tiles from global memory once: 2*tw*tw per phase")


@exercise('02.2', 'rectangular tiles')
def rectangular_block_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_bk')
    for (h, k, w), (th, tw, tk) in (((5, 7, 3), (4, 8, 4)), ((9, 11, 10), (8, 2, 3)), ((1, 13, 6), (2, 4, 8)),
                                    ((7, 5, 1), (4, 2, 6))):
        got, expected, trace = run_matmul_kernel(run_block_kernels, kernel, h, k, w, dim3(tw, th), th * tk + tk * tw, tk=tk)
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        compare(got, expected, what)
        limit = (th * tk + tk * tw) * cdiv(k, tk)
        most, (block, _) = trace.most('m', 'read', 'n')
        if most > limit:
            raise NotYet(f"on {what}, block (x={block[0]}, y={block[1]}) reads {most} values from global memory; reading "
                         f"each tile once needs {limit} (th*tk + tk*tw per phase)")
    report.ok("right with th x tw blocks of 4x8, 8x2, 2x4 and 4x2 and k-tiles of 4, 3, 8 and 6, on awkward shapes")
    report.ok("every block reads each element of its tiles once")


# ==================================================================================================
# 03: per-thread functions and run_threads
# ==================================================================================================

def with_traced_run_threads(ns, trace):
    "Swap the namespace's run_threads for one that counts per thread; returns a function that swaps it back."
    old = ns.get('run_threads')
    ns['run_threads'] = traced_run_threads(trace)
    return lambda: ns.__setitem__('run_threads', old) if old is not None else ns.pop('run_threads', None)


@exercise('03.1', 'a tiled matrix-vector product')
def tiled_matvec(ns, report):
    kernel, = need(ns, 'matvec_tiled_bk')
    tw = 4
    for h, k in ((5, 7), (1, 9), (9, 1), (13, 20)):
        m, v = rand(h, k), rand(k)
        trace = Trace()
        b = buffers(trace, m=m, v=v, out=m.new_zeros(h))
        restore = with_traced_run_threads(ns, trace)
        try:
            with running(f"matvec_tiled_bk on m {h}x{k}"):
                run_block_kernels(kernel, dim3(cdiv(h, tw), 1), dim3(tw, 1), tw, b['m'], b['v'], b['out'], h, k, trace=trace)
        finally: restore()
        compare(as_tensor(b['out'], h), m @ v, f"m {h}x{k} @ v {k}")
        at_most(trace, 'v', 'read', cdiv(k, tw),
                f"m {h}x{k} @ v: with v's chunks in shared memory, each thread reads one value of v per chunk, so it")
        if max((c[('shared', 'read')] for c in trace.counts.values()), default=0) == 0:
            raise NotYet("no thread reads shared memory: put each chunk of v in `shared` and read v from there")
    report.ok("right on 5x7, 1x9, 9x1 and 13x20 with 4 threads per block")
    report.ok("v is read from global memory once per chunk and thread; the dot products read it from shared memory")


@exercise('03.2', 'a transpose through a shared tile')
def transpose_through_shared(ns, report):
    kernel, = need(ns, 'transpose_tiled_bk')
    tw = 4
    for h, w in ((5, 7), (1, 9), (9, 1), (6, 8)):
        m = rand(h, w)
        trace = Trace()
        b = buffers(trace, m=m)
        out = nan_buffer(trace, 'out', h * w)
        restore = with_traced_run_threads(ns, trace)
        try:
            with running(f"transpose_tiled_bk on a {h}x{w} m"):
                run_block_kernels(kernel, dim3(cdiv(w, tw), cdiv(h, tw)), dim3(tw, tw), tw * tw, b['m'], out, h, w, trace=trace)
        finally: restore()
        compare(as_tensor(out, w, h), m.t(), f"transposing a {h}x{w} m")
        at_most(trace, 'global', 'read', 1, "a transpose")
        at_most(trace, 'global', 'write', 1, "a transpose")
        uncoalesced('write', 'out', trace)
        uncoalesced('read', 'm', trace)
    report.ok("right on 5x7, 1x9, 9x1 and 6x8 with 4x4 blocks")
    report.ok("neighbouring threads read neighbouring elements of m and write neighbouring elements of out")


def uncoalesced(kind, name, trace):
    "Fail if two threads next to each other in x (same block, same y) access elements of `name` that are not next to each other."
    where = {}
    for (block, thread), accesses in trace.addresses.items():
        hits = [i for space, k, n, i in accesses if space == 'global' and k == kind and n == name]
        if thread is not None and hits: where[(block, thread)] = hits[0]
    for (block, (x, y)), i in sorted(where.items(), key=lambda kv: (kv[0][0], kv[0][1][1], kv[0][1][0])):
        j = where.get((block, (x + 1, y)))
        if j is not None and j != i + 1:
            verb = 'write' if kind == 'write' else 'read'
            raise NotYet(f"threads (x={x}, y={y}) and (x={x + 1}, y={y}) of block (x={block[0]}, y={block[1]}) {verb} "
                         f"{name}[{i}] and {name}[{j}]: neighbouring threads should {verb} neighbouring elements, so that "
                         "a warp's accesses coalesce into few memory transactions; go through the shared tile, reading it "
                         "transposed")


# ==================================================================================================
# 04: one Python thread per CUDA thread, and barriers
# ==================================================================================================

@exercise('04.1', 'the second barrier')
def second_barrier(ns, report):
    kernel, = need(ns, 'matmul_tiled_k')
    tw = 4
    for seed, (h, k, w) in enumerate(((5, 7, 3), (9, 13, 6), (1, 9, 5), (6, 9, 1))):
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, dim3(tw, tw), 2 * tw * tw, seed=seed, tw=tw)
        compare(got, expected, problem(h, k, w, tw=tw))
        at_most(trace, 'global', 'read', 2 * cdiv(k, tw), f"a tiled kernel on {problem(h, k, w, tw=tw)}")
        at_most(trace, 'shared', 'read', 2 * tw * cdiv(k, tw), f"a tiled kernel on {problem(h, k, w, tw=tw)}")
    report.ok("no shared-memory race and no deadlock, with threads started in shuffled orders and switching at random")
    report.ok("right on 5x7 @ 7x3, 9x13 @ 13x6, 1x9 @ 9x5 and 6x9 @ 9x1 with 4x4 blocks")
    report.ok("each thread reads 2 values per phase from global memory and 2*tw from shared memory")


@exercise('04.2', 'rectangular tiles with threads and barriers')
def rectangular_thread_tiles(ns, report):
    kernel, = need(ns, 'matmul_rect_k')
    for seed, ((h, k, w), (th, tw, tk)) in enumerate((((5, 7, 3), (4, 2, 6)), ((9, 11, 10), (2, 4, 3)),
                                                       ((1, 13, 6), (3, 3, 5)), ((7, 5, 1), (4, 2, 6)))):
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, dim3(tw, th), th * tk + tk * tw, seed=seed, tk=tk)
        what = problem(h, k, w, th=th, tw=tw, tk=tk)
        compare(got, expected, what)
        limit = (cdiv(tk, tw) + cdiv(tk, th)) * cdiv(k, tk)
        at_most(trace, 'global', 'read', limit, f"sharing the loads of each tile among the block's threads on {what}")
    report.ok("no race and no deadlock, with shuffled thread orders")
    report.ok("right with th x tw blocks of 4x2, 2x4 and 3x3 and k-tiles of 6, 3 and 5, on awkward shapes")
    report.ok("the block's threads share the loads of each tile")


# ==================================================================================================
# 05-07 and 10.2: CUDA C
# ==================================================================================================

# The shapes CUDA C kernels are checked on: the lecture's problem, then awkward shapes.
GPU_SHAPES = ((5120, 256, 5120), (1000, 300, 700), (1, 300, 700), (1000, 300, 1), (33, 17, 31))


def matmul_via(launcher, *extra):
    "A matmul(m, n) that checks its inputs and calls a learner's launcher(m, n, out, h, w, k, *extra)."
    def matmul(m, n):
        import torch
        from .input_checks import check_matmul_inputs
        h, k, w = check_matmul_inputs(m, n)
        out = torch.full((h, w), math.nan, device=m.device)
        launcher(m, n, out, h, w, k, *extra)
        return out
    return matmul


def check_matmul_on_gpu(fn, what, shapes=GPU_SHAPES):
    import torch
    for h, k, w in shapes:
        m, n = rand(h, k, device='cuda'), rand(k, w, device='cuda')
        with running(f"{what} on {problem(h, k, w)}"):
            got = fn(m, n)
            torch.cuda.synchronize()
        compare(got, m @ n, f"{what} on {problem(h, k, w)}", atol=1e-3, rtol=1e-4)


def require_machine_code(report, src, kernel, needs, what):
    """Read the kernel's machine code (nvcc, no GPU needed) and fail if it lacks what the task asks for:
    needs = {'barriers': (at least, the sentence if not), ...}; a value of (0, sentence) for 'local memory' means none."""
    from .cuda_toolkit import nvcc_available
    if not nvcc_available(): return None
    kind, listing = machine_code(src, kernel)
    if not listing: raise NotYet(f"nvcc made no kernel whose name contains {kernel!r}: name your kernel {kernel}")
    for thing, (least, sentence) in needs.items():
        n = count_in(kind, listing, thing)
        if (least == 0 and n) or (least and n < least): raise NotYet(f"{sentence} (the {kind} of {what} has {n} {thing})")
    report.ok(f"the machine code ({kind}) of {what} has " + ', '.join(t for t, (l, _) in needs.items() if l) +
              ''.join(f", no {t}" for t, (l, _) in needs.items() if l == 0))
    return kind, listing


TILED_NEEDS = {'shared stores': (1, "the kernel never stores to shared memory: copy each tile into it"),
               'barriers': (2, "a tiled kernel needs two __syncthreads() per phase: after filling the tiles, and after using them"),
               'multiply-adds': (1, "the kernel does no multiply-add: add up the products of the tiles")}

SMALL_MATMUL_CALLS = '''
for h, k, w in ((33, 17, 31), (1, 20, 9), (9, 20, 1)):
    m, n = torch.rand(h, k, device='cuda'), torch.rand(k, w, device='cuda')
    out = torch.empty(h, w, device='cuda')
    mod.{fn}(m, n, out, h, w, k{extra})
'''


@exercise('05.1', 'the Python kernel in CUDA C, with dynamic shared memory')
def translate_to_cuda(ns, report):
    import re
    src, = need(ns, 'dyn_cuda_src')
    if not re.search(r'extern\s+__shared__', src):
        raise NotYet("the kernel declares no dynamic shared memory: `extern __shared__ float ms[];`, sized by the launch")
    mod = compiled(report, src, 'dyn_cuda_src')
    require_machine_code(report, src, 'my_matmul_dyn_k', TILED_NEEDS, 'my_matmul_dyn_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    from .notebook_import import import_notebook
    for tw in (16, 8, 32, 13):
        check_matmul_on_gpu(matmul_via(mod.my_matmul_dyn, tw), f"tw={tw}",
                            GPU_SHAPES if tw == 16 else GPU_SHAPES[1:])
    report.ok("right on the lecture's problem and awkward shapes, with tw = 16, 8, 32 and 13")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='my_matmul_dyn', extra=', 8'))
    from .correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    nb05 = import_notebook('05')
    faster_than(report, matmul_via(mod.my_matmul_dyn, 16), nb05.matmul_dyn, (m, n), 1.15,
                "on the lecture's problem, tw=16", "notebook 05's matmul_dyn")


@exercise('05.2', 'a matrix-vector product in CUDA C, and its wrapper')
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


@exercise('06.1', 'rectangular tiles in static shared memory')
def static_rect_tiles(ns, report):
    import re
    src, = need(ns, 'rect_cuda_src')
    if re.search(r'extern\s+__shared__', src):
        raise NotYet("use static shared arrays sized by the constants (`__shared__ float ms[TH][TK];`), not `extern __shared__`")
    mod = compiled(report, src, 'rect_cuda_src')
    require_machine_code(report, src, 'matmul_rect_k', TILED_NEEDS, 'matmul_rect_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    check_matmul_on_gpu(matmul_via(mod.matmul_rect), "matmul_rect")
    report.ok("right on the lecture's problem and awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_rect', extra=''))
    from .correctness import lecture_problem
    from .notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_rect), import_notebook('06').matmul_static, (m, n), 1.1,
                "on the lecture's problem", "notebook 06's 16x16 matmul_static")


@exercise('06.2', 'a transpose through a padded shared tile')
def cuda_transpose(ns, report):
    import torch
    src, = need(ns, 'transpose_cuda_src')
    mod = compiled(report, src, 'transpose_cuda_src')
    require_machine_code(report, src, 'transpose_k', {
        'shared stores': (1, "the kernel never stores to shared memory: stage each tile in a __shared__ array"),
        'shared loads': (1, "the kernel never reads shared memory: write out from the tile"),
        'barriers': (1, "a __syncthreads() is missing between filling the tile and reading it")}, 'transpose_k')
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses, races and speed need a GPU")
    def transpose(m):
        out = torch.full((m.shape[1], m.shape[0]), math.nan, device=m.device)
        mod.transpose(m, out, m.shape[0], m.shape[1])
        return out
    for h, w in ((1000, 700), (1, 700), (700, 1), (33, 17), (4096, 4096)):
        m = rand(h, w, device='cuda')
        with running(f"transpose on a {h}x{w} m"): got = transpose(m)
        compare(got, m.t(), f"transposing a {h}x{w} m")
    report.ok("right on 1000x700, 1x700, 700x1, 33x17 and 4096x4096")
    sanitized(report, src, '''
for h, w in ((33, 17), (1, 70), (70, 1)):
    mod.transpose(torch.rand(h, w, device='cuda'), torch.empty(w, h, device='cuda'), h, w)
''')
    m = rand(8192, 8192, device='cuda')
    faster_than(report, transpose, lambda m: m.t().contiguous(), (m,), 1.25, "an 8192x8192 transpose",
                "torch's m.t().contiguous()")


@exercise('07.1', 'more tile widths for the template')
def more_tile_widths(ns, report):
    src, = need(ns, 'tmpl_cuda_src')
    widths = (4, 8, 16, 24, 32)
    mod = compiled(report, src, 'tmpl_cuda_src')
    from .cuda_toolkit import nvcc_available
    if nvcc_available():
        from .disassembly import cuda_disassembly
        kind, text = cuda_disassembly(src)
        made = {int(t) for t in re.findall(r'matmul_tmpl_kILi(\d+)E', text)}
        missing = [tw for tw in widths if tw not in made]
        if missing:
            raise NotYet(f"no kernel is compiled for tw={missing[0]}: the launcher's switch needs a `case {missing[0]}:` "
                         f"that launches matmul_tmpl_k<{missing[0]}> (compiled now: {sorted(made) or 'none'})")
        report.ok(f"the {kind} holds matmul_tmpl_k<{'>, <'.join(map(str, widths))}>")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness and out-of-bounds accesses need a GPU")
    for tw in widths:
        check_matmul_on_gpu(matmul_via(mod.matmul_tmpl, tw), f"tw={tw}", GPU_SHAPES[1:])
    report.ok("right with tw = 4, 8, 16, 24 and 32 on awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_tmpl', extra=', 24') +
              SMALL_MATMUL_CALLS.format(fn='matmul_tmpl', extra=', 4'))


RECT_TILES = ((8, 32), (16, 16), (32, 8), (16, 32))


@exercise('07.2', 'a template on two tile sizes')
def two_parameter_template(ns, report):
    src, = need(ns, 'rect_tmpl_cuda_src')
    mod = compiled(report, src, 'rect_tmpl_cuda_src')
    from .cuda_toolkit import nvcc_available
    if nvcc_available():
        from .disassembly import cuda_disassembly, kernel_listing
        kind, text = cuda_disassembly(src)
        for th, tw in RECT_TILES:
            listing = kernel_listing((kind, text), f'matmul_rect_tmpl_kILi{th}ELi{tw}E')
            if not listing:
                raise NotYet(f"no kernel is compiled for th={th}, tw={tw}: launch matmul_rect_tmpl_k<{th}, {tw}> "
                             "from the launcher's dispatch")
            fmas = count_in(kind, listing, 'multiply-adds')
            if fmas < tw:
                raise NotYet(f"matmul_rect_tmpl_k<{th}, {tw}> has {fmas} multiply-adds in its {kind}: with TK a "
                             f"compile-time constant, nvcc unrolls the dot product into {tw} of them; loop to the constant")
        report.ok(f"the {kind} holds matmul_rect_tmpl_k for th x tw = " + ', '.join(f'{a}x{b}' for a, b in RECT_TILES) +
                  ", each with its dot product unrolled")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and speed need a GPU")
    for th, tw in RECT_TILES:
        check_matmul_on_gpu(matmul_via(mod.matmul_rect_tmpl, th, tw), f"th={th}, tw={tw}", GPU_SHAPES[1:])
    report.ok("right for every th x tw on awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_rect_tmpl', extra=', 8, 32'))
    from .correctness import lecture_problem
    from .notebook_import import import_notebook
    from .timing import cuda_time_ms
    m, n, _ = lecture_problem('cuda')
    times = {t: cuda_time_ms(matmul_via(mod.matmul_rect_tmpl, *t), m, n) for t in RECT_TILES}
    best = min(times, key=times.get)
    nb07 = import_notebook('07')
    faster_than(report, matmul_via(mod.matmul_rect_tmpl, *best), lambda a, b: nb07.matmul_tmpl(a, b, 16), (m, n), 1.1,
                f"the fastest tile, {best[0]}x{best[1]}, on the lecture's problem", "notebook 07's template with tw=16")


# ==================================================================================================
# 08-09: Numba
# ==================================================================================================

def numba_tools():
    "Notebook 08's helpers (importing it switches Numba to its simulator where there is no GPU)."
    from .notebook_import import import_notebook
    return import_notebook('08')


def numba_matmul(nb08, kernel, tw, dynamic=False):
    "matmul(m, n) that launches a Numba kernel(m, n, out[, tw]) on tw x tw blocks."
    import torch
    from .input_checks import check_matmul_inputs
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


@exercise('08.1', 'a Numba kernel with a compile-time tile width')
def numba_static_tile(ns, report):
    factory, = need(ns, 'static_tile_kernel')
    nb08 = numba_tools()
    with running("static_tile_kernel(4)"): first, again = factory(4), factory(4)
    if first is not again:
        raise NotYet("static_tile_kernel(4) makes a new kernel on every call, and Numba compiles each one anew: "
                     "cache the factory (functools.cache) so each tile width is compiled once")
    report.ok("static_tile_kernel compiles each tile width once")
    src = strip_comments(source_of(factory))
    if 'shared.array(0' in src.replace(' ', ''):
        raise NotYet("the shared arrays are dynamic (size 0): give them the compile-time shape (tw, tw)")
    check_numba_matmul(nb08, lambda tw: numba_matmul(nb08, factory(tw), tw), report, "static_tile_kernel")
    if nb08.SIMULATOR: return report.skip("speed (needs a GPU)")
    from .correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    faster_than(report, numba_matmul(nb08, factory(16), 16), nb08.matmul_numba_static, (m, n), 1.1,
                "on the lecture's problem, tw=16", "notebook 08's matmul_numba_static")


@exercise('08.2', 'a matrix-vector product in Numba')
def numba_matvec(ns, report):
    import torch
    kernel, CHUNK = need(ns, 'matvec_numba_k', 'CHUNK')
    nb08 = numba_tools()
    shapes = ((5, 7), (1, 40), (40, 1), (70, 45)) if nb08.SIMULATOR else ((1000, 300), (1, 300), (1000, 1), (4096, 4096))
    for h, k in shapes:
        m, v = rand(h, k, device=nb08.DEVICE), rand(k, device=nb08.DEVICE)
        out = torch.full((h,), math.nan, device=nb08.DEVICE)
        with running(f"matvec_numba_k on m {h}x{k}"):
            kernel[cdiv(h, CHUNK), CHUNK, nb08.numba_stream()](*(nb08.as_kernel_array(t) for t in (m, v, out)))
        compare(out, m @ v, f"m {h}x{k} @ v" + (" in Numba's simulator" if nb08.SIMULATOR else ''), atol=1e-3)
    report.ok(f"right on m {', '.join(f'{h}x{k}' for h, k in shapes)}" + (" in Numba's simulator" if nb08.SIMULATOR else ' on the GPU'))
    src = strip_comments(source_of(kernel))
    if 'shared.array' not in src: raise NotYet("keep each chunk of v in a cuda.shared.array of CHUNK values")
    if src.count('syncthreads') < 2:
        raise NotYet("two cuda.syncthreads() per chunk are needed: after filling the chunk, and after using it")
    report.ok("v goes through shared memory, with a barrier after filling each chunk and after using it")


@exercise('09.1', 'a Numba kernel without Python\'s index fix-ups')
def numba_lean_loop(ns, report):
    kernel, = need(ns, 'lean_dynamic_kernel')
    nb08 = numba_tools()
    check_numba_matmul(nb08, lambda tw: numba_matmul(nb08, kernel, tw, dynamic=True), report, "lean_dynamic_kernel")
    if nb08.SIMULATOR:
        import numba
        src = strip_comments(source_of(kernel))
        unsigned = [name for name in set(re.findall(r'[A-Za-z_]\w*', src)) if ns.get(name) in (numba.uint32, numba.uint64)]
        if not (re.search(r'uint(32|64)', src) or unsigned):
            raise NotYet("the indices are still signed: convert the thread and block indices, the sizes and tw to "
                         "numba.uint32 (or uint64), so no negative-index fix-up is needed")
        if 'while' not in src:
            raise NotYet("the inner loop is still a `for i in range(...)`, which Numba compiles with extra checks: write it as a while loop")
        report.ok("its source uses unsigned indices and a while loop")
        return report.skip("the PTX of the inner loop and the speed (need a GPU)")
    import numba
    from course.disassembly import loop_cost
    from .notebook_import import import_notebook
    nb09 = import_notebook('09')
    lean = dict(index=numba.uint32, while_loop=True)
    best = nb09.dynamic_variant(**lean)
    best(rand(8, 8, device='cuda'), rand(8, 8, device='cuda'))                  # compiles it
    cost, target = loop_cost(nb09.ptx_of(kernel)), loop_cost(nb09.ptx_of(nb09.dynamic_numba_kernel(**lean)))
    if cost is not None and cost > 1.25 * target:
        raise NotYet(f"the inner loop costs {cost:.1f} PTX instructions per multiply-add; notebook 09's uint32 while-loop "
                     f"kernel costs {target:.1f}: unsigned 32-bit indices and a while loop remove the fix-ups")
    report.ok(f"the inner loop costs {cost:.1f} PTX instructions per multiply-add (notebook 09's lean kernel: {target:.1f})"
              if cost else "the inner loop is unrolled")
    from .correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    faster_than(report, numba_matmul(nb08, kernel, 16, dynamic=True), best, (m, n), 1.1, "on the lecture's problem, tw=16",
                "notebook 09's uint32 while-loop kernel")


@exercise('09.2', 'a timer you can trust')
def trustworthy_timer(ns, report):
    import time
    time_ms, = need(ns, 'time_ms')
    calls = []
    def slow_first_call():
        calls.append(1)
        time.sleep(0.080 if len(calls) == 1 else 0.040 if len(calls) == 6 else 0.004)
    with running("time_ms(fn)"): t = time_ms(slow_first_call)
    if not isinstance(t, (int, float)): raise NotYet(f"time_ms returned {type(t).__name__}; return milliseconds as a float")
    if len(calls) < 5:
        raise NotYet(f"time_ms called the function {len(calls)} time(s): one call is noise; time several after a warm-up")
    if t > 10:
        raise NotYet(f"time_ms says {t:.1f} ms for a function that takes 4 ms a call, after an 80 ms first call (as a "
                     "compile would) and one 40 ms hiccup: leave the first calls out (a warm-up) and take the median, not the mean")
    if t < 3:
        raise NotYet(f"time_ms says {t:.2f} ms for a function that takes 4 ms a call: is it divided by the right number of calls?")
    report.ok(f"{t:.1f} ms for a 4 ms function with a slow first call and a hiccup: warm-up and median are right")
    if not gpu_here(): return report.skip("timing GPU work (needs a GPU)")
    import torch
    from .timing import cuda_time_ms
    m = rand(4096, 4096, device='cuda')
    true = cuda_time_ms(torch.mm, m, m)
    with running("time_ms(torch.mm, m, m)"): t = time_ms(torch.mm, m, m)
    if t < 0.5 * true:
        raise NotYet(f"time_ms says {t:.3f} ms for a 4096x4096 matmul that takes {true:.3f} ms on the GPU: a launch "
                     "returns before the GPU is done, so synchronize (torch.cuda.synchronize()) before reading the "
                     "clock, or time with CUDA events")
    if t > 2 * true:
        raise NotYet(f"time_ms says {t:.3f} ms for a 4096x4096 matmul that takes {true:.3f} ms on the GPU: too slow to be one call")
    report.ok(f"{t:.3f} ms for a 4096x4096 matmul on the GPU; CUDA events say {true:.3f} ms")


# ==================================================================================================
# 10: register tiling
# ==================================================================================================

@exercise('10.1', 'a register tile, in the thread simulator')
def register_tile_1d(ns, report):
    kernel, = need(ns, 'regtile_1d_k')
    TM, BK = 4, 4
    threads = dim3(4, 2)                  # BN = 4 columns, BM = 2 * TM = 8 rows of outputs per block
    BM, BN = threads.y * TM, threads.x
    for seed, (h, k, w) in enumerate(((9, 10, 7), (1, 9, 5), (8, 13, 1), (17, 8, 9))):
        what = problem(h, k, w, TM=TM, BK=BK)
        got, expected, trace = run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, threads, BM * BK + BK * BN,
                                                 rows_per_block=BM, seed=seed, TM=TM, BK=BK)
        compare(got, expected, what)
        fmas = cdiv(k, BK) * BK * TM
        most, (block, thread) = trace.most('shared', 'read')
        limit = cdiv(k, BK) * BK * (TM + 1)
        if most > limit:
            raise NotYet(f"on {what}, thread (x={thread[0]}, y={thread[1]}) of block (x={block[0]}, y={block[1]}) reads "
                         f"{most} shared values for its {fmas} multiply-adds ({most / fmas:.2f} per multiply-add); keep "
                         f"the value of Bs it multiplies with in a register and one read serves TM of them: "
                         f"{limit} reads ({(TM + 1) / TM:.2f} per multiply-add)")
    report.ok("no race, no deadlock; right on 9x10 @ 10x7, 1x9 @ 9x5, 8x13 @ 13x1 and 17x8 @ 8x9")
    report.ok(f"each thread reads at most {(TM + 1) / TM:.2f} shared values per multiply-add (TM={TM})")


@exercise('10.2', 'a 2-D register tile in CUDA C')
def register_tile_2d(ns, report):
    src, = need(ns, 'regtile_cuda_src')
    mod = compiled(report, src, 'regtile_cuda_src')
    code = require_machine_code(report, src, 'regtile_2d', {
        'multiply-adds': (8 * 8 * 8, "the inner loop does too few multiply-adds: each thread adds a TM x TN outer "
                                     "product per k, 8*8*8 = 512 multiply-adds per tile of k, unrolled"),
        'local memory': (0, "the register tile spilled to local memory: index acc, a and b only with compile-time "
                            "constants (unrolled loops), so they stay in registers")}, 'regtile_2d')
    if code and code[0] == 'SASS':
        wide = count_in(*code, '128-bit shared loads')
        if wide < 2 * 8 * 2:   # per k: TM/4 loads of A and TN/4 of B, 128 bits each, for BK = 8
            raise NotYet(f"the SASS of regtile_2d has {wide} 128-bit shared loads (LDS.128); with A's tile stored "
                         "transposed, a thread's TM values of A are contiguous too and nvcc reads them 4 at a time: "
                         "32 per tile of k (16 for A, 16 for B)")
        report.ok(f"{wide} 128-bit shared loads (LDS.128): A's values are read 4 at a time, like B's")
    elif code:
        report.skip("whether A's values are read 4 at a time (LDS.128: needs cuobjdump's SASS; PTX does not show it)")
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and speed need a GPU")
    check_matmul_on_gpu(matmul_via(mod.matmul_regtile), "matmul_regtile",
                        GPU_SHAPES + ((129, 68, 260), (257, 1020, 131)))
    report.ok("right on the lecture's problem and awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_regtile', extra=''))
    from .correctness import lecture_problem
    from .notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_regtile), import_notebook('10').step2, (m, n), 1.15,
                "on the lecture's problem", "notebook 10's step 2")
