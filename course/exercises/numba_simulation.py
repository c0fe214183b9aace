"""Numba kernels run in Numba's CUDA simulator (on any machine, GPU or not), with every access to a global
array traced per thread, as the checking simulator traces Python kernels: traffic, coalescing and
out-of-bounds accesses named with the thread, the element and the line of the learner's cell."""
import math, operator, re, sys, threading
from collections import Counter, defaultdict

from ..checked_simulator import KernelFault, Trace, who
from .learner_code import LEARNER_FILES, function_tree, where
from .gpu_kernels import numba_tools
from .parts import NotYet
from .watchdog import KernelTimeout



def python_function(kernel, what):
    "The Python function of a Numba kernel (what Numba compiles, and what the simulator runs)."
    fn = getattr(kernel, 'py_func', None) or getattr(kernel, 'fn', None)
    if not callable(fn):
        got = 'None' if kernel is None else f"a {type(kernel).__name__}"
        raise NotYet(f"{what} is {got}, not a Numba kernel (a function decorated with @cuda.jit)")
    return fn


def current_cuda_thread():
    "((block x, y), (thread x, y)) of the simulated CUDA thread running now, or (None, None)."
    t = threading.current_thread()
    b, i = getattr(t, 'blockIdx', None), getattr(t, 'threadIdx', None)
    return ((b.x, b.y), (i.x, i.y)) if b is not None and i is not None else (None, None)


class TracedArray:
    """A global array as a kernel in Numba's simulator sees it (m[r, c], m.shape), with every element it
    reads or writes recorded against the CUDA thread that did it, in a checked_simulator.Trace (its counts
    and addresses, flat indices). An access outside the array is recorded in `faults` as ((block, thread)
    in launch order, the sentence naming it), and the kernel goes on (reading NaN), as on a GPU; the
    launch then reports the first, so that the sentence does not depend on how the threads were scheduled."""
    def __init__(self, name, array, trace, faults, base=None):
        self.name, self.array, self.trace, self.faults = name, array, trace, faults
        self.base = array if base is None else base
        self.shape, self.ndim, self.size, self.dtype = array.shape, array.ndim, array.size, array.dtype

    def __len__(self): return len(self.array)

    def _view(self, index): return TracedArray(self.name, self.array[index], self.trace, self.faults, self.base)

    def _locate(self, index, kind):
        "The flat index (in the whole array) of element `index`, a TracedArray for a row or a slice, or None outside the array."
        parts = index if isinstance(index, tuple) else (index,)
        try: ints = [operator.index(i) for i in parts]
        except TypeError:
            if any(isinstance(i, slice) for i in parts): return self._view(index)
            raise KernelFault(f"{self.name}[{', '.join(map(str, parts))}]: an index must be a whole number") from None
        if len(ints) > self.ndim:
            raise KernelFault(f"{self.name} has {self.ndim} dimension(s); it was indexed with {len(ints)}")
        bad = next((i for i, size in zip(ints, self.shape) if not 0 <= i < size), None)
        if bad is not None:
            self.faults.append(self._outside(ints, bad, kind))
            if len(ints) < self.ndim: raise KernelFault(self.faults[-1][1])
            return None
        if len(ints) < self.ndim: return self._view(tuple(ints))
        offset = sum(i * s for i, s in zip(ints, self.array.strides))
        start = self.array.__array_interface__['data'][0] - self.base.__array_interface__['data'][0]
        return (start + offset) // self.array.itemsize

    def _outside(self, ints, i, kind):
        "(the thread's place in launch order, the sentence) for an access outside the array."
        block, thread = current_cuda_thread()
        frame = sys._getframe(3)
        while frame is not None and frame.f_code.co_filename not in LEARNER_FILES: frame = frame.f_back
        at = f" at {where(frame.f_code.co_filename, frame.f_lineno)}" if frame is not None else ''
        sign = (" (a negative index, which Numba counts from the end as Python does: on a GPU no error, just the "
                "wrong element)" if i < 0 else '')
        order = (block[1], block[0], thread[1], thread[0]) if block and thread else ()
        return order, (f"{who(block, thread)} {kind}s {self.name}[{', '.join(map(str, ints))}], outside {self.name} "
                       f"(shape {' x '.join(map(str, self.shape))}){sign}{at}: a bound check is missing or wrong")

    def _record(self, flat, kind):
        key = current_cuda_thread()
        counts = self.trace.counts[key]
        counts[(self.name, kind)] += 1
        counts[('global', kind)] += 1
        self.trace.addresses[key].append(('global', kind, self.name, flat))

    def __getitem__(self, index):
        flat = self._locate(index, 'read')
        if flat is None: return self.dtype.type(math.nan) if self.dtype.kind == 'f' else self.dtype.type(0)
        if isinstance(flat, TracedArray): return flat
        self._record(flat, 'read')
        return self.base.reshape(-1)[flat]

    def __setitem__(self, index, value):
        flat = self._locate(index, 'write')
        if flat is None: return
        if isinstance(flat, TracedArray): raise KernelFault(f"{self.name}: write one element at a time")
        self._record(flat, 'write')
        self.base.reshape(-1)[flat] = value


def simulate(kernel, what, grid, block, arrays, *scalars, shared_bytes=0):
    """Launch a Numba kernel in Numba's CUDA simulator, on any machine, with `arrays` ({name: CPU tensor},
    in the kernel's order, written in place) traced per thread, then `scalars`. Returns the Trace."""
    numba_tools()       # notebook 08 first: where there is no GPU it switches Numba to its simulator before the import
    from numba.cuda.simulator.args import ArgHint
    from numba.cuda.simulator.kernel import BlockThread, FakeCUDAKernel

    class Traced(ArgHint):
        def to_device(self, retr, stream=0): return self.value      # handed to the kernel as it is

    fn = python_function(kernel, what)
    trace, faults = Trace(), []
    args = [Traced(TracedArray(name, t.numpy(), trace, faults)) for name, t in arrays.items()]
    launch = FakeCUDAKernel(fn, device=False)[grid, block, 0, shared_bytes]
    try:
        launch(*args, *scalars)
    except Exception as e:
        # The simulator stops the block's other threads but does not wait for them: wait, so that none is left running.
        for t in threading.enumerate():
            if isinstance(t, BlockThread): t.join(5)
        if faults and not isinstance(e, KernelTimeout): raise KernelFault(min(faults)[1]) from None
        # The simulator re-raises a thread's exception as type(e)('tid=[x, y, z] ctaid=[x, y, z]: message'); which
        # thread raised first depends on the scheduling, so the sentence leaves it out (the line says where).
        m = re.match(r'tid=\[\d+, \d+, \d+\] ctaid=\[\d+, \d+, \d+\](?:: )?(.*)', str(e), re.S)
        if not m: raise
        raise type(e)(m.group(1)).with_traceback(e.__traceback__) from None
    if faults: raise KernelFault(min(faults)[1])
    # The threads in launch order (not in the order they happened to run), so that a tie names the same thread every time.
    launch_order = lambda item: (item[0][0][1], item[0][0][0], item[0][1][1], item[0][1][0])
    trace.counts = defaultdict(Counter, sorted(trace.counts.items(), key=launch_order))
    trace.addresses = defaultdict(list, sorted(trace.addresses.items(), key=launch_order))
    return trace


def kernel_place(kernel):
    "place(node): 'line N of the `#| exercise ...` cell: `code`' for a node of the kernel's syntax tree."
    tree, first = function_tree(kernel)
    code = python_function(kernel, 'the kernel').__code__
    return tree, lambda node: where(code.co_filename, node.lineno + first - 1)


