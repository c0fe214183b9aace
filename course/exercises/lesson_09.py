"""The exercises of notebook 09: Numba's performance.

09.1 is checked in three layers, each where it can run: the kernel's results in Numba's simulator (any
machine); its source, read as a syntax tree (unsigned indices before any use, while loops); and the PTX
Numba compiles for it, whose inner loop must cost no more instructions per multiply-add than notebook 09's
lean kernel. Numba compiles PTX without a GPU, with its NVVM library: on a machine without a GPU, where
this process runs Numba's simulator, the compiling happens in a child process with Numba's real CUDA
target. Only the speed needs the GPU.

09.2 checks how a timer measures, not only the number it returns: the function it times queues its work
on a fake device that works in a background thread (as a GPU does), and every reading of the clock,
call of the function and call of sync() is recorded in order. A default sync that can never wait (`lambda: None`)
is read from the source; on a GPU, the timer must also time one long kernel (torch.cuda._sleep) as long as CUDA
events do, given torch.cuda.synchronize and with its own default sync."""
import ast, contextlib, json, math, os, queue, re, statistics, subprocess, sys, threading

from .gpu_kernels import SIMULATOR_SHAPES, check_matmul_on_gpu, numba_matmul, numba_tools
from .learner_code import ROOT, Work
from .numba_simulation import kernel_place, python_function, simulate
from .parts import NotYet, barriers_in_place, compare, faster_than, gpu_here, need, running
from .registry import exercise
from .simulated import cdiv, problem, rand


# --------------------------------------------------------------------------------------------------
# 09.1: reading the kernel's source for signed indices and range loops
# --------------------------------------------------------------------------------------------------

INDEX_BUILTINS = ('threadIdx', 'blockIdx', 'blockDim', 'gridDim')


def is_unsigned_type(obj):
    "numba.uint32, numba.uint64, np.uint32, ...: a type whose values cannot be negative."
    import numba, numpy as np
    return (isinstance(obj, numba.types.Integer) and not obj.signed) or \
        (isinstance(obj, type) and issubclass(obj, np.unsignedinteger))


def resolve(node, names):
    "What a name or a dotted name (numba.uint32) stands for in the kernel's namespace, or None."
    if isinstance(node, ast.Name): return names.get(node.id)
    if isinstance(node, ast.Attribute):
        base = resolve(node.value, names)
        return getattr(base, node.attr, None) if base is not None else None
    return None


def kernel_names(fn, fdef):
    "The names a kernel sees: its module's, its closure's (a factory's constants) and its own aliases (U = numba.uint32)."
    names = dict(fn.__globals__)
    names.update({v: c.cell_contents for v, c in zip(fn.__code__.co_freevars, fn.__closure__ or ()) if c.cell_contents is not None})
    for node in ast.walk(fdef):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            value = resolve(node.value, names)
            if value is not None: names[node.targets[0].id] = value
    return names


def signed_index_problems(kernel):
    """Sentences for what keeps a Numba kernel's indices signed, in the order of its lines: a thread or block
    index, a size or a scalar argument used without an unsigned conversion, a counter started or advanced
    with a plain integer; then each `for` loop."""
    tree, place = kernel_place(kernel)
    if tree is None: return []
    fdef = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    names = kernel_names(python_function(kernel, 'the kernel'), fdef)
    parents = {child: node for node in ast.walk(fdef) for child in ast.iter_child_nodes(node)}

    def unsigned_call(node):
        return isinstance(node, ast.Call) and is_unsigned_type(resolve(node.func, names))

    def converted(node):
        while node in parents:
            parent = parents[node]
            if unsigned_call(parent) and node in parent.args: return True
            if isinstance(parent, ast.stmt): return False
            node = parent
        return False

    arrays = {n.value.id for n in ast.walk(fdef) if isinstance(n, (ast.Subscript, ast.Attribute)) and isinstance(n.value, ast.Name)
              and (isinstance(n, ast.Subscript) or n.attr == 'shape')}
    scalars = {a.arg for a in fdef.args.args} - arrays
    rebound = {}            # scalar argument -> line where it is replaced by its unsigned conversion (tw = U(tw))
    for node in ast.walk(fdef):
        if isinstance(node, ast.Assign) and unsigned_call(node.value):
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in scalars: rebound.setdefault(t.id, node.lineno)
    indexed = {n.id for s in ast.walk(fdef) if isinstance(s, ast.Subscript) for n in ast.walk(s.slice) if isinstance(n, ast.Name)}
    why = "so every index computed from it gets Python's fix-up for negative values, on every access"

    def plain_step(node):
        "(counter, step) for `i += 1` or `i = i + 1`: a counter advanced by a plain integer; else None."
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and isinstance(node.value, ast.Constant):
            name, step = node.target.id, node.value.value
        elif isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and \
                isinstance(node.value, ast.BinOp) and isinstance(node.value.left, ast.Name) and \
                node.value.left.id == node.targets[0].id and isinstance(node.value.right, ast.Constant):
            name, step = node.targets[0].id, node.value.right.value
        else: return None
        return (name, step) if type(step) is int else None

    problems = []
    for node in ast.walk(fdef):
        raw = None
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) and node.value.attr in INDEX_BUILTINS:
            raw = f"{place(node)}: `{ast.unparse(node)}` is a signed 64-bit integer in Numba, {why}"
        elif isinstance(node, ast.Attribute) and node.attr == 'shape':
            raw = f"{place(node)}: `{ast.unparse(node)}` holds signed 64-bit integers in Numba, {why}"
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in scalars and \
                node.lineno <= rebound.get(node.id, math.inf):
            raw = f"{place(node)}: the argument `{node.id}` is a signed 64-bit integer in Numba, {why}"
        if raw and not converted(node): problems.append((node.lineno, node.col_offset, raw))
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and type(node.value.value) is int:
            for t in node.targets:
                if isinstance(t, ast.Name) and t.id in indexed:
                    problems.append((node.lineno, node.col_offset,
                                     f"{place(node)}: the counter `{t.id}` starts as a plain {node.value.value}, which Numba types "
                                     f"as a signed 64-bit integer, and so is every index computed from it"))
        step = plain_step(node)
        if step and step[0] in indexed:
            problems.append((node.lineno, node.col_offset,
                             f"{place(node)}: the counter `{step[0]}` is advanced by a plain {step[1]}, a signed 64-bit integer "
                             f"in Numba, and an unsigned plus a signed integer is signed: the counter turns signed again"))
    loops = [(n.lineno, n.col_offset, f"{place(n)} is still a `for` loop: Numba runs it with a range object that "
              "checks and updates its own count on every pass, where a while loop would not")
             for n in ast.walk(fdef) if isinstance(n, ast.For)]
    return [p for *_, p in sorted(problems)] + [p for *_, p in sorted(loops)]


# --------------------------------------------------------------------------------------------------
# 09.1: the PTX Numba compiles, with or without a GPU
# --------------------------------------------------------------------------------------------------

PTX_MARK = '@@course-ptx@@ '
CPU_CC = (9, 0)          # the GPU architecture to compile for where there is no GPU to ask (an H100, as course.cuda_toolkit)


def compile_kernels(ns, kernels, signature, cc):
    """({label: PTX}, None) for kernels = {label: expression naming a Numba kernel (in the learner's
    namespace `ns`, with numba and notebook 09 as nb09)}, each compiled by Numba for compute capability cc;
    or (PTX so far, (label, the error in a line, whether Numba rejected the code)) at the first that does
    not compile (an error of another kind is this machine's: a missing library or driver)."""
    import numba
    from numba import cuda
    from ..notebook_import import import_notebook
    env = dict(ns, numba=numba, nb09=import_notebook('09'))
    sig = eval(signature, env)
    ptx = {}
    for label, expr in kernels.items():
        try:
            ptx[label] = cuda.compile_ptx(python_function(eval(expr, env), label), sig, cc=tuple(cc))[0]
        except NotYet: raise
        except Exception as e:
            from numba.core.errors import NumbaError
            return ptx, (label, numba_error_text(e), isinstance(e, NumbaError))
    return ptx, None


def numba_error_text(e):
    "Numba's compile error in a line: its first line, and the types it could not handle (' >>> getitem(...)')."
    lines = [l.strip() for l in str(e).strip().splitlines() if l.strip()]
    text = f"{type(e).__name__}: " + ' '.join(lines[:1] + [l for l in lines[1:] if l.startswith('>>>')][:1])
    if re.search(r'>>> getitem\(array\([^)]*\), float64\)', text):
        text += (" (an index became a float64: Numba computes an unsigned and a signed 64-bit integer together in "
                 "float64, so some integer in that index is signed, a plain 1 or 0, say)")
    return text


def point_numba_at_nvvm():
    """numba-cuda looks for NVRTC next to NVVM, and a CUDA toolkit installed without it (nvcc from pip can be)
    makes that lookup fail. Numba needs NVRTC only to pick the GPU architecture, which NUMBA_FORCE_CUDA_CC
    gives it: so give it the paths it finds for NVVM and libdevice, and none for NVRTC (numba-cuda 0.30)."""
    from numba.cuda import cuda_paths as paths
    try:
        paths.get_cuda_paths()
    except Exception:
        paths.get_cuda_paths._cached_result = dict(
            nvrtc=paths._env_path_tuple('missing', None), nvvm=paths._get_nvvm_path(), libdevice=paths._get_libdevice_path(),
            cudalib_dir=paths._get_cudalib_dir(), static_cudalib_dir=paths._get_static_cudalib_dir(),
            include_dir=paths._get_include_dir())


def ptx_child():
    "The child process of `ptx_elsewhere`: rebuild the learner's cells with Numba's real CUDA target, compile, print the PTX."
    request = json.loads(sys.stdin.read())
    try:
        point_numba_at_nvvm()
        import numba.cuda   # noqa: F401  (the real target, before the cells import notebook 08)
    except Exception as e:
        print(PTX_MARK + json.dumps(dict(ptx={}, error=['numba', f"{type(e).__name__}: {e}", False])), flush=True)
        return
    from numba.core import config
    from .learner_code import run_cells
    ns, _ = run_cells(Work.from_dict(request['work']))
    os.environ['NUMBA_ENABLE_CUDASIM'] = '0'     # notebook 08 (imported by the cells) turns it on where there is no GPU
    config.reload_config()
    try: ptx, error = compile_kernels(ns, request['kernels'], request['signature'], request['cc'])
    except NotYet as e: ptx, error = {}, ['learner', str(e), True]
    print(PTX_MARK + json.dumps(dict(ptx=ptx, error=error)), flush=True)


def ptx_elsewhere(work, kernels, signature):
    """On a machine without a GPU (this process runs Numba's simulator): compile in a child process with
    Numba's real CUDA target. Returns what compile_kernels returns, or (None, why) if that cannot run."""
    env = {k: v for k, v in os.environ.items() if k != 'NUMBA_ENABLE_CUDASIM'}
    env.update(NUMBA_FORCE_CUDA_CC='.'.join(map(str, CPU_CC)), PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get('PYTHONPATH')])))
    request = dict(work=work.as_dict(), kernels=kernels, signature=signature, cc=CPU_CC)
    try:
        res = subprocess.run([sys.executable, '-c', 'from course.exercises.lesson_09 import ptx_child; ptx_child()'],
                             input=json.dumps(request), capture_output=True, text=True, timeout=180, cwd=ROOT, env=env)
    except subprocess.TimeoutExpired:
        return None, "Numba's compiler took more than 3 minutes"
    line = next((l for l in res.stdout.splitlines() if l.startswith(PTX_MARK)), None)
    if line is None:
        return None, f"the compiling process failed ({(res.stderr.strip().splitlines() or ['no message'])[-1][:200]})"
    answer = json.loads(line[len(PTX_MARK):])
    return answer['ptx'], answer['error']


def lean_loop_ptx(report, ns, kernel_name):
    """{'learner': PTX, 'reference': PTX} of the learner's kernel and notebook 09's uint32 while-loop kernel,
    compiled by Numba for a GPU (this one, or an H100 where there is none); None where Numba cannot compile
    here (said in the report). A kernel of the learner's that Numba cannot compile is a failure."""
    from .isolation import progress
    kernels = {'reference': "nb09.dynamic_numba_kernel(numba.uint32, while_loop=True)", 'learner': kernel_name}
    signature = "(numba.float32[:, ::1], numba.float32[:, ::1], numba.float32[:, ::1], numba.int64)"
    progress("compiling PTX with Numba")
    if not numba_tools().SIMULATOR:
        import torch
        ptx, error = compile_kernels(ns, kernels, signature, torch.cuda.get_device_capability())
        where = "for this GPU"
    elif report.work is None or not report.work.cells:
        report.skip("the PTX of the inner loop (its cells are needed to compile it for a GPU in a separate process)")
        return None
    else:
        ptx, error = ptx_elsewhere(report.work, kernels, signature)
        where = f"for sm_{CPU_CC[0]}{CPU_CC[1]} (an H100; no GPU needed)"
    if error and error[0] == 'learner' and error[2]:
        raise NotYet(f"Numba cannot compile {kernel_name} for the GPU: {error[1]}")
    if ptx is None or error:
        reason = error if ptx is None else error[1]
        report.skip(f"the PTX of the inner loop: Numba cannot compile for a GPU on this machine ({reason})")
        return None
    return ptx, where


@exercise('09.1', "a Numba kernel without Python's index fix-ups",
          hints=("Numba treats indices as signed Python integers: every index gets a check for negative values. Unsigned indices need none: convert the thread and block indices, the sizes and tw with numba.uint32, and start and advance every counter with unsigned values. A while loop needs no range object, and a sum started as numba.float32(0.0) stays float32.",
                 "Convert threadIdx, blockIdx, the sizes and tw with numba.uint32(...) at the top (tw = U(tw)), and write both loops as while loops whose counters start at U(0) and advance by U(1) or tw."), runs_on_gpu=True)
def numba_lean_loop(ns, report):
    import torch
    from ..disassembly import loop_cost
    kernel, = need(ns, 'lean_dynamic_kernel')
    python_function(kernel, 'lean_dynamic_kernel')
    barriers_in_place(report, kernel, 'lean_dynamic_kernel')
    for (h, k, w), tw in SIMULATOR_SHAPES:
        m, n, out = rand(h, k), rand(k, w), torch.full((h, w), math.nan)
        with running(f"lean_dynamic_kernel on {problem(h, k, w, tw=tw)} in Numba's simulator"):
            simulate(kernel, 'lean_dynamic_kernel', (cdiv(w, tw), cdiv(h, tw)), (tw, tw), dict(m=m, n=n, out=out), tw,
                     shared_bytes=2 * tw * tw * 4)
        compare(out, m @ n, f"{problem(h, k, w, tw=tw)}, in Numba's simulator")
    report.ok("right in Numba's simulator on 5x7 @ 7x3, 1x9 @ 9x5, 6x10 @ 10x1 (tw=4) and 9x13 @ 13x11 (tw=8)")
    problems = signed_index_problems(kernel)
    if problems: raise NotYet(problems[0])
    report.ok("its source converts the thread and block indices, the sizes and tw to unsigned before use, and its loops are while loops")
    compiled = lean_loop_ptx(report, ns, 'lean_dynamic_kernel')
    if compiled:
        ptx, where = compiled
        cost, target = loop_cost(ptx['learner']), loop_cost(ptx['reference'])
        if 'fma.rn.f32' not in ptx['learner']:
            f64 = re.search(r'\b(?:fma\.rn|add\.rn|add)\.f64\b', ptx['learner'])
            raise NotYet(f"the PTX Numba compiles {where} has no float32 multiply-add (fma.rn.f32)" + (
                ": its sums are float64. A plain 0.0 is a float64 in Numba, and so is everything added to it: the sum "
                "starts as a float64" if f64 else ": the products are not added up as float32 multiply-adds"))
        if cost is not None and cost > 1.25 * target:
            raise NotYet(f"the inner loop Numba compiles {where} costs {cost:.1f} PTX instructions per multiply-add; notebook "
                         f"09's uint32 while-loop kernel costs {target:.1f}: some index is still signed (a plain integer "
                         "somewhere in it?), or the loop is still a range loop")
        report.ok(f"the inner loop Numba compiles {where} costs {cost:.1f} PTX instructions per multiply-add (notebook 09's "
                  f"lean kernel: {target:.1f})" if cost else f"the inner loop Numba compiles {where} is unrolled")
    if not gpu_here(): return report.skip("running it on a GPU: correctness on large shapes, and its speed (needs a GPU)")
    nb08 = numba_tools()
    for tw in (16, 32):
        check_matmul_on_gpu(numba_matmul(nb08, kernel, tw, dynamic=True), f"lean_dynamic_kernel, tw={tw}")
    report.ok("right on the GPU on the lecture's problem and awkward shapes, with tw = 16 and 32")
    import numba
    from ..correctness import lecture_problem
    from ..notebook_import import import_notebook
    best = import_notebook('09').dynamic_variant(index=numba.uint32, while_loop=True)
    m, n, _ = lecture_problem('cuda')
    faster_than(report, numba_matmul(nb08, kernel, 16, dynamic=True), best, (m, n), 1.1, "on the lecture's problem, tw=16",
                "notebook 09's uint32 while-loop kernel")


# --------------------------------------------------------------------------------------------------
# 09.2: a timer, checked by how it measures
# --------------------------------------------------------------------------------------------------

class FakeGPU:
    """A device whose work runs in the background, as a GPU's does: launch(ms) queues ms milliseconds of
    work and returns at once; sync() returns once all queued work is done."""
    def __init__(self):
        self.queue = queue.Queue()
        self.worker = threading.Thread(target=self._work, daemon=True, name='the check\'s fake GPU')
        self.worker.start()

    def _work(self):
        import time
        for ms in iter(self.queue.get, None):
            time.sleep(ms / 1000)
            self.queue.task_done()
        self.queue.task_done()

    def launch(self, ms): self.queue.put(ms)
    def sync(self): self.queue.join()

    def close(self):
        self.queue.put(None)
        self.worker.join()


# Seconds per unit of each clock of the time module the check follows.
CLOCKS = {'perf_counter': 1, 'perf_counter_ns': 1e-9, 'monotonic': 1, 'monotonic_ns': 1e-9, 'time': 1, 'time_ns': 1e-9}


@contextlib.contextmanager
def clock_readings(events):
    "Record in events, as ('clock', seconds), each reading of a clock of the time module by this thread."
    import time
    me = threading.get_ident()
    originals = {name: getattr(time, name) for name in CLOCKS}
    def followed(clock, scale):
        def read():
            value = clock()
            if threading.get_ident() == me: events.append(('clock', value * scale))
            return value
        return read
    for name, clock in originals.items(): setattr(time, name, followed(clock, CLOCKS[name]))
    try: yield
    finally:
        for name, clock in originals.items(): setattr(time, name, clock)


def timed_intervals(events):
    """([(ms between two readings of the clock, calls of fn between them, whether sync() came after the last
    call)] for each pair of consecutive readings with a call between them, whether the first call of fn was
    between two readings)."""
    out, last, calls, synced = [], None, 0, False
    first_call = next((i for i, (kind, _) in enumerate(events) if kind == 'fn'), None)
    readings = [i for i, (kind, _) in enumerate(events) if kind == 'clock']
    first_timed = first_call is not None and any(i < first_call for i in readings) and any(i > first_call for i in readings)
    for kind, value in events:
        if kind == 'clock':
            if last is not None and calls: out.append(((value - last) * 1000, calls, synced))
            last, calls, synced = value, 0, False
        elif kind == 'fn': calls, synced = calls + 1, False
        elif kind == 'sync': synced = True
    return out, first_timed


WORK_MS = (4, 3, 4, 5, 24)      # the fake GPU work of each call, in turn: median 4 ms, mean 8 ms, fastest 3 ms
COMPILE_MS = 60                 # the first call's CPU time before it launches, as Numba's compiling


def method_problem(events, t):
    "The first thing wrong with how time_ms measured (from the events), or with the number it returned, or None."
    intervals, first_timed = timed_intervals(events)
    if not any(e[0] == 'clock' for e in events):
        return ("time_ms read no clock the check can follow: it follows the clocks of the time module "
                "(time.perf_counter() and its like), called through the module")
    if not intervals: return "time_ms never calls fn between two readings of the clock"
    if first_timed:
        return (f"time_ms times the first call of fn, which pays for compiling (here {COMPILE_MS} ms): no untimed warm-up "
                "call comes before the timing")
    first_reading = next(i for i, (kind, _) in enumerate(events) if kind == 'clock')
    before = [kind for kind, _ in events[:first_reading] if kind in ('fn', 'sync')]
    if before and before[-1] == 'fn':
        return ("time_ms starts the clock right after the warm-up calls, with their work still queued: the first timed call "
                "then also waits for it, because no sync() comes between the warm-up and the first reading of the clock")
    batched = next((c for _, c, _ in intervals if c > 1), None)
    if batched:
        return (f"time_ms times {batched} calls of fn between two readings of the clock, which gives their mean, and one slow "
                "call pulls a mean up, where the median of calls timed one by one would not")
    unsynced = [ms for ms, _, synced in intervals if not synced]
    if unsynced:
        return (f"time_ms reads the clock after fn returns but before sync(): fn only queues its work, as a kernel launch "
                f"does, so that measures the launch ({statistics.median(unsynced):.2f} ms), not the work (about "
                f"{statistics.median(WORK_MS)} ms)")
    if len(intervals) < 5:
        return (f"time_ms times fn {len(intervals)} time(s): so few calls are noise, where the check asks for the "
                "median of at least 5")
    if not isinstance(t, (int, float)) or isinstance(t, bool):
        return f"time_ms returned {type(t).__name__}, where the task asks for the milliseconds as a float"
    times = sorted(ms for ms, _, _ in intervals)
    low, high, median = statistics.median_low(times), statistics.median_high(times), statistics.median(times)
    if 0.97 * low <= t <= 1.03 * high: return None
    said = f"time_ms returned {t:.3g} for calls whose median was {median:.2f} ms"
    if abs(t - statistics.mean(times)) < 0.05 * statistics.mean(times):
        return f"{said}: that is their mean, which one slow call pulls up, not their median"
    if abs(t - times[0]) < 0.03 * times[0]: return f"{said}: that is the fastest call, not the median"
    if abs(t * 1000 - median) < 0.03 * median: return f"{said}: that is seconds, not milliseconds"
    return f"{said}: that is not the median of the timed calls, in milliseconds"


# The GPU work of the timing a GPU checks: one kernel that spins for this many clock cycles (torch.cuda._sleep), about
# 10 ms on a GPU at 1 to 2 GHz. A timer that does not wait for the GPU times only its launch, some microseconds.
SPIN_CYCLES = 15_000_000
# Below this share of the GPU's time, a timer measured the launches, not the work.
WAITED_SHARE = 0.5
# What a default sync that waits for a GPU mentions in its source.
WAITS_FOR_A_GPU = re.compile(r'cuda|synchronize|Event|Stream')


def default_sync_source(time_ms):
    "The source of the default of time_ms's `sync` argument (a keyword of its def), or None where it has none or it is unknown."
    from .learner_code import function_tree
    tree, _ = function_tree(time_ms)
    fdef = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)), None) if tree else None
    if fdef is None: return None
    positional = fdef.args.posonlyargs + fdef.args.args
    defaults = dict(zip([a.arg for a in positional][len(positional) - len(fdef.args.defaults):], fdef.args.defaults))
    defaults.update((a.arg, d) for a, d in zip(fdef.args.kwonlyargs, fdef.args.kw_defaults) if d is not None)
    return ast.unparse(defaults['sync']) if 'sync' in defaults else None


def default_sync_problem(time_ms):
    """The sentence for a default sync that can never wait for a GPU (`lambda: None`, None), read from the source
    where nothing in time_ms mentions CUDA; else None. (A default that names CUDA is tried on a GPU instead.)"""
    from .learner_code import source_of
    default = default_sync_source(time_ms)
    if default is None or WAITS_FOR_A_GPU.search(source_of(time_ms)): return None
    if not re.fullmatch(r'None|lambda[^:]*:\s*(?:None|0|\.\.\.|\(\))', default): return None
    return (f"time_ms's default sync, `{default}`, does not wait for the GPU: called as time_ms(fn, *args) on a GPU, "
            "the timer reads the clock while the work is still queued and measures the launches, not the work")


def waits_for_the_gpu(time_ms, report):
    """On a GPU: time one kernel that spins for SPIN_CYCLES clock cycles with time_ms, given sync=torch.cuda.synchronize
    and then with its own default sync; fail where it reports far less than CUDA events measure."""
    import inspect, torch
    from ..timing import cuda_time_ms
    def spin(): torch.cuda._sleep(SPIN_CYCLES)
    true = cuda_time_ms(spin)
    try: sync = inspect.signature(time_ms).parameters.get('sync')
    except (TypeError, ValueError): sync = None             # a callable whose arguments Python cannot list
    ways = [("time_ms(spin, sync=torch.cuda.synchronize)", dict(sync=torch.cuda.synchronize),
             "even when given sync=torch.cuda.synchronize")]
    if sync is not None and sync.default is not inspect.Parameter.empty:
        ways.append(("time_ms(spin)", {}, f"with its default sync ({default_sync_source(time_ms) or 'as defined'})"))
    for call, kwargs, said in ways:
        with running(call): t = time_ms(spin, **kwargs)
        torch.cuda.synchronize()
        if not isinstance(t, (int, float)) or t < WAITED_SHARE * true:
            shown = f"{t:.3f} ms" if isinstance(t, (int, float)) else repr(t)
            raise NotYet(f"time_ms says {shown} for one kernel that spins on the GPU for {true:.2f} ms (CUDA events), "
                         f"{said}: the timer does not wait for the GPU, so it measures the launch, not the work")
    report.ok(f"time_ms waits for the GPU: for one kernel that spins {true:.2f} ms (CUDA events) it gives about that, with "
              "sync=torch.cuda.synchronize" + (" and with its default sync" if len(ways) > 1 else ''))


@exercise('09.2', 'a timer you can trust',
          hints=('The first call pays for compiling, a GPU call returns before its work is done, and one slow call pulls a mean far off: warm up, then time each call on its own with sync() before every reading of the clock, and return the median in milliseconds. On a GPU the default sync must wait for it (torch.cuda.synchronize).',
                 'Call fn a few times and sync(); then for each of ~21 reps: t0 = time.perf_counter(); fn(*args); sync(); record (time.perf_counter() - t0) * 1000. Return statistics.median of those.'), runs_on_gpu=True)
def trustworthy_timer(ns, report):
    import time
    time_ms, = need(ns, 'time_ms')
    token, calls, events = object(), [0], []
    gpu = FakeGPU()

    def fn(arg):
        if arg is not token: raise NotYet(f"time_ms does not pass its *args on to fn: fn got a {type(arg).__name__}, not the argument given to time_ms")
        calls[0] += 1
        events.append(('fn', calls[0]))
        if calls[0] == 1: time.sleep(COMPILE_MS / 1000)
        gpu.launch(WORK_MS[(calls[0] - 1) % len(WORK_MS)])

    def sync():
        events.append(('sync', None))
        gpu.sync()

    try:
        with running("time_ms(fn, arg, sync=sync)"), clock_readings(events): t = time_ms(fn, token, sync=sync)
    finally:
        gpu.close()
    problem = method_problem(events, t) or default_sync_problem(time_ms)
    if problem: raise NotYet(problem)
    report.ok(f"{t:.2f} ms for work of about 4 ms a call, with a {COMPILE_MS} ms first call and a 24 ms call in every 5, "
              "launched in the background: warm-up, sync() before each reading of the clock, and the median")
    if not gpu_here(): return report.skip("timing GPU work against CUDA events, and whether the timer waits for a GPU "
                                          "with torch.cuda.synchronize and with its default sync (needs a GPU)")
    waits_for_the_gpu(time_ms, report)
    import torch
    from ..timing import cuda_time_ms
    m = rand(4096, 4096, device='cuda')
    true = cuda_time_ms(torch.mm, m, m)
    with running("time_ms(torch.mm, m, m, sync=torch.cuda.synchronize)"):
        t = time_ms(torch.mm, m, m, sync=torch.cuda.synchronize)
    if not 0.5 * true <= t <= 2 * true:
        raise NotYet(f"time_ms says {t:.3f} ms for a 4096x4096 matmul that takes {true:.3f} ms on the GPU (CUDA events)")
    report.ok(f"{t:.3f} ms for a 4096x4096 matmul on the GPU; CUDA events say {true:.3f} ms")
