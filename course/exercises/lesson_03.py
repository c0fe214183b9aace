"""The exercises of notebook 03: per-thread functions and run_threads, and coalescing."""
import ast, math

from ..checked_simulator import KernelFault, Trace, buffers, dim3, run_block_kernels, run_grid, who
from .coalescing import first_uncoalesced
from .learner_code import function_tree, where
from .lesson_01 import numbered, transpose_mistake
from .parts import NotYet, at_most, compare, compiled, count_in, faster_than, gpu_here, machine_code, need, running, sanitized
from .registry import exercise
from .simulated import as_tensor, cdiv, nan_buffer, rand, uncoalesced, with_traced_run_threads
from .watchdog import KernelTimeout


def run_with_run_threads(ns, kernel, what, explain, *args, trace):
    """Run a notebook 03 block kernel with the namespace's run_threads counting per thread; a fault's sentence
    goes through explain(fault, trace). A missing barrier is said in run_threads' terms."""
    restore = with_traced_run_threads(ns, trace)
    try:
        with running(what):
            try: run_block_kernels(kernel, *args, trace=trace)
            except KernelTimeout: raise
            except KernelFault as fault:
                if 'a barrier is missing' in str(fault):
                    raise KernelFault(f"{fault}. With run_threads, a barrier is the end of a call, so the two accesses "
                                      "it names happen in one and the same run_threads call") from None
                raise KernelFault(explain(fault, trace)) from None
    finally: restore()


# --------------------------------------------------------------------------------------------------
# 03.1: a tiled matrix-vector product
# --------------------------------------------------------------------------------------------------

def matvec_row_problem(trace, h, k, tw):
    "A sentence for the first thread that reads m outside the row it computes, or None."
    for (block, thread), accesses in trace.addresses.items():
        if thread is None: continue
        r = block[0] * tw + thread[0]
        for where, kind, name, i in accesses:
            if (where, kind, name) != ('global', 'read', 'm') or i // k == r: continue
            rr, c = divmod(i, k)
            said = f"{who(block, thread)} computes row {r} of out but reads m[{i}], element ({rr}, {c}) of m"
            if r >= h: return f"{said}; m has {h} rows: a thread past the last row must do nothing"
            if rr == r + 1 and c + k < cdiv(k, tw) * tw:
                return (f"{said}, where column {c + k} of row {r} would be, past the end of that {k}-column row: the "
                        f"last chunk holds only k - ph*tw values")
            return f"{said}, outside its own row {r} of m, m[{r * k}] to m[{r * k + k - 1}]"
    return None


def matvec_fault(h, k, tw):
    def explain(fault, trace):
        block, thread, _ = trace.current()
        if thread is not None and block is not None and block[0] * tw + thread[0] >= h:
            return (f"{fault}; that thread computes row {block[0] * tw + thread[0]} but m has {h} rows: a thread past "
                    "the last row must do nothing")
        return matvec_row_problem(trace, h, k, tw) or str(fault)
    return explain


@exercise('03.1', 'a tiled matrix-vector product',
          hints=("Split v into chunks of tw values: in each chunk, every thread first copies one value of v into shared memory (0. past k), then each thread with a row (r < h) adds up its row's products with the chunk, reading v from shared memory and m only inside its row. Why must those be two run_threads calls?",
                 'Two run_threads calls per chunk: one where thread tc writes shared[tc] = v[ph*tw + tc] (0. past k), one where thread tc (row r = blockIdx.x*tw + tc, nothing to do unless r < h) adds m[r*k + ph*tw + i] * shared[i] for i < min(tw, k - ph*tw).'))
def tiled_matvec(ns, report):
    kernel, = need(ns, 'matvec_tiled_bk')
    tw = 4
    for h, k in ((5, 7), (1, 9), (9, 1), (13, 20)):
        m, v = rand(h, k), rand(k)
        trace = Trace()
        b = buffers(trace, m=m, v=v, out=m.new_zeros(h))
        run_with_run_threads(ns, kernel, f"matvec_tiled_bk on m {h}x{k}", matvec_fault(h, k, tw),
                             dim3(cdiv(h, tw), 1), dim3(tw, 1), tw, b['m'], b['v'], b['out'], h, k, trace=trace)
        said = matvec_row_problem(trace, h, k, tw)
        if said: raise NotYet(f"m {h}x{k} @ v {k}: {said}")
        if max((c[('shared', 'write')] for c in trace.counts.values()), default=0) == 0:
            raise NotYet(f"m {h}x{k} @ v {k}: no thread writes shared memory, so no chunk of v is in `shared` for the "
                         "dot products to read")
        compare(as_tensor(b['out'], h), m @ v, f"m {h}x{k} @ v {k}")
        at_most(trace, 'v', 'read', cdiv(k, tw),
                f"m {h}x{k} @ v: with v's chunks in shared memory, each thread reads one value of v per chunk, so it")
        if max((c[('shared', 'read')] for c in trace.counts.values()), default=0) == 0:
            raise NotYet(f"m {h}x{k} @ v {k}: no thread reads shared memory: the chunks of v stored in `shared` are "
                         "never used")
    report.ok("right on 5x7, 1x9, 9x1 and 13x20 with 4 threads per block; each thread reads only its own row of m")
    report.ok("v is read from global memory once per chunk and thread; the dot products read it from shared memory")


# --------------------------------------------------------------------------------------------------
# 03.2: a transpose through a shared tile
# --------------------------------------------------------------------------------------------------

def tile_mistake(got, h, w, tw):
    "What the first wrong element of a tiled transpose of numbered(h, w) says about the tile's indices ('' if none is wrong)."
    for a in range(w):
        for b in range(h):
            v = got[a, b].item()
            if v == b * w + a + 1: continue
            if math.isnan(v): return "the element lies inside out, yet store_tile's bound check stops the thread that should write it"
            p, q = divmod(int(v) - 1, w)
            if (p // tw, q // tw) == (b // tw, a // tw):
                return (f"the value comes from the right tile of m but the wrong element of it: element ({p % tw}, "
                        f"{q % tw}) of the tile, where its element ({b % tw}, {a % tw}) belongs")
            return (f"the value comes from another tile of m: out's tile at rows {a // tw * tw}.., columns {b // tw * tw}.. "
                    f"is m's tile at rows {b // tw * tw}.., columns {a // tw * tw}.., which block (x={a // tw}, y={b // tw}) loads")
    return ''


def transpose_fault(h, w, tw):
    def explain(fault, trace):
        if 'out[' not in str(fault): return str(fault)
        block, thread, _ = trace.current()
        if block is not None and thread is not None:
            r, c = block[0] * tw + thread[1], block[1] * tw + thread[0]     # the element of out that thread stores
            if r >= w or c >= h:
                return (f"{fault}; that thread's element (r, c) = ({r}, {c}) of out lies outside the w x h = {w} x {h} "
                        f"result ({w} rows of {h} floats): it must write nothing")
        return f"{fault}; out is the w x h = {w} x {h} result: {w} rows of {h} floats"
    return explain


@exercise('03.2', 'a transpose through a shared tile',
          hints=("Read the tile row by row (neighbouring threads, neighbouring columns of m), then write it out row by row of the result, reading the shared tile transposed: store_tile's thread (tr, tc) takes the tile's element (tc, tr), and writes only where that lands inside the w x h out.",
                 'Load: tile[tr*tw + tc] = m[(by*tw + tr)*w + bx*tw + tc]. Store: out[(bx*tw + tr)*h + by*tw + tc] = tile[tc*tw + tr], both guarded by the bounds of the element they touch.'))
def transpose_through_shared(ns, report):
    kernel, = need(ns, 'transpose_tiled_bk')
    tw = 4
    for h, w in ((5, 7), (1, 9), (9, 1), (6, 8)):
        trace = Trace()
        b = buffers(trace, m=numbered(h, w))
        out = nan_buffer(trace, 'out', h * w)
        run_with_run_threads(ns, kernel, f"transpose_tiled_bk on a {h} x {w} m", transpose_fault(h, w, tw),
                             dim3(cdiv(w, tw), cdiv(h, tw)), dim3(tw, tw), tw * tw, b['m'], out, h, w, trace=trace)
        got = as_tensor(out, w, h)
        mistake = transpose_mistake(got, h, w, trace)
        if mistake:
            tip = tile_mistake(got, h, w, tw)
            raise NotYet(f"transposing a {h} x {w} m: {mistake}" + (f"; {tip}" if tip else ''))
        at_most(trace, 'global', 'read', 1, "a transpose")
        at_most(trace, 'global', 'write', 1, "a transpose")
        uncoalesced('write', 'out', trace)
        uncoalesced('read', 'm', trace)
    report.ok("right on 5x7, 1x9, 9x1 and 6x8 with 4x4 blocks")
    report.ok("neighbouring threads read neighbouring elements of m and write neighbouring elements of out")


# --------------------------------------------------------------------------------------------------
# 03.3 and 03.4: coalescing, chosen by which thread index runs along which axis
# --------------------------------------------------------------------------------------------------

# The block shapes 03.3 runs: each warp is the 32 threads x = 0..31 (or 32..63) of one y. Two shapes, so that a
# kernel or a grid written for one block shape (numbers where blockDim belongs) is caught.
COALESCING_BLOCKS = (dim3(32, 4), dim3(64, 2))
COALESCING_SHAPES = ((37, 41), (40, 9), (5, 70), (70, 5), (64, 8))     # the last: whole blocks only


def as_grid(value, call):
    "The grid a learner's function returned, as a dim3; a sentence if it is not one."
    xy = (value.x, value.y, getattr(value, 'z', 1)) if hasattr(value, 'x') and hasattr(value, 'y') else value
    if not isinstance(xy, (tuple, list)) or not 1 <= len(xy) <= 3 or not all(isinstance(v, int) and v >= 1 for v in xy):
        raise NotYet(f"{call} returned {value!r}: return dim3(blocks in x, blocks in y), whole numbers of at least 1")
    return dim3(*xy)


def surplus_sentence(call, grid, surplus, why):
    "'scale_rows_blocks(...) gives 4 x 11 blocks, 2 too many along x: <why>'."
    sides = ' and '.join(f"{n} too many along {side}" if i == 0 else f"{n} along {side}"
                         for i, (side, n) in enumerate(surplus.items()))
    return f"{call} gives {grid.x} x {grid.y}{f' x {grid.z}' if grid.z > 1 else ''} blocks, {sides}: {why}"


def far_too_many_blocks(call, grid, h, w, block):
    """Fail, before running it, if the grid has far more blocks along a side than any mapping of the matrix could use
    (x and y may each run along the rows or the columns, z along neither): a launch that would take the simulator long.
    Any surplus at all is found after the run, from the blocks that write nothing (idle_blocks)."""
    most = {side: max(cdiv(h, getattr(block, side)), cdiv(w, getattr(block, side))) for side in 'xy'}
    limit = {'x': 4 * most['x'], 'y': 4 * most['y'], 'z': 1}
    if all(getattr(grid, side) <= limit[side] for side in 'xyz'): return
    most['z'] = 1
    surplus = {side: getattr(grid, side) - most[side] for side in 'xyz' if getattr(grid, side) > most[side]}
    raise NotYet(surplus_sentence(call, grid, surplus, '; '.join(
        f"{side} needs at most {most[side]}" + ('' if side == 'z' else f" (h = {h} or w = {w} in blocks of "
                                                 f"blockDim.{side} = {getattr(block, side)}, whichever side {side} runs along)")
        for side in surplus)))


def idle_blocks(call, grid, h, w, block, trace):
    "Fail if whole rows or columns of the grid's blocks write no element of out: the grid has more blocks than needed."
    writers = {b for (b, _), accesses in trace.addresses.items() if any(kind == 'write' for _, kind, _, _ in accesses)}
    idle = {side: sorted(set(range(getattr(grid, side))) - {b[axis] for b in writers}) for axis, side in enumerate('xy')}
    surplus = {side: len(ids) for side, ids in idle.items() if ids}
    if not surplus: return
    def needs(side):
        n = getattr(grid, side) - surplus[side]
        sizes = ((h, 'h'), (w, 'w')) if side == 'x' else ((w, 'w'), (h, 'h'))    # the coalesced mapping's first
        named = [f"{n} ({name} = {size} in blocks of blockDim.{side} = {getattr(block, side)})" for size, name in sizes
                 if cdiv(size, getattr(block, side)) == n]
        return named[0] if named else str(n)
    def listed(ids):
        if len(ids) > 2 and ids == list(range(ids[0], ids[-1] + 1)): return f"{ids[0]} to {ids[-1]}"
        return ' and '.join(map(str, ids)) if len(ids) <= 2 else f"{', '.join(map(str, ids[:3]))}, ..."
    raise NotYet(surplus_sentence(call, grid, surplus, '; '.join(
        f"the blocks with blockIdx.{side} = {listed(idle[side])} write no element of out: with your mapping, {side} "
        f"needs {needs(side)}" for side in surplus)))


def block_sides_written(functions, block):
    "Where the functions write a side of `block` as a number: ['the 32 at line 3 of the `#| exercise 03.3` cell: `...`']."
    found = {}     # (file, line) -> the numbers on it
    for fn in functions:
        tree, first_line = function_tree(fn)
        code = getattr(fn, '__code__', None)
        if tree is None or code is None: continue
        for node in sorted(ast.walk(tree), key=lambda n: (getattr(n, 'lineno', 0), getattr(n, 'col_offset', 0))):
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value in (block.x, block.y):
                found.setdefault((code.co_filename, node.lineno + first_line - 1), []).append(str(node.value))
    return [f"the {' and '.join(numbers)} at {where(*place)}" for place, numbers in list(found.items())[:2]]


def run_coalescing_check(kernel, blocks_for, h, w, block):
    "Run the learner's scale_rows_k on an h x w matrix with blocks of `block` threads and the grid of scale_rows_blocks."
    what = f"scale_rows_k on a {h} x {w} m (column by column) with blocks of {block.x} x {block.y} threads"
    call = f"scale_rows_blocks({h}, {w}, dim3({block.x}, {block.y}))"
    with running(call): grid = as_grid(blocks_for(h, w, block), call)
    far_too_many_blocks(call, grid, h, w, block)
    m_cols, s = rand(w, h), rand(h)       # row c of m_cols is column c of m: element (r, c) at c*h + r
    trace = Trace()
    b = buffers(trace, m=m_cols, s=s)
    out = nan_buffer(trace, 'out', h * w)
    with running(what): run_grid(kernel, grid, block, b['m'], b['s'], out, h, w, trace=trace)
    got = as_tensor(out, w, h).t()       # indexed [r, c], as m
    if got.isnan().any():
        r, c = (int(i) for i in got.isnan().nonzero()[0])
        raise NotYet(f"{what}: element ({r}, {c}) of out is never written: the grid of {grid.x} x {grid.y} blocks "
                     f"that {call} gives does not reach it with your kernel's mapping")
    idle_blocks(call, grid, h, w, block, trace)
    compare(got, (m_cols * s).t(), what)
    said = first_uncoalesced(trace, block, names={h: 'h', w: 'w'})
    if said: raise NotYet(f"{what}: {said}")
    at_most(trace, 'm', 'read', 1, "one element per thread")


@exercise('03.3', 'coalesced reads and writes: which thread takes which element',
          hints=("A warp is 32 threads with consecutive threadIdx.x (and one threadIdx.y here). Its accesses coalesce when the element index grows by 1 from one of those threads to the next, as r does in c*h + r: let threadIdx.x run along r. Take the block's sides from blockDim, and give the grid just the blocks that cover the matrix with that mapping.",
                 'r = blockIdx.x*blockDim.x + threadIdx.x and c = blockIdx.y*blockDim.y + threadIdx.y; the grid then needs cdiv(h, blockDim.x) blocks in x and cdiv(w, blockDim.y) in y.'))
def coalesced_scale_rows(ns, report):
    kernel, blocks_for = need(ns, 'scale_rows_k', 'scale_rows_blocks')
    first, *others = COALESCING_BLOCKS
    for h, w in COALESCING_SHAPES: run_coalescing_check(kernel, blocks_for, h, w, first)
    for block in others:
        for h, w in COALESCING_SHAPES:
            try: run_coalescing_check(kernel, blocks_for, h, w, block)
            except NotYet as e:
                numbers = block_sides_written((kernel, blocks_for), first)
                said = (f"your code assumes a block shape: {'; '.join(numbers)}" if numbers else
                        "your kernel or scale_rows_blocks assumes a block shape")
                raise NotYet(f"{e}. It is right with blocks of {first.x} x {first.y} threads but not with {block.x} x "
                             f"{block.y}, so {said}") from None
    shapes = ' and '.join(f"{b.x} x {b.y}" for b in COALESCING_BLOCKS)
    report.ok(f"right on {', '.join(f'{h}x{w}' for h, w in COALESCING_SHAPES)} matrices stored column by column, "
              f"with blocks of {shapes} threads and the grid of scale_rows_blocks")
    report.ok("every warp's read of m and of s and its write of out touches at most one 32-byte sector more than the "
              "fewest that its elements fit in; the grid has no block that writes nothing")


# The course's uncoalesced kernel, what 03.4 is timed against: 03.3's skeleton in CUDA C, threadIdx.x along c.
UNCOALESCED_SCALE_ROWS = r'''
__global__ void scale_rows_uncoalesced_k(const float* m, const float* s, float* out, int h, int w) {
    int c = blockIdx.x*blockDim.x + threadIdx.x;     // neighbouring threads: neighbouring columns, elements h apart
    int r = blockIdx.y*blockDim.y + threadIdx.y;
    if (r < h && c < w) out[(size_t)c*h + r] = m[(size_t)c*h + r] * s[r];
}

extern "C" cudaError_t scale_rows_uncoalesced(const float* m, const float* s, float* out, int h, int w,
                                              cudaStream_t stream) {
    dim3 tpb(32, 8), blocks(cdiv(w, tpb.x), cdiv(h, tpb.y));
    scale_rows_uncoalesced_k<<<blocks, tpb, 0, stream>>>(m, s, out, h, w);
    return cudaGetLastError();
}
'''

# The speed-up a coalesced kernel must reach over the uncoalesced one, on an 8192 x 8192 matrix (256 MiB, far
# more than any L2): the uncoalesced kernel's warps each touch 32 cache lines per access where 1 would do.
SPEEDUP = 2.0
BIG = 8192
# Values around each buffer in the guarded runs: NaN around out (a write there shows), inf around m and s (a read
# there turns the element it computes into inf).
GUARD = 256

SMALL_SCALE_SHAPES = ((33, 5), (1, 70), (70, 1), (45, 67))
SANITIZER_CALLS = '''
for h, w in {shapes}:
    m, s = torch.rand(w, h, device='cuda'), torch.rand(h, device='cuda')
    mod.scale_rows(m, s, torch.empty(w, h, device='cuda'), h, w)
'''.format(shapes=SMALL_SCALE_SHAPES)


def guarded(t, fill):
    "A copy of t inside a buffer with GUARD values `fill` before and after it: (the whole buffer, the copy)."
    import torch
    whole = torch.full((t.numel() + 2 * GUARD,), fill, device=t.device)
    inner = whole[GUARD:GUARD + t.numel()]
    inner.copy_(t.flatten())
    return whole, inner


def guarded_run(scale_rows, h, w, device='cuda'):
    "Run the learner's launcher on a small column-by-column m with guards around every buffer; fail on what they show."
    import torch
    what = f"scale_rows on a {h} x {w} m"
    m_cols, s = rand(w, h, device=device), rand(h, device=device)
    (_, m_in), (_, s_in) = guarded(m_cols, math.inf), guarded(s, math.inf)
    out_all, out_in = guarded(torch.full((h * w,), math.nan, device=device), math.nan)
    with running(what):
        scale_rows(m_in, s_in, out_in, h, w)
        if device == 'cuda': torch.cuda.synchronize()
    outside = int((~out_all[:GUARD].isnan()).sum() + (~out_all[GUARD + h * w:].isnan()).sum())
    if outside:
        raise NotYet(f"{what} writes {outside} value(s) outside out: a bound check is missing or off by one")
    got = out_in.view(w, h).t()
    if got.isnan().any():
        r, c = (int(i) for i in got.isnan().nonzero()[0])
        raise NotYet(f"{what}: element ({r}, {c}) of out is never written: the launch's grid does not reach it with "
                     "your kernel's mapping")
    if got.isinf().any():
        r, c = (int(i) for i in got.isinf().nonzero()[0])
        raise NotYet(f"{what}: element ({r}, {c}) of out came out inf, which the check put only around m and s: a "
                     "thread read outside them, so a bound check is missing or off by one")
    compare(got, (m_cols * s).t(), what)


@exercise('03.4', 'coalescing on a GPU: the same kernel in CUDA C',
          hints=("The choice of 03.3, in CUDA C: threadIdx.x runs along the index that moves by one element in memory, the launch's grid follows that choice, and only the threads with r < h and c < w touch memory.",
                 "Take r from the x indices (blockIdx.x, threadIdx.x) and c from the y ones, so that element c*h + r moves by one between neighbouring threads; the launcher's grid must then count blocks of h in x and of w in y."),
          runs_on_gpu=True)
def coalesced_scale_rows_cuda(ns, report):
    import torch
    from ..cuda_library import compile_cuda, cuda_prelude, extern_c_functions
    src, = need(ns, 'scale_rows_cuda_src')
    mod = compiled(report, src, 'scale_rows_cuda_src')
    if mod is None: return
    if 'scale_rows' not in [name for name, _, _ in extern_c_functions(src)]:
        raise NotYet('scale_rows_cuda_src has no launcher `extern "C" cudaError_t scale_rows(...)`: keep the given one')
    kind, listing = machine_code(src, 'scale_rows_k')
    if not listing: raise NotYet("nvcc made no kernel whose name contains 'scale_rows_k': keep the kernel's name")
    if not count_in(kind, listing, 'global stores'):
        raise NotYet(f"scale_rows_k writes nothing to global memory (its {kind} has no global store), so out never "
                     "gets m's element times s[r]")
    if count_in(kind, listing, 'global loads') < 2:
        raise NotYet(f"scale_rows_k reads fewer than two values from global memory (its {kind} has "
                     f"{count_in(kind, listing, 'global loads')} global loads), where each element needs two: m's "
                     "element and s[r]")
    report.ok(f"the {kind} of scale_rows_k loads from and stores to global memory")
    if not gpu_here():
        return report.skip(f"running it: correctness, out-of-bounds accesses, and at least {SPEEDUP:g}x the speed of "
                           f"the uncoalesced kernel on an {BIG} x {BIG} m need a GPU")
    for h, w in SMALL_SCALE_SHAPES:
        guarded_run(mod.scale_rows, h, w)
    report.ok("nothing written outside out and nothing read outside m and s on " +
              ', '.join(f'{h}x{w}' for h, w in SMALL_SCALE_SHAPES))
    sanitized(report, src, SANITIZER_CALLS, tools=('memcheck',))
    for h, w in ((BIG, BIG), (1000, 300), (1, 4099), (4099, 1), (33, 4097)):
        m_cols, s = rand(w, h, device='cuda'), rand(h, device='cuda')
        out = torch.full((w, h), math.nan, device='cuda')
        with running(f"scale_rows on a {h} x {w} m"):
            mod.scale_rows(m_cols, s, out, h, w)
            torch.cuda.synchronize()
        compare(out.t(), (m_cols * s).t(), f"scale_rows on a {h} x {w} m")
    report.ok(f"right on {BIG}x{BIG}, 1000x300, 1x4099, 4099x1 and 33x4097")
    reference = compile_cuda(cuda_prelude + UNCOALESCED_SCALE_ROWS)
    m_cols, s = rand(BIG, BIG, device='cuda'), rand(BIG, device='cuda')
    out = torch.empty(BIG, BIG, device='cuda')
    try:
        faster_than(report, lambda m, s: mod.scale_rows(m, s, out, BIG, BIG),
                    lambda m, s: reference.scale_rows_uncoalesced(m, s, out, BIG, BIG), (m_cols, s), 1 / SPEEDUP,
                    f"scale_rows on a {BIG} x {BIG} m", "the uncoalesced kernel (threadIdx.x along c)")
    except NotYet as e:
        raise NotYet(f"{e}: a kernel whose warps touch neighbouring addresses takes at most half its time, so this "
                     "one's warps still touch addresses far apart") from None
