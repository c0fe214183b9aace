"Timing GPU work with CUDA events."
import itertools, math, time
from typing import NamedTuple


def events_ms(call, times=1):
    """Milliseconds per call of `call()` run `times` times back to back between two CUDA events, on the GPU's
    clock (waits for the end event)."""
    import torch
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(times): call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / times


def cuda_time_ms(fn, *args, warmup=3, reps=20, max_seconds=2.0, arg_sets=None, back_to_back=1):
    """Median time per call of `fn(*args)` in milliseconds, on the GPU's clock: CUDA events recorded
    before and after, after `warmup` calls; stops early once `max_seconds` of timed calls have run.

    With `back_to_back=1` each timed call starts on an idle GPU, so the time includes what the call does
    on the CPU before its kernel starts (checks, argument conversion, the launch): what one call costs.
    With `back_to_back=N` the events enclose N calls queued one after another and the result is the
    total over N: while the GPU runs one call's kernel the CPU prepares the next, so launch costs shorter
    than the kernel hide, and what remains is the GPU's time per call.

    With `arg_sets` (a list of argument tuples) the calls rotate through them, so that inputs small
    enough to stay in the GPU's L2 cache between calls do not make the kernel look faster than it is."""
    import torch
    arg_sets = arg_sets or [args]
    calls = itertools.count()
    def call(): fn(*arg_sets[next(calls) % len(arg_sets)])
    for _ in range(warmup): call()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        times.append(events_ms(call, back_to_back))
        if sum(times) * back_to_back > max_seconds * 1000 and len(times) >= 3: break
    times.sort()
    return times[len(times) // 2]


def cpu_us_per_call(call, calls=200, warmup=20):
    """Microseconds the CPU spends in one call of `call()`: `calls` calls made in a loop, timed until the last one
    returns (then the GPU is waited for, untimed). A launch returns once its kernel is queued, so the loop's time is
    the CPU's work, however long the kernels take; the calls are few enough (a few hundred launches) that the queue
    of launches does not fill, which would make the CPU wait for the GPU (course.launch_queue models the two)."""
    import torch
    for _ in range(warmup): call()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls): call()
    spent = time.perf_counter() - start
    torch.cuda.synchronize()
    return spent / calls * 1e6


# --------------------------------------------------------------------------------------------------
# A fair comparison: every speed claim of the course (notebooks 10 and 13, bench/bench.py, the README)
# comes from `compare_fairly`, never from the run that picked a winner.
# --------------------------------------------------------------------------------------------------

def l2_overflowing_inputs(h, k, w, l2_bytes=None, most=16, dtype='float32'):
    """Random normal h x k and k x w input pairs of `dtype` (a torch dtype's name) on the GPU, as many as it takes
    (up to `most`) for all of them together to hold twice the GPU's L2 cache: rotating through them, each call
    finds its inputs in memory, not left in L2 by the call before."""
    import math, torch
    dtype = getattr(torch, dtype)
    l2_bytes = l2_bytes or torch.cuda.get_device_properties(0).L2_cache_size
    count = min(most, max(1, math.ceil(2 * l2_bytes / ((h * k + k * w) * dtype.itemsize))))
    return [(torch.randn(h, k, device='cuda').to(dtype), torch.randn(k, w, device='cuda').to(dtype)) for _ in range(count)]


class Spread(NamedTuple):
    "A kernel's times over the rounds of a comparison: the median and the interquartile range, in ms."
    median: float
    q1: float           # a quarter of the rounds were faster than this
    q3: float           # a quarter were slower than this
    samples: tuple

    def __str__(self): return f"{self.median:.3f} ms (middle half {self.q1:.3f}-{self.q3:.3f})"


def spread(samples):
    "The Spread of a list of times (quartiles by linear interpolation, as numpy's default)."
    import numpy as np
    q1, med, q3 = np.percentile(samples, [25, 50, 75])
    return Spread(float(med), float(q1), float(q3), tuple(samples))


def verdict(ours, theirs, margin=0.02):
    """'faster' or 'slower' only where the middle halves of the two spreads do not overlap AND the medians differ
    by more than `margin` (2%: between runs, clocks and inputs move a kernel's time by about that much); else
    'on par'."""
    if ours.q3 < theirs.q1 and ours.median < theirs.median * (1 - margin): return 'faster'
    if ours.q1 > theirs.q3 and ours.median > theirs.median * (1 + margin): return 'slower'
    return 'on par'


def rounds_to_run(rounds, round_seconds, min_seconds, most=1000):
    """How many rounds a comparison runs: `rounds`, or more where that many rounds of `round_seconds` each would take
    less than `min_seconds` (at most `most`)."""
    if rounds < 1: raise ValueError(f"rounds must be at least 1, got {rounds}")
    if min_seconds <= 0 or round_seconds <= 0: return rounds
    return max(rounds, min(most, math.ceil(min_seconds / round_seconds)))


def compare_fairly(kernels, h, k, w, rounds=25, back_to_back=10, progress=True, dtype='float32', min_seconds=0.0):
    """{name: Spread} for kernels fn(m, n) on h x k @ k x w (inputs of `dtype`), measured so that no kernel is favoured:

    - the inputs rotate through `l2_overflowing_inputs`, so none is served from L2 left warm by the call before;
    - the kernels are interleaved: each round times every kernel once (`back_to_back` calls queued behind an
      untimed one, their mean: the GPU's time per call, not the CPU's launch), in an order that changes from
      round to round, so that a slow spell of the GPU (clock, heat,
      another process) falls on all of them alike instead of on whichever was timed then;
    - `rounds` samples each (at least 20 for a claim), summarised as a median and an interquartile range;
    - with `min_seconds`, more rounds where `rounds` would pass quicker than that (`rounds_to_run`, from the time of
      the warm-up): on a product of a few hundredths of a millisecond, 20 rounds last 10 to 15 ms, and a slow spell
      of that length (a garbage collection, a clock settling) would fall on every round and move the median.
    Call it after any autotuning, so that the winner's time is a fresh measurement, not its selection run."""
    import random, torch
    from .progress import progress as progress_of
    sets = l2_overflowing_inputs(h, k, w, dtype=dtype)
    names = list(kernels)
    def warm_up():                                            # every kernel on two input pairs; seconds taken
        start = time.perf_counter()
        for name in names:
            for m, n in sets[:2]: kernels[name](m, n)
        torch.cuda.synchronize()
        return time.perf_counter() - start
    warm_up()                                                 # compile, tune, allocate
    if min_seconds > 0:                                       # a second warm-up, timed: how long a round lasts
        rounds = rounds_to_run(rounds, warm_up() * (1 + back_to_back) / 2, min_seconds)
    samples = {name: [] for name in names}
    order, calls = random.Random(0), itertools.count()
    for _ in progress_of(range(rounds), f"{h}x{k} @ {k}x{w}, {len(names)} kernels interleaved", 'round', show=progress):
        order.shuffle(names)
        for name in names:
            call = lambda: kernels[name](*sets[next(calls) % len(sets)])
            call()                          # untimed: the GPU is busy when the clock starts, so the timed calls'
            samples[name].append(events_ms(call, back_to_back))     # CPU work overlaps GPU work
    return {name: spread(samples[name]) for name in kernels}


def describe_against(name, ours, reference_name, reference):
    """Two lines: a kernel's median over the reference's and the verdict of `verdict`; then, indented, both spreads
    (short enough not to wrap in a notebook's output)."""
    return (f"{name}: {ours.median / reference.median:.2f}x {reference_name}'s time: {verdict(ours, reference)}\n"
            f"    {ours}, against {reference}")


def step_line(times, step, before=None, reference=None, flop=None):
    """One line for one step of a ladder, read from one fair measurement `times` ({name: Spread}, as compare_fairly
    returns): the step's median (and TFLOP/s where `flop`, the product's flop count, is given), then its speed over
    `reference`'s and over the step `before`'s, each with `verdict`'s word. A name not in `times` is left out."""
    ours = times[step]
    line = f"{step}: {ours.median:.3f} ms" + (f", {flop / ours.median / 1e9:.0f} TFLOP/s" if flop else "")
    for name, what in ((reference, "'s speed"), (before, "'s speed")):
        if name is None or name not in times: continue
        line += f"; {times[name].median / ours.median:.2f}x {name}{what} ({verdict(ours, times[name])})"
    return line


def gpu_clocks(gpu=0):
    """A short text of GPU `gpu`'s clocks as nvidia-smi reports them now: the SM clock against its maximum, and what
    holds it down where something does ('clocks: SM 1755 of 1980 MHz, held by power cap'); None where nvidia-smi is
    not here or says nothing."""
    import shutil, subprocess
    if not shutil.which('nvidia-smi'): return None
    asked = ('clocks.sm', 'clocks.max.sm', 'clocks_event_reasons.sw_power_cap', 'clocks_event_reasons.hw_slowdown',
             'clocks_event_reasons.sw_thermal_slowdown')
    try:
        said = subprocess.run(['nvidia-smi', f'--id={gpu}', f"--query-gpu={','.join(asked)}", '--format=csv,noheader,nounits'],
                              capture_output=True, text=True, timeout=20).stdout.strip().split(', ')
    except (OSError, subprocess.SubprocessError):
        return None
    if len(said) != len(asked) or not said[0].strip().isdigit(): return None
    held = [why for why, flag in zip(('power cap', 'hardware slowdown', 'heat'), said[2:]) if flag.strip() == 'Active']
    return f"clocks: SM {said[0].strip()} of {said[1].strip()} MHz" + (f", held by {' and '.join(held)}" if held else "")


# A spin of the GPU longer than what a call costs the CPU (0.1 ms at 2 GHz; a call of the course's wrappers costs tens
# of microseconds): queued ahead of a timed call, it lets the CPU finish the call's launches before the GPU gets there.
CPU_HIDING_CYCLES = 200_000


def flushed_rounds_ms(kernels, arg_sets, rounds=60, max_seconds=4.0, l2_bytes=None, hide_cpu=False):
    """The second timer: {name: [ms]} for kernels fn(m, n), each call timed alone between two CUDA events after the L2
    cache has been flushed (a buffer of twice its size written just before; Triton's do_bench writes a fixed 256 MB),
    rotating through `arg_sets`. As compare_fairly's rounds, every round times each kernel once, in an order that changes from
    round to round, so that a slow spell of the GPU (its clock held down by power or heat) falls on all of them alike;
    fewer than `rounds` rounds once `max_seconds` of calls have been timed (at least 5). Unlike compare_fairly's
    back-to-back calls, each sample starts with a cold L2 and includes whatever of the call's CPU work the flush does
    not hide: the time one isolated call takes. With `hide_cpu`, the GPU spins CPU_HIDING_CYCLES cycles (torch's
    private `torch.cuda._sleep`) between the flush and the first event, so that the CPU has queued the call before the
    GPU reaches it: each sample is the GPU's time alone wherever the CPU's work for the call takes less than the flush
    and the spin (about 0.1 ms), and otherwise still waits for the rest (a loop of many launches, say). On calls of a
    few hundredths of a millisecond the CPU's share otherwise moves from round to round; `cpu_us_per_call` times it."""
    import random, torch
    l2_bytes = l2_bytes or torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
    flush = torch.empty(2 * l2_bytes, dtype=torch.uint8, device='cuda')
    names = list(kernels)
    for name in names:
        for args in arg_sets[:2]: kernels[name](*args)   # compile, tune, allocate
    torch.cuda.synchronize()
    events, order = {name: [] for name in names}, random.Random(1)
    for i in range(rounds):
        order.shuffle(names)
        for name in names:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_()
            if hide_cpu: torch.cuda._sleep(CPU_HIDING_CYCLES)
            start.record()
            kernels[name](*arg_sets[i % len(arg_sets)])
            end.record()
            events[name].append((start, end))
        if i % 5 == 4:                                    # read the times back every 5 rounds (waits for them)
            end.synchronize()
            spent = sum(s.elapsed_time(e) for pairs in events.values() for s, e in pairs)
            if spent > max_seconds * 1e3 and i >= 4: break
    torch.cuda.synchronize()
    return {name: [s.elapsed_time(e) for s, e in pairs] for name, pairs in events.items()}


class TwoTimers(NamedTuple):
    "One kernel's times by the course's two timers: interleaved back-to-back rounds, and isolated calls on a cold L2."
    interleaved: Spread     # compare_fairly's
    flushed: Spread         # flushed_rounds_ms's, as a Spread


def compare_with_two_timers(kernels, h, k, w, dtype='bfloat16', rounds=20, back_to_back=3, reps=60):
    """{name: TwoTimers} for kernels fn(m, n) on h x k @ k x w, and the GPU's clocks as nvidia-smi read them after
    each timer (gpu_clocks, or None): compare_fairly's interleaved rounds first, then `reps` rounds of isolated calls
    on a cold L2 (flushed_rounds_ms), interleaved too."""
    interleaved = compare_fairly(kernels, h, k, w, rounds=rounds, back_to_back=back_to_back, progress=False, dtype=dtype)
    clocks = [gpu_clocks()]
    flushed = {name: spread(times) for name, times in
               flushed_rounds_ms(kernels, l2_overflowing_inputs(h, k, w, dtype=dtype), rounds=reps).items()}
    clocks.append(gpu_clocks())
    return {name: TwoTimers(interleaved[name], flushed[name]) for name in kernels}, clocks
