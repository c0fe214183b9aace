"""The exercises of notebook 10: register tiling, in the thread simulator, in CUDA C and in Numba."""
import ast, contextlib, math, re, sys, threading
from collections import Counter, defaultdict

from ..checked_simulator import dim3, run_threaded_blocks
from .barrier_placement import array_names, is_barrier
from .learner_code import function_tree, where
from .gpu_kernels import GPU_SHAPES, SMALL_MATMUL_CALLS, check_matmul_on_gpu, matmul_via, numba_tools, require_machine_code
from .numba_simulation import python_function
from .parts import NotYet, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here, need, running, sanitized
from .ptx_dataflow import registers, shared_arrays, value_origins
from .registry import exercise
from .simulated import cdiv, compare_or_explain, problem, products_in_order, rand, run_matmul_kernel


# --------------------------------------------------------------------------------------------------
# For 10.1 and 10.3: sums kept wrongly, the busiest thread, the inputs a run drew
# --------------------------------------------------------------------------------------------------

def accumulation_mistakes(m, n, bk):
    "(values, mistake) for a register tile whose sums are kept wrongly across the tiles of k (bk wide) or the products."
    tile_sum, phase, last = 0., 0, None
    for last, ph in products_in_order(m, n, bk):
        if ph != phase: tile_sum, phase = 0., ph
        tile_sum = tile_sum + last
    yield tile_sum, "sets its sums to 0 again for every tile of k, so only the last tile's products remain"
    padded = m.shape[1] % bk != 0
    yield last, ("keeps only its last product" + (" (one of the zeros past k)" if padded else '') +
                 ": each product replaces the sum instead of being added to it")


def busiest(counts):
    "(count, (block, thread)) of the thread with the largest count, the first thread in order among equals."
    if not counts: return 0, (None, None)
    key, most = max(sorted(counts.items()), key=lambda kv: kv[1])
    return most, key


def run_with_seed(seed, draw, run):
    """run(), with torch's CPU generator seeded so that draw() gives the inputs run() drew; torch's generator is left
    as it was. Returns (what run returned, what draw returned)."""
    import torch
    with torch.random.fork_rng(devices=[]):
        torch.default_generator.manual_seed(seed)
        result = run()
        torch.default_generator.manual_seed(seed)
        return result, draw()


# --------------------------------------------------------------------------------------------------
# Shared arrays and barriers, read from a kernel's source, for 10.1 and 10.3
# --------------------------------------------------------------------------------------------------

def names_in(node): return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


# --------------------------------------------------------------------------------------------------
# 10.1: a register tile in the thread simulator
# --------------------------------------------------------------------------------------------------

@exercise('10.1', 'a register tile, in the thread simulator',
          hints=('A thread computes TM outputs of one column: per k it reads one value of Bs into a register and reuses it for TM multiply-adds. Its TM sums start at 0 once, before the loop over the tiles, and each product is added to them.',
                 "Inside the kk loop, read column tc's value of Bs once into a local variable, before the loop over t: each of the TM multiply-adds of that loop uses it with a different row of As."))
def register_tile_1d(ns, report):
    kernel, = need(ns, 'regtile_1d_k')
    barriers_in_place(report, kernel, 'regtile_1d_k')
    TM, BK = 4, 4
    threads = dim3(4, 2)                  # BN = 4 columns, BM = 2 * TM = 8 rows of outputs per block
    BM, BN = threads.y * TM, threads.x
    shapes = ((17, 8, 9), (9, 10, 7), (1, 9, 5), (8, 13, 1))
    for seed, (h, k, w) in enumerate(shapes):
        what = problem(h, k, w, TM=TM, BK=BK)
        (got, expected, trace), (m, n) = run_with_seed(
            seed, lambda: (rand(h, k), rand(k, w)),      # the inputs run_matmul_kernel draws
            lambda: run_matmul_kernel(run_threaded_blocks, kernel, h, k, w, threads, BM * BK + BK * BN,
                                      rows_per_block=BM, seed=seed, TM=TM, BK=BK))
        compare_or_explain(got, expected, what, lambda: accumulation_mistakes(m, n, BK))
        fmas = cdiv(k, BK) * BK * TM
        most, (block, thread) = trace.most('shared', 'read')
        limit = cdiv(k, BK) * BK * (TM + 1)
        if most > limit:
            raise NotYet(f"on {what}, thread (x={thread[0]}, y={thread[1]}) of block (x={block[0]}, y={block[1]}) reads "
                         f"{most} shared values for its {fmas} multiply-adds ({most / fmas:.2f} per multiply-add); a "
                         f"register tile of TM = {TM} needs at most {limit} ({(TM + 1) / TM:.2f} per multiply-add), so "
                         "its values of Bs are read again for multiply-adds that could share one read")
    report.ok("no race, no deadlock; right on " + ', '.join(f"{h}x{k} @ {k}x{w}" for h, k, w in shapes))
    report.ok(f"each thread reads at most {(TM + 1) / TM:.2f} shared values per multiply-add (TM={TM})")


# --------------------------------------------------------------------------------------------------
# 10.2: a 2-D register tile in CUDA C, A's tile transposed: read from nvcc's PTX
# --------------------------------------------------------------------------------------------------

PTX_SHARED_LOAD = re.compile(r'\bld\.shared(?:\.v\d)?\.f32\s+(\{[^}]*\}|%\w+)\s*,\s*\[([^\]]+)\]')
PTX_SHARED_STORE = re.compile(r'\bst\.shared(?:\.v\d)?\.f32\s+\[([^\]]+)\]\s*,\s*(\{[^}]*\}|%\w+)')
PTX_MULTIPLY = re.compile(r'\b(?:fma\.rn|mul(?:\.rn)?)\.f32\s+%\w+\s*,\s*(%\w+)\s*,\s*(%\w+)')
PTX_WIDE_GLOBAL_LOAD = re.compile(r'\bld\.global[\w.:]*\.v4\.f32\s+\{([^}]*)\}')


def address(text):
    "(base register, byte offset) of a PTX address such as `%r10+528`."
    base, _, offset = text.replace(' ', '').partition('+')
    return base, int(offset or "0", 0)


# The kernel's parameters in order: A, B, C, ...
REGTILE_PARAMETERS = ('A', 'B')


def tiles_of_arrays(ptx, origins, arrays):
    "{shared array: 'A' or 'B'}: the operand whose values the kernel stores into it (only arrays that hold one of them)."
    held = defaultdict(set)
    for hit in PTX_SHARED_STORE.finditer(ptx):
        into = {o for r in registers(hit.group(1)) for o in origins[r]} & arrays
        values = {o for r in registers(hit.group(2)) for o in origins[r]} & set(REGTILE_PARAMETERS)
        for array in into: held[array] |= values
    return {array: operands.pop() for array, operands in held.items() if len(operands) == 1}


def neighbour_groups(ptx):
    """The shared loads whose values feed multiply-adds, grouped by the 16 bytes they read (one 128-bit load's
    worth): (groups whose values all meet one common multiplier, [the tile, 'A' or 'B' (None if unknown), of each group
    whose values do not]). With A's tile transposed, each group of A's tile holds 4 rows of one k, all multiplied by that
    k's values of B; with As[m][k], a group holds 4 values of k of one row, which meet different values of B. The same
    holds for B's tile: Bs[k][n] keeps a thread's columns of one k side by side, a tile read as Bs[n][k] does not."""
    partners = defaultdict(set)
    for x, y in PTX_MULTIPLY.findall(ptx):
        partners[x].add(y); partners[y].add(x)
    origins, arrays = value_origins(ptx, REGTILE_PARAMETERS), set(shared_arrays(ptx).values())
    tiles = tiles_of_arrays(ptx, origins, arrays)
    groups = defaultdict(list)
    for i, hit in enumerate(PTX_SHARED_LOAD.finditer(ptx)):
        regs = registers(hit.group(1))
        base, offset = address(hit.group(2))
        read_from = origins[base] & arrays
        tile = tiles.get(read_from.pop()) if len(read_from) == 1 else None
        groups[('vector', i, tile) if len(regs) > 1 else (base, offset // 16, tile)] += regs
    same, across = 0, []
    for key, regs in groups.items():
        used = [r for r in regs if r in partners]
        if len(used) < 2: continue
        if set.intersection(*(partners[r] for r in used)): same += 1
        else: across.append(key[2])
    return same, across


def wide_loads_stored(ptx):
    """For each 128-bit global load, how its 4 values go into shared memory: 'together' (one 128-bit store, or 4
    stores to neighbouring words), 'apart' (4 stores to words of different rows), or None (not stored there)."""
    stores = {}
    for hit in PTX_SHARED_STORE.finditer(ptx):
        regs = registers(hit.group(2))
        base, offset = address(hit.group(1))
        for j, r in enumerate(regs): stores.setdefault(r, (base, offset + 4 * j, len(regs) > 1))
    ways = []
    for hit in PTX_WIDE_GLOBAL_LOAD.finditer(ptx):
        places = [stores.get(r) for r in registers(hit.group(1))]
        if None in places: ways.append(None); continue
        bases, offsets = {p[0] for p in places}, [p[1] for p in places]
        together = all(p[2] for p in places) or (len(bases) == 1 and offsets == list(range(offsets[0], offsets[0] + 16, 4)))
        ways.append('together' if together else 'apart')
    return ways


def transposed_a_tile(report, src, code):
    "Fail unless the PTX loads A's tile with float4s, scatters each float4 into 4 rows of shared memory, and reads it per k."
    from ..disassembly import cuda_ptx, kernel_listing
    ptx = code[1] if code[0] == 'PTX' else kernel_listing(('PTX', cuda_ptx(src)), 'regtile_2d')
    same, across = neighbour_groups(ptx)
    of_b = across.count('B')
    if len(across) > of_b:
        raise NotYet(f"A's tile is not stored transposed: in the PTX of regtile_2d, {len(across) - of_b} groups of 4 "
                     "neighbouring floats that the multiply-adds read from shared memory each hold values of 4 different k "
                     "(a row of As[m][k]), not a thread's 4 rows of one k (as B's groups hold its 4 columns of one k)")
    if of_b:
        raise NotYet(f"B's tile is read across k: in the PTX of regtile_2d, {of_b} groups of 4 neighbouring floats that the "
                     "multiply-adds read from B's tile in shared memory each hold values of 4 different k (the tile read as "
                     "Bs[n][k], transposed), not a thread's 4 columns of one k, as B itself lays them out")
    ways = wide_loads_stored(ptx)
    if len(ways) < 2:
        raise NotYet(f"A's tile is not read from global memory with 128-bit loads (the PTX of regtile_2d has {len(ways)} "
                     "128-bit global load(s): B's), so a thread's 4 values of A take 4 loads where B's take one")
    if 'apart' not in ways:
        raise NotYet("the 4 values of A's float4 go into shared memory side by side, as they lie in A's row, not into "
                     "4 rows of the transposed tile")
    report.ok(f"in the PTX: A's tile is read with 128-bit loads, each scattered into 4 rows of shared memory, and the "
              f"multiply-adds read it per k ({same} groups of 4 neighbouring shared floats, each of one k)")


REGTILE_NEEDS = {
    'local memory': (0, "the register tile spilled to local memory: some index of acc, a or b is not a compile-time "
                        "constant (a loop whose bound is not constant, or one not unrolled)"),
    'barriers': (2, "the kernel needs two __syncthreads() per tile of k: after storing the tiles, and after the "
                    "multiply-adds, before the next tiles overwrite them"),
    'multiply-adds': (8 * 8 * 8, "the inner loop does too few multiply-adds: each thread adds a TM x TN outer product per k, "
                                 "8*8*8 = 512 multiply-adds per tile of k, unrolled"),
}

# Notebook 10's step 3 (float4 loads, A's tile transposed and padded, float4 stores) takes 0.47x step 2's time on an
# H100 (0.435 ms against 0.924 ms); the reference solution is step 3 with scalar stores of C. A kernel that only
# transposes A's tile, with step 2's loading loop, stays near 1.0x.
REGTILE_TARGET = 0.8


@exercise('10.2', "a 2-D register tile in CUDA C, A's tile transposed",
          hints=("A row of A holds a thread's values of 4 k's side by side; the multiply-adds want, for one k, the thread's "
                 "TM rows side by side. Load A's float4 like B's, then write its 4 values into 4 different rows of AsT[k][m]; "
                 "B's tile stays as B lays it out, Bs[k][n]. Index acc, a and b only in loops with constant bounds, unrolled, "
                 "so they stay in registers.",
                 "const float4 a4 = load4(A, M, K, m0 + ar, k0 + ac, fast); then AsT[ac + j][ar] = a4.x, .y, .z, .w for "
                 "j = 0..3. Per k: a[] = AsT[k][row .. row+TM-1], b[] = Bs[k][col .. col+TN-1], acc[t][u] += a[t] * b[u], "
                 "every loop with a constant bound and #pragma unroll."), runs_on_gpu=True)
def register_tile_2d(ns, report):
    src, = need(ns, 'regtile_cuda_src')
    mod = compiled(report, src, 'regtile_cuda_src')
    code = require_machine_code(report, src, 'regtile_2d', REGTILE_NEEDS, 'regtile_2d')
    if code: transposed_a_tile(report, src, code)
    if mod is None: return
    if not gpu_here(): return report.skip("running it: correctness, out-of-bounds accesses and speed need a GPU")
    check_matmul_on_gpu(matmul_via(mod.matmul_regtile), "matmul_regtile",
                        GPU_SHAPES + ((129, 68, 260), (257, 1020, 131)))
    report.ok("right on the lecture's problem and awkward shapes")
    sanitized(report, src, SMALL_MATMUL_CALLS.format(fn='matmul_regtile', extra=''))
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    m, n, _ = lecture_problem('cuda')
    faster_than(report, matmul_via(mod.matmul_regtile), import_notebook('10').step2, (m, n), REGTILE_TARGET,
                "on the lecture's problem", "notebook 10's step 2")


# --------------------------------------------------------------------------------------------------
# 10.3: a register tile in Numba
# --------------------------------------------------------------------------------------------------

# (BM, BN, BK, TM, TN): in the simulator, blocks of 16 threads (a non-square thread tile first); on a GPU, 256 threads.
NUMBA_SIMULATOR_TILES = ((8, 16, 4, 2, 4), (8, 8, 4, 2, 2))
NUMBA_SIMULATOR_SHAPES = ((9, 8, 13), (5, 7, 3), (1, 9, 5), (6, 10, 1))
NUMBA_GPU_TILES = ((128, 128, 8, 8, 8), (64, 128, 8, 4, 8))
# Notebook 08's kernel (tw=16) takes 1.71 ms on an H100 and reads two shared values per multiply-add; the reference
# solution reads 0.25 per multiply-add, with all of a tile's loads in flight at once (notebook 10's Numba kernel, of
# the same design with warp tiling, takes 0.54 ms).
NUMBA_REGTILE_TARGET = 0.8


def tile_text(tile): return "BM={}, BN={}, BK={}, TM={}, TN={}".format(*tile)


def kernel_syntax(kernel, what):
    "(the kernel's function node, place(node) -> 'line N of the cell: `code`'), or (None, None) if its source is unknown."
    tree, first = function_tree(python_function(kernel, what))
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None) if tree else None
    if fn is None: return None, None
    code = python_function(kernel, what).__code__
    return fn, lambda node: where(code.co_filename, node.lineno + first - 1)


RUNTIME_ATTRIBUTES = {'threadIdx', 'blockIdx', 'blockDim', 'gridDim', 'grid', 'gridsize', 'laneid', 'shape', 'size'}


class ConstantIndices:
    """Which names are constants once Numba has unrolled the kernel's loops: the variables of `for ... in
    range(constant)` loops, the names the kernel never assigns (the factory's sizes), and names given values only
    from constants (a while loop's counter that starts at 0 and steps by 1 included). A kernel's arguments, thread
    and block indices, array elements and the bounds of loops that depend on them are not."""
    def __init__(self, fn):
        self.parent = {child: node for node in ast.walk(fn) for child in ast.iter_child_nodes(node)}
        self.arguments = {a.arg for a in fn.args.args}
        self.binds = defaultdict(list)          # name -> (where it gets a value, the value: an expression, a For, or None)
        for node in ast.walk(fn):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name): self.binds[target.id].append((node, node.value))
                    elif isinstance(target, ast.Tuple):
                        values = node.value.elts if isinstance(node.value, ast.Tuple) and len(node.value.elts) == len(target.elts) else None
                        for i, t in enumerate(target.elts):
                            if isinstance(t, ast.Name): self.binds[t.id].append((node, values[i] if values else None))
            elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
                self.binds[node.target.id].append((node, node.value))
            elif isinstance(node, ast.For):
                for name in names_in(node.target): self.binds[name].append((node, node))

    def constant(self, name, at, seen=frozenset()):
        "Whether `name`, used at node `at`, is a compile-time constant once the loops are unrolled."
        if name in seen: return False
        node = at
        while node in self.parent:
            node = self.parent[node]
            if isinstance(node, ast.For) and name in names_in(node.target): return self.constant_value(node, node, seen | {name})
        if name in self.arguments: return False
        return all(self.constant_value(value, node, seen | {name}) for node, value in self.binds.get(name, []))

    def constant_value(self, value, at, seen):
        "Whether an expression (or a For loop's variable) given at `at` is a compile-time constant."
        if isinstance(value, ast.For):
            loop = value.iter
            return (isinstance(loop, ast.Call) and isinstance(loop.func, ast.Name) and loop.func.id == 'range' and
                    all(self.constant_value(a, value, seen) for a in loop.args))
        if value is None or any(isinstance(n, ast.Subscript) or isinstance(n, ast.Attribute) and n.attr in RUNTIME_ATTRIBUTES
                                for n in ast.walk(value)): return False
        return all(self.constant(n, at, seen) for n in names_in(value))


def register_tile_problems(fn, place):
    """Sentences for what keeps a Numba register tile out of registers or makes it wrong, read from the kernel's
    syntax tree: no barrier at all, a cuda.local.array indexed by a value known only at run time, an accumulator
    never set to 0, shared memory read in the innermost loop of the multiply-adds."""
    if not any(is_barrier(n) for n in ast.walk(fn)):
        return ["the kernel never calls cuda.syncthreads(): its threads read tile elements other threads store, with "
                "nothing to make them wait for those stores, nor the next stores wait for their reads"]
    local = array_names(fn, 'local')
    constants = ConstantIndices(fn)
    for node in ast.walk(fn):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id in local:
            runtime = sorted(n for n in names_in(node.slice) if not constants.constant(n, node))
            if runtime:
                return [f"{ast.unparse(node)} at {place(node)} is indexed with {', '.join(runtime)}, which is known only at "
                        f"run time: Numba keeps a cuda.local.array in registers only where every index is a constant once "
                        f"the loops are unrolled"]
    updates = [n for n in ast.walk(fn) if isinstance(n, ast.AugAssign) and isinstance(n.target, ast.Subscript)
               and isinstance(n.target.value, ast.Name) and n.target.value.id in local]
    for acc in sorted({u.target.value.id for u in updates}):
        first_add = min(u.lineno for u in updates if u.target.value.id == acc)
        zeroed = [n for n in ast.walk(fn) if isinstance(n, ast.Assign) and n.lineno < first_add and
                  any(isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name) and t.value.id == acc for t in n.targets)]
        if not zeroed:
            update = next(u for u in updates if u.target.value.id == acc)
            return [f"{acc} is never set to 0 before the multiply-adds add to it ({place(update)}): a cuda.local.array "
                    f"starts with whatever its registers held"]
    shared = array_names(fn, 'shared')
    loops = [n for n in ast.walk(fn) if isinstance(n, (ast.For, ast.While))]
    for update in updates:
        around = [l for l in loops if any(n is update for n in ast.walk(l))]
        if not around: continue
        innermost = max(around, key=lambda l: l.lineno)
        reads = [n for n in ast.walk(innermost) if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Load)
                 and isinstance(n.value, ast.Name) and n.value.id in shared]
        if reads:
            return [f"{ast.unparse(reads[0])} at {place(reads[0])} reads shared memory in the innermost loop of the "
                    "multiply-adds, so each value is read again for every multiply-add it takes part in"]
    return []


SHARED_READS = Counter()
SHARED_READS_LOCK = threading.Lock()


def current_numba_thread():
    "((block x, y), (thread x, y)) of the thread Numba's simulator runs now."
    t = threading.current_thread()
    return (t.blockIdx.x, t.blockIdx.y), (t.threadIdx.x, t.threadIdx.y)


@contextlib.contextmanager
def shared_reads_counted():
    """While it lasts, the shared arrays of kernels in Numba's simulator count, per thread, the elements read from them
    (into SHARED_READS)."""
    import numpy as np
    from numba.cuda import types
    from numba.cuda.simulator import kernelapi
    from numba.cuda.np import numpy_support

    class CountedShared(np.ndarray):
        def __getitem__(self, index):
            value = super().__getitem__(index)
            if not isinstance(value, np.ndarray):
                with SHARED_READS_LOCK: SHARED_READS[current_numba_thread()] += 1
            return value

    simulated = kernelapi.FakeCUDAShared.array
    def array(self, shape, dtype, alignment=None):
        if shape == 0 or alignment is not None: return simulated(self, shape, dtype, alignment)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)      # one array per line of the kernel, as the simulator does
        made = self.__dict__.setdefault('_counted', {})
        if caller not in made:
            made[caller] = np.empty(shape, numpy_support.as_dtype(dtype) if isinstance(dtype, types.Type) else dtype).view(CountedShared)
        return made[caller]
    SHARED_READS.clear()
    kernelapi.FakeCUDAShared.array = array
    try: yield SHARED_READS
    finally: kernelapi.FakeCUDAShared.array = simulated


def simulated_launch(kernel, what, tile, h, w):
    "kernel[grid, threads] for an h x w output in Numba's simulator, on any machine."
    from numba.cuda.simulator.kernel import FakeCUDAKernel
    BM, BN, BK, TM, TN = tile
    return FakeCUDAKernel(python_function(kernel, what), device=False)[(cdiv(w, BN), cdiv(h, BM)), BM // TM * (BN // TN)]


def without_thread(sentence):
    """The sentence without the simulator's 'tid=[x, y, z] ctaid=[x, y, z]: ': which of the threads that fail
    there is reported first depends on timing, and the line and the message say what is wrong."""
    return re.sub(r'tid=\[\d+, \d+, \d+\] ctaid=\[\d+, \d+, \d+\]:?\s*', '', sentence)


def check_in_simulator(factory, report):
    "Correctness and shared reads per thread of the factory's kernels in Numba's simulator (on any machine)."
    import numpy as np, torch
    for tile in NUMBA_SIMULATOR_TILES:
        BM, BN, BK, TM, TN = tile
        with running(f"regtile_numba_kernel({', '.join(map(str, tile))})"): kernel = factory(*tile)
        for seed, (h, k, w) in enumerate(NUMBA_SIMULATOR_SHAPES):
            what = problem(h, k, w, **dict(zip(('BM', 'BN', 'BK', 'TM', 'TN'), tile)))
            g = torch.Generator().manual_seed(seed)
            m, n = torch.rand(h, k, generator=g), torch.rand(k, w, generator=g)
            out = np.full((h, w), np.nan, dtype=np.float32)
            try:
                with running(f"the kernel on {what} in Numba's simulator"), shared_reads_counted() as reads:
                    simulated_launch(kernel, 'regtile_numba_kernel', tile, h, w)(m.numpy(), n.numpy(), out)
            except NotYet as e:
                raise NotYet(without_thread(str(e))) from None
            compare_or_explain(torch.from_numpy(out), m @ n, f"{what}, in Numba's simulator",
                               lambda: accumulation_mistakes(m, n, BK))
            fmas = cdiv(k, BK) * BK * TM * TN
            limit = cdiv(k, BK) * BK * (TM + TN)
            most, (block, thread) = busiest(reads)
            if most > limit:
                raise NotYet(f"on {what}, thread (x={thread[0]}, y={thread[1]}) of block (x={block[0]}, y={block[1]}) reads "
                             f"{most} shared values for its {fmas} multiply-adds; a register tile of TM x TN = {TM} x {TN} "
                             f"needs at most {limit} ({(TM + TN) / (TM * TN):.2f} per multiply-add)")
    report.ok("right in Numba's simulator on " + ', '.join(f"{h}x{k} @ {k}x{w}" for h, k, w in NUMBA_SIMULATOR_SHAPES) +
              " with " + ' and with '.join(tile_text(t) for t in NUMBA_SIMULATOR_TILES))
    report.ok("each thread reads TM + TN shared values per k, for TM x TN multiply-adds")


def launch_on_gpu(nb08, kernel, tile, m, n, out):
    BM, BN, BK, TM, TN = tile
    h, w = out.shape
    kernel[(cdiv(w, BN), cdiv(h, BM)), BM // TM * (BN // TN), nb08.numba_stream()](
        *(nb08.as_kernel_array(t) for t in (m, n, out)))


def check_on_gpu(nb08, factory, report):
    "Correctness on the GPU (with a band around the output that must stay untouched), no local memory, speed."
    import torch
    for tile in NUMBA_GPU_TILES:
        with running(f"regtile_numba_kernel({', '.join(map(str, tile))})"): kernel = factory(*tile)
        for h, k, w in GPU_SHAPES:
            what = f"{problem(h, k, w)}, {tile_text(tile)}, on the GPU"
            m, n = rand(h, k, device='cuda'), rand(k, w, device='cuda')
            banded = torch.full((h + 1, w + 1), math.nan, device='cuda')
            with running(what):
                launch_on_gpu(nb08, kernel, tile, m, n, banded[:h, :w])
                torch.cuda.synchronize()
            compare(banded[:h, :w], m @ n, what, atol=1e-3)
            band = torch.cat([banded[h], banded[:h, w]])
            if not band.isnan().all():
                raise NotYet(f"{what}: the kernel writes outside the {h} x {w} output (into the band of elements just "
                             "past its last row and column): a bound check on the store is off by one or missing")
    report.ok("right on the GPU on the lecture's problem and awkward shapes, with " +
              ' and with '.join(tile_text(t) for t in NUMBA_GPU_TILES) + "; nothing written outside the output")
    tile = NUMBA_GPU_TILES[0]
    kernel = factory(*tile)
    def regtile(a, b):
        out = torch.empty(a.shape[0], b.shape[1], device=a.device)
        launch_on_gpu(nb08, kernel, tile, a, b, out)
        return out
    regtile(rand(8, 8, device='cuda'), rand(8, 8, device='cuda'))      # compiles it for contiguous arrays too
    from ..notebook_import import import_notebook
    ptx = '\n'.join(import_notebook('09').ptx_of(factory(*t)) for t in NUMBA_GPU_TILES)
    spills = count_in('PTX', ptx, 'local memory')
    if spills:
        raise NotYet(f"the register tile spilled to local memory ({spills} ld.local/st.local in the PTX): some index "
                     "of acc, a or b is not a constant once Numba has unrolled the loops")
    report.ok("no local memory in the PTX: the register tile stays in registers")
    from ..correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    faster_than(report, regtile, lambda a, b: nb08.matmul_numba_static(a, b, 16), (m, n), NUMBA_REGTILE_TARGET,
                f"on the lecture's problem, {tile_text(tile)}", "notebook 08's matmul_numba_static (tw=16)")


@exercise('10.3', 'a register tile in Numba',
          hints=("Each thread keeps a TM x TN tile of sums in cuda.local.array((TM, TN), f32), zeroed before the loop over "
                 "the tiles; per k it reads TM values of A and TN of B into two more local arrays, then adds their outer "
                 "product. Index the local arrays only with variables of `for ... in range(TM)` (or TN) loops, and wait "
                 "(cuda.syncthreads()) after the stores and after the reads of each tile.",
                 "After the stores: cuda.syncthreads(); for k in range(BK): a[i] = As[k, row + U(i)] for i in range(TM), "
                 "b[j] = Bs[k, col + U(j)] for j in range(TN), acc[i, j] += a[i] * b[j]; then cuda.syncthreads(). At the "
                 "end, store acc[i, j] into C[m0 + row + i, n0 + col + j] where that is inside C."), runs_on_gpu=True)
def numba_register_tile(ns, report):
    factory, = need(ns, 'regtile_numba_kernel')
    nb08 = numba_tools()
    tile = NUMBA_SIMULATOR_TILES[0]
    with running(f"regtile_numba_kernel({', '.join(map(str, tile))})"): kernel = factory(*tile)
    fn, place = kernel_syntax(kernel, f"regtile_numba_kernel({', '.join(map(str, tile))})")
    if fn is None: report.skip("the kernel's source (it could not be read): its barriers and register arrays")
    else:
        problems = register_tile_problems(fn, place)
        if problems: raise NotYet(problems[0])
        barriers_in_place(report, kernel, 'the kernel of regtile_numba_kernel')
        report.ok("the register arrays are indexed only by constants and unrolled loop variables; the sums start at 0; "
                  "no shared read in the innermost loop of the multiply-adds")
    check_in_simulator(factory, report)
    if nb08.SIMULATOR:
        return report.skip("on a GPU: correctness on large shapes, no local memory in the PTX, and the speed (needs a GPU)")
    check_on_gpu(nb08, factory, report)
