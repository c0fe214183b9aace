"""The Python GPU simulator the exercise checker runs a learner's kernel in: it checks and counts.

The course's own runners (notebooks 01-04) run a kernel; these run it the same way, with the same
calling conventions, and watch it:

- every index into a buffer is checked against the buffer's size (a GPU would read or write someone
  else's memory, or crash; Python's negative indices would silently wrap);
- every read and write of global and shared memory is counted per CUDA thread, as GPU-Puzzles scores a
  kernel (per block for notebook 02's block kernels, which have no threads of their own);
- in the one-Python-thread-per-CUDA-thread runner (notebook 04's), the threads start in a shuffled order
  and yield to each other at random points, and every shared-memory access is stamped with the number
  of barriers its thread has passed: two threads touching the same shared element between the same two
  barriers, one of them writing, is a race, whatever order they happened to run in this time;
- a thread that returns while others wait at a barrier is a deadlock, reported instead of hanging.

Findings are raised as `KernelFault` (with a sentence naming the block, the thread and the element)."""
import random, sys, threading, time
from collections import Counter, defaultdict, namedtuple

dim3 = namedtuple('dim3', ['x', 'y', 'z'], defaults=(1, 1))


class KernelFault(RuntimeError):
    "The simulated kernel did something a GPU kernel must not: out of bounds, a race, a deadlock."


def who(block, thread):
    "A thread's name in a message: 'thread (x=1, y=0) of block (x=0, y=2)'."
    b = f"block (x={block[0]}, y={block[1]})" if block is not None else "the block kernel"
    return f"thread (x={thread[0]}, y={thread[1]}) of {b}" if thread is not None else b


class Trace:
    """What one simulated launch did: counts of reads and writes per thread, the shared-memory stamps
    used to find races, and which thread wrote each output element."""
    def __init__(self):
        self.counts = defaultdict(Counter)     # (block, thread) -> Counter{('global', 'read'): n, ...}
        self.local = threading.local()          # .block, .thread, .epoch of the running CUDA thread
        self.lock = threading.Lock()
        self.shared_state = {}                  # (block, buffer id, index) -> [last writer, its epoch, {reader: epoch}]
        self.races_checked = True               # False: record the accesses only (to see a whole launch that races)
        self.writers = {}                       # (buffer name, index) -> (block, thread) that first wrote it
        self.addresses = defaultdict(list)      # (block, thread) -> [(space, kind, buffer name, index)] in order
        self.yield_chance = 0.0
        self.rng = random.Random(0)

    def current(self):
        l = self.local
        return getattr(l, 'block', None), getattr(l, 'thread', None), getattr(l, 'epoch', 0)

    def most(self, where, kind, *more):
        """(count, (block, thread)) for the thread that made the most `kind` accesses ('read'/'write') to
        `where` and `more`: memory spaces ('global', 'shared') or global buffers by name ('m', 'n')."""
        if not self.counts: return 0, (None, None)
        total = lambda t: sum(self.counts[t][(w, kind)] for w in (where, *more))
        # Among equals, the first thread in (block, thread) order: the same on every run, whichever started first.
        order = lambda t: tuple((-1, -1) if part is None else tuple(part) for part in t)
        key = max(sorted(self.counts, key=order), key=total)
        return total(key), key

    def maybe_yield(self):
        if self.yield_chance and self.rng.random() < self.yield_chance: time.sleep(0)


class Buffer:
    """A flat buffer (a list of floats) whose every access is checked and counted. Slicing gives a view
    of the same memory, as the lecture's `shared[:tw*tw]` does."""
    def __init__(self, name, data, space, trace, offset=0, length=None, base=None):
        self.name, self.data, self.space, self.trace = name, data, space, trace
        self.offset, self.length = offset, len(data) if length is None else length
        self.base = base or self

    def __len__(self): return self.length

    def _index(self, i, kind):
        if isinstance(i, slice):
            start, stop, step = i.indices(self.length)
            if step != 1: raise KernelFault(f"{self.name}[{i}]: only plain slices [a:b] of a buffer are simulated")
            return Buffer(self.name, self.data, self.space, self.trace, self.offset + start, max(0, stop - start), self.base)
        try: j = int(i)
        except (TypeError, ValueError):
            raise KernelFault(f"{self.name}[{i!r}]: an index into {self.name} must be one integer "
                              f"(buffers are flat: write r*width + c, not [r, c])") from None
        if j != i or isinstance(i, float):
            raise KernelFault(f"{self.name}[{i!r}]: the index is a float; an index into memory is an integer (use // "
                              "for a division, not /)")
        if not 0 <= j < self.length:
            block, thread, _ = self.trace.current()
            view = f" (the view {self.name}[{self.offset}:{self.offset + self.length}])" if self.base is not self else ''
            raise KernelFault(f"{who(block, thread)} {kind}s {self.name}[{j}]{view}, outside the buffer, which has "
                              f"{self.length} elements (0 to {self.length - 1}): a bound check is missing or wrong, or the index itself is")
        return j

    def __getitem__(self, i):
        j = self._index(i, 'read')
        if isinstance(j, Buffer): return j
        self._account(j, 'read')
        return self.data[self.offset + j]

    def __setitem__(self, i, v):
        j = self._index(i, 'write')
        if isinstance(j, Buffer): raise KernelFault(f"{self.name}: assigning to a slice is not a thread's single write")
        self._account(j, 'write')
        self.data[self.offset + j] = float(v)

    def _account(self, j, kind):
        t = self.trace
        block, thread, epoch = t.current()
        t.maybe_yield()
        with t.lock:
            t.counts[(block, thread)][(self.space, kind)] += 1
            if self.space == 'global': t.counts[(block, thread)][(self.name, kind)] += 1
            t.addresses[(block, thread)].append((self.space, kind, self.name, self.offset + j))
            if self.space == 'shared' and thread is not None and t.races_checked: self._race_check(block, thread, epoch, j, kind)
            if self.space == 'global' and kind == 'write' and thread is not None:
                first = t.writers.setdefault((self.name, self.offset + j), (block, thread))
                if first != (block, thread):
                    raise KernelFault(f"{who(block, thread)} writes {self.name}[{self.offset + j}], which {who(*first)} "
                                      "wrote too: each output element must have one thread")

    def _race_check(self, block, thread, epoch, j, kind):
        key = (block, id(self.base), self.offset + j)
        writer, w_epoch, readers = self.trace.shared_state.setdefault(key, [None, -1, {}])
        where = f"{self.name}[{self.offset + j}]"
        if kind == 'read':
            if writer not in (None, thread) and w_epoch == epoch:
                raise KernelFault(f"a barrier is missing: {who(block, thread)} reads {where}, which thread "
                                  f"(x={writer[0]}, y={writer[1]}) writes with no barrier between them (after "
                                  f"{epoch} barrier(s) each), so whether it reads the value before or after that write depends on timing")
            readers[thread] = epoch
        else:
            late = [r for r, e in readers.items() if e == epoch and r != thread]
            if late:
                r = late[0]
                raise KernelFault(f"a barrier is missing: {who(block, thread)} overwrites {where} while thread "
                                  f"(x={r[0]}, y={r[1]}) may still be reading it (no barrier between the read "
                                  f"and this write; both after {epoch} barrier(s))")
            if writer not in (None, thread) and w_epoch == epoch:
                raise KernelFault(f"a barrier is missing: {who(block, thread)} and thread (x={writer[0]}, "
                                  f"y={writer[1]}) both write {where} between the same two barriers")
            self.trace.shared_state[key] = [thread, epoch, {}]

    def tolist(self): return self.data[self.offset:self.offset + self.length]


def buffers(trace, space='global', **tensors):
    "A Buffer for each named tensor (flattened, values copied), in memory space `space`."
    return {name: Buffer(name, t.detach().flatten().tolist(), space, trace) for name, t in tensors.items()}


# --------------------------------------------------------------------------------------------------
# Runners, one per calling convention of the course
# --------------------------------------------------------------------------------------------------

def name_thread(block, thread):
    "Name the running Python thread after the CUDA thread it simulates (a stopped loop's sentence uses it)."
    threading.current_thread().cuda_name = who(block, thread)


def run_grid(kernel, blocks, threads, *args, trace):
    "Notebook 01's runner: kernel(blockIdx, threadIdx, blockDim, *args) for every thread, one after another."
    try:
        for by in range(blocks.y):
            for bx in range(blocks.x):
                for ty in range(threads.y):
                    for tx in range(threads.x):
                        trace.local.block, trace.local.thread = (bx, by), (tx, ty)
                        name_thread((bx, by), (tx, ty))
                        kernel(dim3(bx, by), dim3(tx, ty), threads, *args)
    finally:
        trace.local.block = trace.local.thread = None
        threading.current_thread().cuda_name = None


def run_block_kernels(kernel, blocks, threads, shared_size, *args, trace, **kwargs):
    """Notebook 02's runner: kernel(blockIdx, blockDim, shared, *args) once per block, each with its own
    shared buffer of `shared_size` floats. While it runs, `run_threads` (notebook 03's) may be called."""
    for by in range(blocks.y):
        for bx in range(blocks.x):
            trace.local.block, trace.local.thread, trace.local.epoch = (bx, by), None, 0
            name_thread((bx, by), None)
            shared = Buffer('shared', [0.0] * shared_size, 'shared', trace)
            kernel(dim3(bx, by), threads, shared, *args, **kwargs)
    trace.local.block = None
    threading.current_thread().cuda_name = None


def traced_run_threads(trace):
    "Notebook 03's run_threads(f, blockDim, *args): f(tr, tc, *args) for each thread of the block, counted per thread."
    def run_threads(f, blockDim, *args, **kwargs):
        for tr in range(blockDim.y):
            for tc in range(blockDim.x):
                trace.local.thread = (tc, tr)
                name_thread(trace.local.block, (tc, tr))
                f(tr, tc, *args, **kwargs)
        trace.local.thread = None
        # Each call ends as a barrier does: the next call's accesses are in the next phase.
        trace.local.epoch = getattr(trace.local, 'epoch', 0) + 1
    return run_threads


class CheckedBarrier:
    """`syncb.wait()` for the threads of one block: counts the barriers each thread has passed (the
    epoch that stamps its shared-memory accesses) and fails, instead of hanging, when it can never fill.
    It also notes the line each thread waits at: threads of one block that meet at different barriers
    (one inside an `if`, say) are out of step, as on a GPU, whatever the values."""
    def __init__(self, parties, trace, timeout=20.0):
        self.barrier = threading.Barrier(parties, timeout=timeout)
        self.trace, self.returned, self.lock = trace, 0, threading.Lock()
        self.sites = {}     # epoch -> (line, thread) of the first thread to wait there

    def wait(self):
        caller = sys._getframe(1)
        site = (caller.f_code.co_filename, caller.f_lineno)
        thread, epoch = self.trace.local.thread, self.trace.local.epoch
        with self.lock:
            if self.returned: self.barrier.abort()   # a thread has returned: it will never arrive here
            first = self.sites.setdefault(epoch, (site, thread))
        if first[0] != site:
            self.barrier.abort()
            raise KernelFault(f"barriers out of step: thread (x={thread[0]}, y={thread[1]}) waits at line {site[1]} "
                              f"while thread (x={first[1][0]}, y={first[1][1]}) waits at line {first[0][1]}, each at "
                              f"its barrier number {epoch + 1}: a barrier inside an `if` (or after an early "
                              "`return`) is reached by some threads only. Every thread of the block must pass the same "
                              "barriers: keep syncb.wait() out of ifs and guard only the loads and stores")
        self.barrier.wait()
        self.trace.local.epoch += 1

    def thread_returned(self):
        with self.lock:
            self.returned += 1
            if self.barrier.n_waiting: self.barrier.abort()


def stop_on_timeout(fn):
    "Have the watchdog around this launch (if any) call fn when the kernel runs out of time."
    from .exercises.watchdog import ACTIVE
    if ACTIVE: ACTIVE[-1].on_stop(fn)


def join_or_stop(pool, syncb):
    """Wait for the block's threads. If the wait is interrupted (Ctrl-C in Jupyter, or a watchdog), break the
    barrier and stop every thread still running the kernel before passing the interruption on."""
    try:
        for t in pool: t.join()
    except BaseException:
        from .exercises.watchdog import KernelTimeout, raise_in
        syncb.barrier.abort()
        deadline = time.monotonic() + 5
        while any(t.is_alive() for t in pool) and time.monotonic() < deadline:
            for t in pool:
                if t.is_alive(): raise_in(t.ident, KernelTimeout)
            time.sleep(0.02)
        raise


def run_threaded_blocks(kernel, blocks, threads, shared_size, *args, trace, seed=0, **kwargs):
    """Notebook 04's runner, made adversarial: kernel(blockIdx, threadIdx, blockDim, shared, syncb, *args)
    with one Python thread per CUDA thread, started in a shuffled order, yielding at random accesses."""
    rng = random.Random(seed)
    trace.yield_chance, trace.rng = 0.3, rng
    for by in range(blocks.y):
        for bx in range(blocks.x):
            block = (bx, by)
            shared = Buffer('shared', [0.0] * shared_size, 'shared', trace)
            syncb = CheckedBarrier(threads.x * threads.y, trace)
            faults, stuck, returned = [], [], []

            def cuda_thread(tid):
                trace.local.block, trace.local.thread, trace.local.epoch = block, tid, 0
                name_thread(block, tid)
                try:
                    kernel(dim3(*block), dim3(*tid), threads, shared, syncb, *args, **kwargs)
                    returned.append(tid)
                except threading.BrokenBarrierError: stuck.append(tid)
                except BaseException as e:
                    faults.append((tid, e))
                    syncb.barrier.abort()
                finally: syncb.thread_returned()

            tids = [(x, y) for y in range(threads.y) for x in range(threads.x)]
            rng.shuffle(tids)
            pool = [threading.Thread(target=cuda_thread, args=(tid,), daemon=True) for tid in tids]
            stop_on_timeout(syncb.barrier.abort)
            for t in pool: t.start()
            join_or_stop(pool, syncb)
            if faults:
                # A barrier reached out of step says why the others then deadlocked or raced: report it first.
                faults.sort(key=lambda f: ('out of step' not in str(f[1]), f[0][1], f[0][0]))
                tid, e = faults[0]
                if isinstance(e, KernelFault): raise e
                from .exercises.learner_code import learner_frames, where
                frames = learner_frames(e.__traceback__)
                at = f" at {where(frames[-1].filename, frames[-1].lineno)}" if frames else ''
                raise KernelFault(f"{who(block, tid)} raised {type(e).__name__}{at}: {e}") from e
            if stuck:
                raise KernelFault(f"deadlock: in block (x={bx}, y={by}), {len(stuck)} thread(s) wait at a barrier "
                                  f"that {len(returned)} other thread(s) never reach (they returned first): a "
                                  "barrier must be reached by every thread of the block, so keep it out of `if`s "
                                  "and early returns")
    trace.yield_chance = 0.0
