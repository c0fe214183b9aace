"""The exercises of notebook 08: Numba.

A Numba kernel is checked the same way on every machine first: in Numba's CUDA simulator, which runs its
Python function with one Python thread per CUDA thread (on a GPU machine too: the simulator's launcher
runs the kernel's `py_func` there instead of compiling it). Each global array it gets is traced, so a
check sees which thread read or wrote which element: an access outside an array names the thread, and
the traffic and coalescing rules of the Python-kernel exercises apply unchanged. Where the barriers stand
is read from the kernel's source. On a GPU the kernel is then compiled by Numba and run for real:
correctness on large and awkward shapes, and speed."""
import ast, math

from .gpu_kernels import GPU_SHAPES, SIMULATOR_SHAPES, check_matmul_on_gpu, numba_tools
from .parts import NotYet, at_most, barriers_in_place, compare, faster_than, gpu_here, need, running
from .numba_simulation import kernel_place, python_function, simulate
from .registry import exercise
from .simulated import cdiv, rand, uncoalesced


def shared_arrays_static(kernel, what, size):
    "Fail if a cuda.shared.array of the kernel has size 0 (dynamic): the launch gives it no memory."
    tree, place = kernel_place(kernel)
    if tree is None: return
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == 'array' and \
                isinstance(node.func.value, ast.Attribute) and node.func.value.attr == 'shared':
            shape = node.args[0] if node.args else next((k.value for k in node.keywords if k.arg == 'shape'), None)
            if isinstance(shape, ast.Constant) and shape.value == 0:
                raise NotYet(f"the shared array of {what} at {place(node)} is dynamic (size 0), and the launch gives it no "
                             f"memory, although {size} is a constant of the kernel")
            if shape is not None and any(isinstance(n, ast.BinOp) for n in ast.walk(shape)):
                raise NotYet(f"the shape of the shared array of {what} at {place(node)} is computed inside the kernel, "
                             "which Numba rejects on a GPU (its simulator does not): a shared array's shape must be "
                             "constants or names of constants")


# --------------------------------------------------------------------------------------------------
# 08.1: B given transposed
# --------------------------------------------------------------------------------------------------

def nt_launcher(nb08, kernel, tw):
    "matmul(m, nt) = m @ nt.T with the learner's kernel on the GPU, on tw x tw blocks."
    import torch
    def matmul(m, nt):
        h, w = m.shape[0], nt.shape[0]
        out = torch.full((h, w), math.nan, device=m.device)
        kernel[(cdiv(w, tw), cdiv(h, tw)), (tw, tw), nb08.numba_stream()](*(nb08.as_kernel_array(t) for t in (m, nt, out)))
        return out
    return matmul


@exercise('08.1', 'B given transposed, with a compile-time tile width',
          hints=("Keep the lesson's tiled kernel, and change only how the tile of nt is loaded: neighbouring threads in x "
                 "(tc, tc + 1) should read neighbouring elements of nt, which lie along its rows (along k). Shared arrays "
                 "get shapes of constants (tw + 1 computed in the factory, outside the kernel), and @functools.cache on "
                 "the factory compiles each tile width once.",
                 "Let thread (tr, tc) load nt[blockIdx.x*tw + tr, idx + tc] into ns[tc, tr] (the tile transposed as it is "
                 "stored), so the products stay ms[tr, i] * ns[i, tc]; make ns tw x (tw + 1), with tw + 1 computed outside the kernel, to spread the stores over the "
                 "banks, and decorate the factory with @functools.cache."), runs_on_gpu=True)
def transposed_b(ns, report):
    import torch
    factory, = need(ns, 'nt_tile_kernel')
    with running("nt_tile_kernel(4)"): kernel = factory(4)
    what = "the kernel of nt_tile_kernel(4)"
    python_function(kernel, "nt_tile_kernel(4)")
    shared_arrays_static(kernel, what, "tw")
    barriers_in_place(report, kernel, what)
    for (h, k, w), tw in SIMULATOR_SHAPES:
        m, nt = rand(h, k), rand(w, k)
        out = torch.full((h, w), math.nan)
        shape = f"m {h}x{k} @ nt.T (nt {w}x{k}), tw={tw}"
        with running(f"nt_tile_kernel({tw}) on {shape} in Numba's simulator"):
            trace = simulate(factory(tw), f"nt_tile_kernel({tw})", (cdiv(w, tw), cdiv(h, tw)), (tw, tw), dict(m=m, nt=nt, out=out))
        compare(out, m @ nt.T, f"{shape}, in Numba's simulator")
        at_most(trace, 'global', 'read', 2 * cdiv(k, tw), f"a tiled kernel (one value of m and one of nt per phase) on {shape}")
        for name in ('nt', 'm'): uncoalesced('read', name, trace)
    report.ok("right in Numba's simulator on 5x7 @ 7x3, 1x9 @ 9x5, 6x10 @ 10x1 (tw=4) and 9x13 @ 13x11 (tw=8), with B given as nt")
    report.ok("each thread reads one value of m and one of nt per phase, and neighbouring threads read neighbouring elements of both")
    with running("nt_tile_kernel(4), twice"): again = factory(4)
    if again is not kernel:
        raise NotYet("nt_tile_kernel(4) makes a new kernel on every call (two calls gave two different kernels), and "
                     "Numba compiles each one anew: each tile width is compiled again on every call")
    report.ok("nt_tile_kernel makes one kernel per tile width (cached)")
    if not gpu_here():
        return report.skip("compiling it for a GPU and running it there: correctness on large shapes, and its speed "
                           "against notebook 08's matmul_numba_static (needs a GPU)")
    nb08 = numba_tools()
    for tw in (16, 32):
        fn = nt_launcher(nb08, factory(tw), tw)
        check_matmul_on_gpu(lambda m, n: fn(m, n.t().contiguous()), f"nt_tile_kernel({tw})",
                            GPU_SHAPES if tw == 16 else GPU_SHAPES[1:])
    report.ok("right on the GPU on the lecture's problem and awkward shapes, with tw = 16 and 32")
    from ..correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    nt = n.t().contiguous()
    faster_than(report, nt_launcher(nb08, factory(16), 16), lambda m, nt: nb08.matmul_numba_static(m, n), (m, nt), 1.3,
                "on the lecture's problem, tw=16", "notebook 08's matmul_numba_static on n itself")


# --------------------------------------------------------------------------------------------------
# 08.2: a matrix-vector product
# --------------------------------------------------------------------------------------------------

@exercise('08.2', 'a matrix-vector product in Numba',
          hints=("One thread per row: each block copies a chunk of v into a cuda.shared.array of shape CHUNK (a constant, not computed in the kernel), then every thread adds its row's products with it.",
                 'Per chunk: vs[t] = v[c0 + t] (0 past k), cuda.syncthreads(), the products, then a second cuda.syncthreads() before the next chunk overwrites vs.'), runs_on_gpu=True)
def numba_matvec(ns, report):
    import torch
    kernel, CHUNK = need(ns, 'matvec_numba_k', 'CHUNK')
    python_function(kernel, 'matvec_numba_k')
    shared_arrays_static(kernel, 'matvec_numba_k', 'CHUNK')
    barriers_in_place(report, kernel, 'matvec_numba_k')
    shapes = ((5, 7), (1, 40), (40, 1), (70, 45))
    for h, k in shapes:
        m, v, out = rand(h, k), rand(k), torch.full((h,), math.nan)
        with running(f"matvec_numba_k on m {h}x{k} in Numba's simulator"):
            trace = simulate(kernel, 'matvec_numba_k', cdiv(h, CHUNK), CHUNK, dict(m=m, v=v, out=out))
        compare(out, m @ v, f"m {h}x{k} @ v in Numba's simulator", atol=1e-3)
        at_most(trace, 'v', 'read', cdiv(k, CHUNK), f"copying each chunk of v into shared memory once per block (each "
                f"thread copies one value of each chunk) on m {h}x{k}")
    report.ok(f"right in Numba's simulator on m {', '.join(f'{h}x{k}' for h, k in shapes)}")
    report.ok("each thread reads one value of v per chunk from global memory: the block shares the chunk through shared memory")
    if not gpu_here(): return report.skip("compiling it for a GPU and running it there, on large shapes (needs a GPU)")
    nb08 = numba_tools()
    gpu_shapes = ((1000, 300), (1, 300), (1000, 1), (4096, 4096))
    for h, k in gpu_shapes:
        m, v = rand(h, k, device='cuda'), rand(k, device='cuda')
        out = torch.full((h,), math.nan, device='cuda')
        with running(f"matvec_numba_k on m {h}x{k}"):
            kernel[cdiv(h, CHUNK), CHUNK, nb08.numba_stream()](*(nb08.as_kernel_array(t) for t in (m, v, out)))
            torch.cuda.synchronize()
        compare(out, m @ v, f"m {h}x{k} @ v on the GPU", atol=1e-3)
    report.ok(f"right on the GPU on m {', '.join(f'{h}x{k}' for h, k in gpu_shapes)}")
