"""What the checks of Python kernels share: random inputs, output buffers that show an element no thread
wrote, running a matmul kernel in the checking simulator, the coalescing rule on a trace, and reading back the
race of two threads storing one shared element."""
import math, re

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, traced_run_threads   # noqa: F401
from .parts import NotYet, compare, running


def cdiv(a, b): return (a + b - 1) // b


def rand(*shape, device='cpu'):
    import torch
    return torch.rand(*shape, device=device)


def nan_buffer(trace, name, size):
    "An output buffer whose elements are NaN until written, so that an element no thread writes shows."
    from ..checked_simulator import Buffer
    return Buffer(name, [math.nan] * size, 'global', trace)


def as_tensor(buffer, *shape):
    import torch
    return torch.tensor(buffer.tolist()).reshape(*shape)


def problem(h, k, w, **extra):
    return f"m {h}x{k} @ n {k}x{w}" + ''.join(f", {a}={v}" for a, v in extra.items())


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


def with_traced_run_threads(ns, trace):
    "Swap the namespace's run_threads for one that counts per thread; returns a function that swaps it back."
    old = ns.get('run_threads')
    ns['run_threads'] = traced_run_threads(trace)
    return lambda: ns.__setitem__('run_threads', old) if old is not None else ns.pop('run_threads', None)


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
                         "a warp's accesses coalesce into few memory transactions")


# Wrong values, explained: which mistake gives exactly the values a kernel returned

def compare_or_explain(got, expected, what, mistakes):
    """compare(got, expected, what); where got is wrong and one of the known mistakes gives exactly its values,
    the sentence names that mistake. `mistakes()` yields (values, what the kernel does wrong)."""
    import torch
    try:
        compare(got, expected, what)
    except NotYet as wrong:
        if isinstance(got, torch.Tensor) and tuple(got.shape) == tuple(expected.shape):
            for values, why in mistakes():
                if torch.allclose(got.double(), values.double(), atol=1e-4, rtol=1e-4):
                    raise NotYet(f"{wrong}: these are the values of a kernel that {why}") from None
        raise


def products_in_order(m, n, tile):
    """The products a tiled kernel adds to each sum, in its order, as (h x w float64 tensor, phase), one per
    k of each tile (tile by tile, with the zero padding past k as products of 0)."""
    import torch
    m, n = m.double(), n.double()
    h, k, w = m.shape[0], m.shape[1], n.shape[1]
    for i in range(cdiv(k, tile) * tile):
        yield (m[:, i:i + 1] * n[i:i + 1] if i < k else torch.zeros(h, w, dtype=torch.float64)), i // tile


def double_store(sentence):
    """The race of two threads storing one shared element between the same two barriers, read from a check's sentence
    (the checking simulator's): (block, first thread, second thread, index into `shared`), the threads in the order
    (y, x), the same whichever stored first; None where the sentence names no such race. Tiles whose element has two
    threads storing it in one phase overlap, or their loads do: no barrier can keep both values."""
    hit = re.search(r"thread \(x=(\d+), y=(\d+)\) of block \(x=(\d+), y=(\d+)\) and thread \(x=(\d+), y=(\d+)\) both write "
                    r"shared\[(\d+)\]", sentence)
    if not hit: return None
    x1, y1, bx, by, x2, y2, i = map(int, hit.groups())
    first, second = sorted([(x1, y1), (x2, y2)], key=lambda t: (t[1], t[0]))
    return (bx, by), first, second, i
