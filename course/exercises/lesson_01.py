"""The exercises of notebook 01: the naive kernel, one Python call per CUDA thread."""
import math

from ..checked_simulator import KernelFault, Trace, buffers, dim3, run_grid, who
from .parts import NotYet, at_most, compare, need, running
from .registry import exercise
from .watchdog import KernelTimeout
from .simulated import as_tensor, cdiv, nan_buffer


# --------------------------------------------------------------------------------------------------
# Transposes (01.1, and 03.2 through a shared tile): where each value of the result came from
# --------------------------------------------------------------------------------------------------

def numbered(h, w):
    "An h x w matrix whose element (r, c) is r*w + c + 1: a value found in a result says which element of m it came from."
    import torch
    return torch.arange(1, h * w + 1, dtype=torch.float32).reshape(h, w)


def reads_of(trace, name, index):
    "(block, thread) of each thread that read element `index` of global buffer `name`."
    return [key for key, accesses in trace.addresses.items()
            if any(a == ('global', 'read', name, index) for a in accesses)]


def transpose_mistake(got, h, w, trace, follow_reads=False):
    """One sentence on the first wrong element of `got`, the w x h transpose of numbered(h, w) as computed, naming
    the value found there and the thread that wrote it; None if got is right. With follow_reads, an element no
    thread wrote is traced to the thread that read its value from m and where that thread wrote it."""
    for a in range(w):
        for b in range(h):
            v = got[a, b].item()
            if v == b * w + a + 1: continue
            place = f"element [{a}, {b}] of the {w} x {h} result (out[{a * h + b}])"
            if not math.isnan(v):
                p, q = divmod(int(v) - 1, w)
                writer = trace.writers.get(('out', a * h + b))
                by = who(*writer) if writer else "a thread"
                return f"{by} writes m[{p}, {q}] into {place}, which must hold m[{b}, {a}]"
            readers = reads_of(trace, 'm', b * w + a) if follow_reads else []
            if readers:
                key = readers[0]
                writes = [i for where, kind, name, i in trace.addresses[key] if (where, kind, name) == ('global', 'write', 'out')]
                to = f"out[{writes[0]}], element [{writes[0] // h}, {writes[0] % h}]" if writes else "nowhere in out"
                return f"no thread writes {place}; {who(*key)} reads m[{b}, {a}], which belongs there, and writes it to {to}"
            return f"no thread writes {place}, which must hold m[{b}, {a}]"
    return None


def transpose_fault(fault, blockIdx, threadIdx, blockDim, h, w):
    "The simulator's sentence on a fault of a 01.1 thread, with where that thread stands and what it should touch."
    r, c = blockIdx.y * blockDim.y + threadIdx.y, blockIdx.x * blockDim.x + threadIdx.x
    if r >= h or c >= w:
        return f"{fault}; that thread's (r, c) = ({r}, {c}) lies outside the {h} x {w} m: it must touch nothing"
    # Inside m the bound check is not what is wrong, the index is.
    return (f"{str(fault).replace(': a bound check is missing or wrong', '')}; that thread's (r, c) = ({r}, {c}) lies "
            f"inside m: it reads m[{r * w + c}], and element ({r}, {c}) of m belongs at row {c}, column {r} of the "
            f"{w} x {h} result, out[{c * h + r}]")


def run_transpose_grid(kernel, h, w, tpb):
    "Run a notebook 01 transpose kernel on numbered(h, w); (w x h result, trace). A fault says where its thread stands."
    m = numbered(h, w)
    trace = Trace()
    out = nan_buffer(trace, 'out', h * w)
    current = {}

    def one_thread(blockIdx, threadIdx, blockDim, *args):
        current['ids'] = blockIdx, threadIdx
        kernel(blockIdx, threadIdx, blockDim, *args)

    with running(f"transpose_bk on a {h} x {w} m"):
        try:
            run_grid(one_thread, dim3(cdiv(w, tpb.x), cdiv(h, tpb.y)), tpb, buffers(trace, m=m)['m'], out, h, w, trace=trace)
        except KernelTimeout: raise
        except KernelFault as fault:
            raise KernelFault(transpose_fault(fault, *current['ids'], tpb, h, w)) from None
    return as_tensor(out, w, h), trace


@exercise('01.1', 'a transpose kernel, with its bound check',
          hints=("Thread (x, y) of the grid owns element (r, c) of m. The edge blocks stick out of m: a thread with r >= h or c >= w owns no element and must return before it touches memory. The rest put element (r, c) at row c, column r of the w x h result.",
                 'Return at once unless r < h and c < w (both, strictly: row h is already past the end). The result is w x h, so element (r, c) of m goes to row c, column r of it: out[c*h + r].'))
def transpose_kernel(ns, report):
    kernel, = need(ns, 'transpose_bk')
    shapes = ((5, 7), (1, 9), (9, 1), (6, 4))
    for (h, w), tpb in [(s, dim3(4, 4)) for s in shapes] + [((5, 7), dim3(8, 2)), ((9, 6), dim3(2, 8))]:
        got, trace = run_transpose_grid(kernel, h, w, tpb)
        mistake = transpose_mistake(got, h, w, trace, follow_reads=True)
        if mistake:
            raise NotYet(f"transposing a {h} x {w} m: {mistake}: element (r, c) of m belongs at row c, column r of "
                         "the result")
        compare(got, numbered(h, w).t(), f"transposing a {h} x {w} m")
        at_most(trace, 'global', 'read', 1, "a transpose")
        at_most(trace, 'global', 'write', 1, "a transpose")
    report.ok(f"right on {', '.join(f'{h}x{w}' for h, w in shapes)} with 4x4 blocks, and on 5x7 and 9x6 with 8x2 and 2x8 blocks; no thread reads or writes outside m and out")
    report.ok("each thread reads one value of m and writes one of out")


# --------------------------------------------------------------------------------------------------
# 01.2: input rules
# --------------------------------------------------------------------------------------------------

def bad_inputs():
    "{what: (m, n, device)} that check_inputs must reject."
    import torch
    from .simulated import rand
    good = rand(8, 8)
    meta = torch.empty(8, 8, device='meta')
    bad = {"m on the CPU when device='cuda'": (good, good, 'cuda'),
           "n on the 'meta' device while m is on the CPU, with device='cpu'": (good, meta, 'cpu'),
           "m on the 'meta' device while n is on the CPU, with device='cpu'": (meta, good, 'cpu'),
           "a non-contiguous m (a transposed view)": (rand(8, 8).t(), good, 'cpu'),
           "a non-contiguous n": (good, rand(8, 8).t(), 'cpu'),
           "a float64 m": (good.double(), good, 'cpu'),
           "an int32 n": (good, torch.ones(8, 8, dtype=torch.int32), 'cpu'),
           "a float16 n": (good, good.half(), 'cpu'),
           "a 1-D m": (rand(8), good, 'cpu'),
           "a 3-D n": (good, rand(8, 8, 1), 'cpu'),
           "m 8x5 with n 8x8 (a size mismatch)": (rand(8, 5), good, 'cpu'),
           "an empty m (0x8)": (rand(0, 8), good, 'cpu'),
           "an empty n (8x0)": (good, rand(8, 0), 'cpu'),
           "a list instead of a tensor for m": ([[1.0]], good, 'cpu'),
           "a list instead of a tensor for n": (good, [[1.0]], 'cpu')}
    if torch.cuda.is_available():
        bad["m on the GPU and n on the CPU, with device='cuda'"] = (good.cuda(), good, 'cuda')
    return bad


@exercise('01.2', 'reject what a kernel must not be given',
          hints=('Check each rule for m and for n in turn (a loop over the two is shortest), and raise as soon as one fails: TypeError for a wrong type or dtype, ValueError for the rest, with a message naming the rule.',
                 "isinstance(t, torch.Tensor); t.dim() == 2; t.dtype == torch.float32; t.device.type == torch.device(device).type; t.is_contiguous(); t.numel() > 0; then m.shape[1] == n.shape[0]. Return (m.shape[0], m.shape[1], n.shape[1])."))
def input_rules(ns, report):
    from .simulated import rand
    check_inputs, = need(ns, 'check_inputs')
    def accepts(h, k, w, device):
        with running(f"check_inputs(m {h}x{k}, n {k}x{w}, device={device!r}), good inputs"):
            got = check_inputs(rand(h, k), rand(k, w), device=device)
        if not isinstance(got, tuple) or tuple(got) != (h, k, w):
            raise NotYet(f"check_inputs(m {h}x{k}, n {k}x{w}) returned {got!r}, expected (h, k, w) = {(h, k, w)}")
    accepts(5, 7, 3, 'cpu'); accepts(1, 1, 4, 'cpu')
    bad = bad_inputs()
    with running("check_inputs on inputs a kernel must not get"):
        for what, (m, n, device) in bad.items():
            try: check_inputs(m, n, device=device)
            except (ValueError, TypeError) as e:
                if not str(e).strip(): raise NotYet(f"check_inputs rejects {what}, but with an empty message, which does not say which rule failed")
                continue
            except KernelFault: raise          # stopped by the watchdog: running() says where
            except Exception as e:
                raise NotYet(f"check_inputs raises {type(e).__name__} for {what}, where the task asks for ValueError "
                             "(TypeError for a wrong type or dtype)") from None
            raise NotYet(f"check_inputs accepts {what}: it returns where it must raise ValueError (TypeError for a wrong "
                         "type or dtype)")
    # 'cpu:0' names the same device as 'cpu' (as 'cuda:0' does 'cuda'): compare device types, not device objects.
    accepts(2, 3, 4, 'cpu:0')
    report.ok("returns (h, k, w) for good inputs, with the device named 'cpu' or 'cpu:0'")
    report.ok(f"rejects, with a message, each of: {'; '.join(bad)}")
