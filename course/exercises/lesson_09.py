"""The exercises of notebook 09: Numba's performance."""
import math, re  # noqa: F401

from ..checked_simulator import Trace, buffers, dim3, run_block_kernels, run_grid, run_threaded_blocks  # noqa: F401
from .gpu_kernels import *  # noqa: F401,F403
from .parts import (NotYet, at_most, barriers_in_place, compare, compiled, count_in, faster_than, gpu_here,  # noqa: F401
                    machine_code, need, running, sanitized, source_of, strip_comments)
from .registry import exercise
from .simulated import *  # noqa: F401,F403


@exercise('09.1', "a Numba kernel without Python's index fix-ups",
          hints=("Numba treats indices as signed Python integers: every index gets a check for negative values. Unsigned indices need none.",
                 "Convert threadIdx, blockIdx, the sizes and tw to numba.uint32 once at the top, and write both loops as while loops with uint32 counters."), runs_on_gpu=True)
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
    from ..disassembly import loop_cost
    from ..notebook_import import import_notebook
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
    from ..correctness import lecture_problem
    m, n, _ = lecture_problem('cuda')
    faster_than(report, numba_matmul(nb08, kernel, 16, dynamic=True), best, (m, n), 1.1, "on the lecture's problem, tw=16",
                "notebook 09's uint32 while-loop kernel")


@exercise('09.2', 'a timer you can trust',
          hints=('The first call pays for compiling, and one slow call can pull a mean far off: warm up, then time many calls and take the median.',
                 'Call fn a few times, synchronize, then for each of ~20 reps: t0 = time.perf_counter(); fn(*args); torch.cuda.synchronize(); record the time. Return statistics.median(times).'), runs_on_gpu=True)
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
    from ..timing import cuda_time_ms
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
