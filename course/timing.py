"Timing GPU work with CUDA events."
import itertools


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
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(back_to_back): call()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / back_to_back)
        if sum(times) * back_to_back > max_seconds * 1000 and len(times) >= 3: break
    times.sort()
    return times[len(times) // 2]
