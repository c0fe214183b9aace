"""The Hopper kernel tuned per shape (notebook 14) on its published shape set, against cuBLAS bf16 and Triton, by two timers.

    python bench/hopper_shapes.py [--shapes NAME ...] [--steps] [--tf32] [--json PATH]

For each shape of course.hopper_shapes.SHAPE_SET: the tuned kernel (course.hopper_tuning) is tuned first (the seconds
its first call took printed, and what the tuning saw), checked against a float32 product, then timed with cuBLAS
bf16, Triton bf16 (autotuned) and notebook 13's step 8 by both of the course's timers (interleaved rounds of
back-to-back calls; isolated calls after an L2 flush, interleaved too). The summary judges the targets by both timers.
--steps: steps 3 to 8 with and without a wgmma group in flight in the consumers, on 4096^3 and 8192^3. --tf32: instead,
TF32 wgmma against cuBLAS TF32 and notebook 12's mma.sync kernel on course.hopper_shapes.TF32_SHAPES. Without a Hopper
GPU it says so and exits 0.
"""
import argparse, json, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from utils import import_notebook  # noqa: E402
from course.cuda_toolkit import hopper_available  # noqa: E402

REFERENCE, TRITON, STEP8, TUNED = 'cuBLAS bf16', 'Triton bf16', 'step 8 (13)', 'tuned (14)'


def samples(results):
    "The JSON-able samples of measure's results."
    return {name: {'clocks': clocks, 'times': {k: {timer: list(getattr(t, timer).samples) for timer in t._fields}
                                               for k, t in times.items()}} for name, (times, clocks) in results.items()}


def tune_every_shape(tuned, shapes):
    "Tune (or read from disk) each shape's switches; print what each first call took and chose. {name: record}."
    import torch
    from course.hopper_tuning import padded_shape, switches
    from course.reduced_precision import random_inputs
    records = {}
    for name, (h, k, w) in shapes.items():
        m, n = random_inputs(h, k, w, 'bf16')
        start, tuned.last_tuning = time.perf_counter(), None
        out = tuned(m, n)
        torch.cuda.synchronize()
        seconds = time.perf_counter() - start
        expected = m.float() @ n.float()
        error = ((out.float() - expected).abs().max() / expected.abs().max()).item()
        assert error < 2e-2, f"{name}: the tuned kernel's largest error is {error:.3g} of the largest value"
        choice, seen = tuned.chosen(*padded_shape(h, k, w)).params, tuned.last_tuning
        print(f"{name}: {switches(choice)}{' (padded copies)' if k % 8 or w % 8 else ''}, first call {seconds:.2f} s"
              + (f", model's rank of it {seen.rank_of(seen.final[0].variant)} of {len(seen.order)}" if seen else ""))
        records[name] = dict(choice=choice, first_call_s=seconds, error=error, timed=seen and [
            (t.ms, switches(t.variant.params)) for t in seen.timed])
    return records


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--shapes', nargs='*', help='names of SHAPE_SET to run (all unless said)')
    ap.add_argument('--steps', action='store_true', help='also steps 3 to 8 with and without a wgmma group in flight')
    ap.add_argument('--tf32', action='store_true', help="only TF32: the lecture's fp32 inputs on TF32 wgmma")
    ap.add_argument('--json', help='write every time to this file')
    a = ap.parse_args()
    if not hopper_available():
        print("hopper_shapes.py needs a Hopper GPU (compute capability 9.0), and this machine has none: nothing to measure.")
        return 0
    import torch
    from course import hopper_shapes as hs
    nb14 = import_notebook('14')
    if a.tf32:
        kernels = nb14.tf32_kernels()
        results = hs.measure(kernels, hs.TF32_SHAPES, dtype='float32')
        pair = {name: kernels[name] for name in ('cuBLAS TF32', nb14.TF32_BEST)}
        again = hs.measure_again(pair, hs.TF32_SHAPES, hs.TF32_TARGET_SHAPES, dtype='float32')
        print(*hs.speed_lines(results, 'cuBLAS TF32'),
              *hs.across_runs_lines(results, again, nb14.TF32_BEST, 'cuBLAS TF32', hs.TF32_GOAL, kind='time'), sep='\n')
        if a.json: Path(a.json).write_text(json.dumps(samples(results), indent=1))
        return 0
    shapes = {name: hs.SHAPE_SET[name] for name in (a.shapes or hs.SHAPE_SET)}
    start = time.perf_counter()
    nb14.TUNED.calibrate()
    print(f"{torch.cuda.get_device_name()}: the model's calibration, {len(nb14.TUNED.candidates)} candidates, "
          f"{time.perf_counter() - start:.1f} s (once per GPU, kept on disk)")
    records = tune_every_shape(nb14.TUNED, shapes)
    kernels = nb14.bf16_kernels()
    results = hs.measure(kernels, shapes)
    again = hs.measure_again({name: kernels[name] for name in (REFERENCE, TUNED)}, shapes,
                             [name for name in hs.BIG_TARGET_SHAPES if name in shapes])
    print(*hs.speed_lines(results, REFERENCE), *hs.target_lines(results, TUNED, REFERENCE, TRITON),
          *hs.across_runs_lines(results, again, TUNED, REFERENCE, hs.BIG_GOAL), sep='\n')
    out = {'device': torch.cuda.get_device_name(), 'tuning': records, 'shapes': samples(results)}
    if a.steps:
        out['steps'] = {}
        for shape in ((4096,) * 3, (8192,) * 3):
            times = nb14.time_in_flight(shape)
            print(f"\nsteps with and without a wgmma group in flight in the consumers, {shape[0]}^3 (interleaved):")
            for name, t in times.items(): print(f"  {name:24s} {t}")
            out['steps']['x'.join(map(str, shape))] = {name: list(t.samples) for name, t in times.items()}
    if a.json: Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
