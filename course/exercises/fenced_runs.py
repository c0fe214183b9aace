"""The GPU side that the CUDA C checks share (notebooks 05-07): every kernel runs with each input and its
output in the middle of buffers filled with NaN ("fenced"), so that a write outside the output shows in its
fence, a read outside an input changes the result when that input's fence changes, and an element no thread
wrote stays NaN; a crash is explained by compute-sanitizer, with lines of the learner's cell; and what nvcc's
PTX says about an epilogue (no GPU needed)."""
import contextlib, math, re, textwrap

from .gpu_kernels import GPU_SHAPES
from .parts import NotYet, cell_place, compare, running, sanitized
from .simulated import problem


# --------------------------------------------------------------------------------------------------
# The GPU side of notebooks 05-07's checks
# --------------------------------------------------------------------------------------------------

FENCE = 1024   # floats on each side of every buffer a GPU check hands to a kernel

# What a kernel that touched memory it does not own leaves in torch's error.
CUDA_FAULT = re.compile(r'illegal memory access|illegal address|misaligned address|unspecified launch failure|'
                        r'out of range', re.I)



def fenced(t, fill):
    "A copy of `t` in the middle of a buffer filled with `fill`: (the copy, the whole buffer)."
    import torch
    buf = torch.full((t.numel() + 2 * FENCE,), fill, device=t.device)
    inner = buf[FENCE:FENCE + t.numel()]
    inner.copy_(t.reshape(-1))
    return inner.view(t.shape), buf


def same(a, b):
    import torch
    return bool(((a == b) | (torch.isnan(a) & torch.isnan(b))).all())


def run_fenced(what, launch, inputs, out_shape):
    """Run launch(*inputs, out) on the GPU with the inputs ({name: tensor}) and out (NaN until written) each
    in the middle of a NaN-filled buffer, and return out. Fail if the kernel writes outside out, reads
    outside an input (its result changes when that input's fence holds 1.0 instead of NaN), or gives
    different results on the same inputs (a race)."""
    import torch

    device = next(iter(inputs.values())).device

    def once(fills):
        ins = [fenced(t, fill)[0] for t, fill in zip(inputs.values(), fills)]
        out, buf = fenced(torch.full(out_shape, math.nan, device=device), math.nan)
        with running(what):
            launch(*ins, out)
            if device.type == 'cuda': torch.cuda.synchronize()
        return out.clone(), buf

    got, buf = once([math.nan] * len(inputs))
    size = got.numel()
    before, after = (int((~torch.isnan(part)).sum()) for part in (buf[:FENCE], buf[FENCE + size:]))
    if before or after:
        where = f"{after} element(s) past the end of out" if after else f"{before} element(s) before the start of out"
        raise NotYet(f"{what}: the kernel writes {where} (out is {' x '.join(map(str, out_shape))}): a thread "
                     "outside the output gets past the guard of its write")
    for j, name in enumerate(inputs):
        fills = [math.nan] * len(inputs)
        fills[j] = 1.0
        if not same(once(fills)[0], got):
            if not same(once([math.nan] * len(inputs))[0], got):
                raise NotYet(f"{what}: two runs on the same inputs give different results: a thread reads a value "
                             "no thread wrote in time (a __syncthreads() missing: a race), or shared memory that no "
                             "thread fills")
            raise NotYet(f"{what}: the result changes with what lies in memory just outside {name}: the kernel reads "
                         f"past the end (or before the start) of {name}; a guard of its loads is wrong or missing")
    return got


def seeded(*shape, seed, normal=False, device='cuda'):
    "Random numbers that are the same on every run (so that a sentence is too): uniform in [0, 1), or normal."
    import torch
    g = torch.Generator().manual_seed(seed)
    return (torch.randn if normal else torch.rand)(*shape, generator=g).to(device)


def check_matmul_fenced(launch, what, shapes=GPU_SHAPES, bias=False, relu=False, device='cuda'):
    """On each (h, k, w): launch(m, n, [bias,] out, h, w, k), fenced (see run_fenced), against torch:
    m @ n, plus bias (one value per column) with bias=True, clamped at 0 with relu=True. With a bias the
    inputs are normal random numbers, so that half the results are negative and the ReLU matters."""
    for seed, (h, k, w) in enumerate(shapes):
        inputs = {'m': seeded(h, k, seed=seed, normal=bias, device=device),
                  'n': seeded(k, w, seed=seed + 100, normal=bias, device=device)}
        if bias: inputs['bias'] = seeded(w, seed=seed + 200, normal=True, device=device)
        name = f"{what} on {problem(h, k, w)}"
        got = run_fenced(name, lambda *t: launch(*t, h, w, k), inputs, (h, w))
        if bias: compare_epilogue(got, *inputs.values(), relu, name)
        else: compare(got, inputs['m'] @ inputs['n'], name, atol=1e-3, rtol=1e-4)


def compare_epilogue(got, m, n, bias, relu, what):
    "compare() against relu(m @ n + bias) (or m @ n + bias), naming the slip when the result is a known wrong one."
    import torch
    mn = m @ n
    results = {'m @ n + bias, without the ReLU': mn + bias, 'relu(m @ n + bias)': (mn + bias).relu(),
               'm @ n, without the bias': mn, 'relu(m @ n), without the bias': mn.relu()}
    if m.shape[0] <= bias.numel():
        by_row = mn + bias[:m.shape[0], None]
        results['m @ n + bias[r]: the bias taken by row, not by column'] = by_row.relu() if relu else by_row
    expected = results.pop('relu(m @ n + bias)' if relu else 'm @ n + bias, without the ReLU')
    try:
        compare(got, expected, what, atol=1e-3, rtol=1e-4)
    except NotYet as e:
        for name, wrong in results.items():
            if not torch.isnan(got).any() and torch.allclose(got, wrong, atol=1e-3, rtol=1e-4):
                raise NotYet(f"{e}; the result is {name}") from None
        raise


@contextlib.contextmanager
def crash_explained(report, src, name, calls, advice=''):
    """Around GPU runs of the learner's kernel: if it crashes (and takes this process's CUDA context with
    it), run `calls` under compute-sanitizer's memcheck, in a fresh process, for the sentence that names
    the access and its line; failing that, add `advice` to the crash's sentence."""
    try:
        yield
    except NotYet as e:
        if not CUDA_FAULT.search(str(e)): raise
        sanitized_cell(report, src, name, calls, tools=('memcheck',))
        if not advice: raise
        raise NotYet(f"{str(e).rstrip('.')}. {advice}") from None


def sanitized_cell(report, src, name, calls, tools=('memcheck', 'racecheck')):
    "parts.sanitized, with each tensor its own allocation and the lines it names turned into lines of the learner's cell."
    place = cell_place(report, src, name)
    try:
        sanitized(report, src, textwrap.dedent(calls), tools)
    except NotYet as e:
        raise NotYet(re.sub(r'(?:\S*/)?kernel\.cu:(\d+)', lambda m: place(int(m.group(1))), str(e))) from None


SMALL_EPILOGUE_CALLS = '''
for h, k, w in ((33, 17, 31), (1, 20, 9), (9, 20, 1)):
    m, n, bias = torch.randn(h, k, device='cuda'), torch.randn(k, w, device='cuda'), torch.randn(w, device='cuda')
    mod.{fn}(m, n, bias, torch.empty(h, w, device='cuda'), h, w, k{extra})
'''


# --------------------------------------------------------------------------------------------------
# What nvcc's PTX says (no GPU needed)
# --------------------------------------------------------------------------------------------------

# A ReLU in PTX: fmaxf(x, 0.0f) (and x > 0 ? x : 0) become max.f32; x < 0 ? 0 : x a float comparison.
RELU_PTX = r'\bmax(?:\.\w+)*\.f32\b|\bsetp\.\w+(?:\.ftz)?\.f32\b'


def ptx_listing(src, kernel):
    "The PTX of the kernel whose mangled name contains `kernel` ('' if none), made by nvcc; None without nvcc."
    from ..cuda_toolkit import nvcc_available
    if not nvcc_available(): return None
    from ..disassembly import cuda_ptx, kernel_listing
    return kernel_listing(('PTX', cuda_ptx(src)), kernel)


def relu_ops(listing): return len(re.findall(RELU_PTX, listing))


def inside_a_loop(listing, pattern):
    "Whether an instruction matching `pattern` lies between a label and a later branch back to it."
    lines = [l.strip() for l in listing.splitlines()]
    labels = {l[:-1]: i for i, l in enumerate(lines) if re.match(r'\$\w+:$', l)}
    loops = [(labels[m.group(1)], i) for i, l in enumerate(lines)
             for m in [re.search(r'\bbra(?:\.uni)?\s+(\$\w+);', l)] if m and labels.get(m.group(1), i) < i]
    return any(a < i < b for i, l in enumerate(lines) if re.search(pattern, l) for a, b in loops)


