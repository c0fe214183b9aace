"""The published shape set of the Hopper kernel on every shape (notebook 14, bench/hopper_shapes.py), measured by the
course's two timers, and the lines that judge its targets.

`SHAPE_SET`: square products from 2048 to 8192, the layers of a transformer (Llama-3-8B's widths: 4096, 6144 for Q, K
and V together, 14336 for the MLP) at 4096 to 16384 tokens in both directions, few rows (64 to 512), short K, short
N, ragged tiles, and row lengths TMA cannot copy. `TF32_SHAPES`: the lecture's problem and three squares.

`measure(kernels, shapes, reference)` times every kernel on every shape with course.timing.compare_with_two_timers;
`speed_lines` and `target_lines` read the result: speeds are the reference's median time over each kernel's, by each
timer ('interleaved' and 'flushed'). `measure_again` and `across_runs_lines` judge a target on one shape over three
measurements or more, with the reference's spread across them (course.targets.against_target_across_runs).
"""
import math

SHAPE_SET = {
    'square 2048': (2048, 2048, 2048), 'square 3072': (3072, 3072, 3072), 'square 4096': (4096, 4096, 4096),
    'square 6144': (6144, 6144, 6144), 'square 8192': (8192, 8192, 8192),
    'QKV, 16384 tokens': (16384, 4096, 6144), 'MLP up, 4096 tokens': (4096, 4096, 14336),
    'MLP down, 4096 tokens (long K)': (4096, 14336, 4096), 'MLP down, 8192 tokens': (8192, 14336, 4096),
    'MLP up, back-prop (K = tokens)': (4096, 16384, 14336),
    'few rows: 64': (64, 8192, 8192), 'few rows: 128': (128, 8192, 8192), 'few rows: 256': (256, 4096, 14336),
    'few rows: 512': (512, 8192, 8192),
    'short K': (8192, 256, 8192), 'short N': (8192, 8192, 256), 'ragged tiles': (5000, 3000, 4000),
    'K not a multiple of 8': (4096, 4100, 4096), 'N not a multiple of 8': (4096, 4096, 4100),
}
TF32_SHAPES = {"the lecture's problem": (5120, 256, 5120), 'square 2048': (2048,) * 3, 'square 4096': (4096,) * 3,
               'square 8192': (8192,) * 3}
TIMERS = ('interleaved', 'flushed')
UNALIGNED = ('K not a multiple of 8', 'N not a multiple of 8')    # where cuBLAS itself is slow

# The targets of the Hopper kernel on every shape (bf16): by both timers, the tuned kernel's geometric mean speed over
# cuBLAS's at least GEOMEAN_GOAL, every shape at least EVERY_SHAPE_GOAL, and no shape where the interleaved verdict
# says Triton is faster; at least BIG_GOAL on BIG_TARGET_SHAPES, over three measurements. TF32: at most TF32_GOAL
# times cuBLAS TF32's time on TF32_TARGET_SHAPES.
GEOMEAN_GOAL, EVERY_SHAPE_GOAL, BIG_GOAL, TF32_GOAL = 1.00, 0.95, 1.00, 1.10
BIG_TARGET_SHAPES = ('square 4096', 'square 8192')
TF32_TARGET_SHAPES = ("the lecture's problem", 'square 4096')


def measure(kernels, shapes, dtype='bfloat16', progress=True):
    """{shape name: ({kernel name: TwoTimers}, clocks)} for kernels fn(m, n) on each (h, k, w) of `shapes` ({name: shape})."""
    from .progress import progress as progress_of
    from .timing import compare_with_two_timers
    return {name: compare_with_two_timers(kernels, *shapes[name], dtype=dtype)
            for name in progress_of(list(shapes), f"{len(shapes)} shapes, {len(kernels)} kernels, two timers", 'shape',
                                    show=progress)}


def speeds(results, kernel, reference, timer):
    "{shape name: the reference's median over `kernel`'s} by one timer."
    return {name: getattr(times[reference], timer).median / getattr(times[kernel], timer).median
            for name, (times, _) in results.items()}


def geomean(values):
    values = list(values)
    return math.exp(sum(map(math.log, values)) / len(values))


def speed_lines(results, reference):
    "A line per shape: each kernel's speed over the reference's, interleaved / flushed."
    names = list(next(iter(results.values()))[0])
    width = max(len(n) for n in results)
    lines = [f"{'':{width}s}  " + '  '.join(f"{n[:13]:>13s}" for n in names if n != reference)]
    for name, (times, _) in results.items():
        cells = [f"{getattr(times[reference], 'interleaved').median / times[n].interleaved.median:5.2f}/"
                 f"{times[reference].flushed.median / times[n].flushed.median:<5.2f}  " for n in names if n != reference]
        lines.append(f"{name:{width}s}  " + ''.join(f"{c:>15s}" for c in cells))
    return lines


def target_lines(results, kernel, reference, rival=None):
    """The bf16 targets, by each timer: the geometric mean of `kernel`'s speed over the reference's, the shapes under
    EVERY_SHAPE_GOAL (with how far), and the shapes where `rival` (Triton) is faster by the interleaved verdict."""
    from .timing import verdict
    lines = []
    for timer in TIMERS:
        by_shape = speeds(results, kernel, reference, timer)
        mean, low = geomean(by_shape.values()), {n: s for n, s in by_shape.items() if s < EVERY_SHAPE_GOAL}
        aligned = [s for n, s in by_shape.items() if results[n][0] and n not in UNALIGNED]
        lines.append(f"{timer}: geometric mean {mean:.3f}x {reference}'s speed over {len(by_shape)} shapes (target at "
                     f"least {GEOMEAN_GOAL:.2f}x: {'met' if mean >= GEOMEAN_GOAL else 'missed'}), {geomean(aligned):.3f}x "
                     f"without the row lengths TMA cannot copy; every shape at least {EVERY_SHAPE_GOAL:.2f}x: "
                     + ("met" if not low else f"missed on {len(low)} of {len(by_shape)} ("
                        + ', '.join(f'{n} {s:.2f}x' for n, s in sorted(low.items(), key=lambda x: x[1])) + ")"))
    if rival:
        faster = [n for n, (times, _) in results.items() if rival in times
                  and verdict(times[kernel].interleaved, times[rival].interleaved) == 'slower']
        lines.append(f"{rival} faster (interleaved verdict) on {len(faster)} of {len(results)} shapes"
                     + (f": {', '.join(faster)}" if faster else ""))
    return lines


def measure_again(kernels, shapes, names, dtype='bfloat16', times=1):
    """{shape name: [{kernel: Spread}]}: `times` more interleaved measurements (course.timing.compare_fairly) of `kernels`
    on the shapes of `shapes` named in `names`, so that a target judged there rests on at least three measurements."""
    from .timing import compare_fairly
    return {name: [compare_fairly(kernels, *shapes[name], rounds=20, back_to_back=3, progress=False, dtype=dtype)
                   for _ in range(times)] for name in names}


def across_runs_lines(results, again, kernel, reference, goal, kind='speed'):
    """For each shape of `again` (measure_again's): course.targets.against_target_across_runs over its measurements in
    `results` (both timers) and in `again`. A 'time' target (at most `goal` times the reference's time) is judged as
    the speed target it is (at least 1 / goal times its speed), and said both ways."""
    from .targets import against_target_across_runs
    lines = []
    for name, more in again.items():
        times, _ = results[name]
        ours = [times[kernel].interleaved, times[kernel].flushed, *(m[kernel] for m in more)]
        theirs = [times[reference].interleaved, times[reference].flushed, *(m[reference] for m in more)]
        speed_goal = goal if kind == 'speed' else 1 / goal
        lines.append(f"{name}" + (f" (at most {goal:.2f}x its time)" if kind == 'time' else "") + ": "
                     + against_target_across_runs(ours, theirs, reference, speed_goal))
    return lines
