"""Notebook 13's Hopper kernel, tuned per shape, on a published set of shapes, against cuBLAS bf16 and Triton, by two timers.

    python bench/hopper_shapes.py [--shapes NAME ...] [--steps] [--json PATH]

For each shape of SHAPES: the tuned kernel (course.hopper_tuning) is tuned first (the seconds it took printed), then
checked against cuBLAS, then timed with cuBLAS bf16, Triton bf16 (autotuned), step 8 and step 8 with a wgmma group in
flight in its consumers, by both of the course's timers (course.timing.compare_with_two_timers): interleaved rounds of
back-to-back calls, and isolated calls each after an L2 flush. Each kernel's speed is cuBLAS's median time over its
own. The summary judges the targets of the Hopper every-shape work by both timers. With --steps, steps 3 to 8 with and
without a wgmma group in flight in the consumers, on 4096^3 and 8192^3 (interleaved timer). Without a Hopper GPU it
says so and exits 0.
"""
import argparse, json, math, sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from utils import import_notebook  # noqa: E402
from course.cuda_toolkit import hopper_available  # noqa: E402

# The published set: square, a transformer's layers (Llama-3-8B's widths: 4096, 6144 for Q, K and V, 14336 for the
# MLP) at 4096 to 16384 tokens in both directions, few rows, short K, short N, ragged tiles, rows TMA cannot copy.
SHAPES = {
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
REFERENCE, TRITON, STEP8, IN_FLIGHT, TUNED = 'cuBLAS bf16', 'Triton bf16', 'step 8', 'step 8, in flight', 'tuned'


def speed(times, name, timer):
    "cuBLAS's median over `name`'s, by one timer ('interleaved' or 'flushed')."
    return getattr(times[REFERENCE], timer).median / getattr(times[name], timer).median


def geomean(values): return math.exp(sum(map(math.log, values)) / len(values))


TF32_SHAPES = {"the lecture's problem": (5120, 256, 5120), 'square 2048': (2048,) * 3, 'square 4096': (4096,) * 3,
               'square 8192': (8192,) * 3}


def tf32_comparison(nb13, json_path=None):
    "TF32 wgmma (both tile heights) against cuBLAS TF32, notebook 12's mma.sync kernel and Triton TF32, by both timers."
    from course.hopper_tf32 import Tf32Matmul, tf32_error, tf32_variant
    from course.reduced_precision import cublas
    from course.timing import compare_with_two_timers
    from course.triton_matmul import matmul_triton_tf32, triton_unavailable
    nb12 = import_notebook('12')
    kernels = {'cuBLAS TF32': cublas('tf32'), 'mma.sync (notebook 12, step d)': nb12.tensor_core('pipelined', 'tf32'),
               'TF32 wgmma, 256-row tiles': Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE, BM=256)),
               'TF32 wgmma, 128-row tiles': Tf32Matmul(tf32_variant(nb13.HOPPER_SOURCE, BM=128))}
    if not triton_unavailable(): kernels['Triton TF32'] = matmul_triton_tf32
    for name, fn in kernels.items():
        worst, rms = tf32_error(fn)
        print(f"{name:32s} error on 1024^3: worst {worst:.2f} of tf32's bound, relative RMS {rms:.1e}")
    record = {}
    for name, shape in TF32_SHAPES.items():
        times, clocks = compare_with_two_timers(kernels, *shape, dtype='float32')
        ref = times['cuBLAS TF32']
        print(f"\n{name}, {'x'.join(map(str, shape))} (fp32 in and out); clocks {clocks[0]} / {clocks[1]}")
        for kn, t in times.items():
            print(f"  {kn:32s} interleaved {t.interleaved.median:8.4f} ms ({t.interleaved.median / ref.interleaved.median:4.2f}x "
                  f"cuBLAS's time)   flushed {t.flushed.median:8.4f} ms ({t.flushed.median / ref.flushed.median:4.2f}x)")
        record[name] = {kn: {timer: list(getattr(t, timer).samples) for timer in t._fields} for kn, t in times.items()}
    if json_path: Path(json_path).write_text(json.dumps(record, indent=1))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--shapes', nargs='*', help='names of SHAPES to run (all unless said)')
    ap.add_argument('--steps', action='store_true', help='also steps 3 to 8 with and without a wgmma group in flight')
    ap.add_argument('--tf32', action='store_true', help="only TF32: the lecture's fp32 inputs on TF32 wgmma, mma.sync and cuBLAS")
    ap.add_argument('--json', help='write every time to this file')
    a = ap.parse_args()
    if not hopper_available():
        print("hopper_shapes.py needs a Hopper GPU (compute capability 9.0), and this machine has none: nothing to measure.")
        return 0
    import time, torch
    from course.hopper_tuning import padded_shape, switches, tuned_matmul
    from course.reduced_precision import cublas, random_inputs
    from course.timing import compare_fairly, compare_with_two_timers, verdict
    from course.triton_matmul import matmul_triton_bf16, triton_unavailable
    nb = import_notebook('13')
    if a.tf32: return tf32_comparison(nb, a.json)
    tuned = tuned_matmul(nb.HOPPER_SOURCE, nb.MMA_SYNC_FALLBACK)
    kernels = {REFERENCE: cublas('bf16'), STEP8: nb.HopperMatmul('streamk'), IN_FLIGHT: nb.HopperMatmul('consumers_in_flight'),
               TUNED: tuned}
    if not triton_unavailable(): kernels[TRITON] = matmul_triton_bf16
    record = {'device': torch.cuda.get_device_name(), 'shapes': {}}
    start = time.perf_counter()
    tuned.calibrate()
    print(f"{torch.cuda.get_device_name()}: the model's calibration, {len(tuned.candidates)} candidates: "
          f"{time.perf_counter() - start:.1f} s (once per GPU, kept on disk)")
    names = a.shapes or list(SHAPES)
    for name in names:
        h, k, w = SHAPES[name]
        m, n = random_inputs(h, k, w, 'bf16')
        start, tuned.last_tuning = time.perf_counter(), None
        out = tuned(m, n)
        torch.cuda.synchronize()
        first_call = time.perf_counter() - start
        expected = m.float() @ n.float()
        error = ((out.float() - expected).abs().max() / expected.abs().max()).item()
        assert error < 2e-2, f"{name}: the tuned kernel's largest error is {error:.3g} of the largest value"
        padded = k % 8 or w % 8
        choice = tuned.chosen(*padded_shape(h, k, w)).params
        times, clocks = compare_with_two_timers(kernels, h, k, w)
        seen = tuned.last_tuning          # what the tuning saw: the model's times, the shortlist's short timings
        tuning = seen and dict(model=[(ms, switches(c.params)) for ms, c in seen.order],
                               timed=[(t.ms, switches(t.variant.params)) for t in seen.timed],
                               final=[(t.ms, switches(t.variant.params)) for t in seen.final])
        record['shapes'][name] = dict(shape=(h, k, w), first_call_s=first_call, error=error, choice=choice, clocks=clocks, tuning=tuning,
                                      times={kn: {timer: list(getattr(t, timer).samples) for timer in t._fields}
                                             for kn, t in times.items()})
        print(f"\n{name}: {h}x{k} @ {k}x{w}; tuned: {switches(choice)}{' on padded copies' if padded else ''}, first call "
              f"{first_call:.2f} s; clocks {clocks[0]} / {clocks[1]}")
        for kn, t in times.items():
            print(f"  {kn:20s} interleaved {t.interleaved.median:8.4f} ms ({speed(times, kn, 'interleaved'):4.2f}x cuBLAS)"
                  f"   flushed {t.flushed.median:8.4f} ms ({speed(times, kn, 'flushed'):4.2f}x cuBLAS)")
        if TRITON in times:
            print(f"  tuned against Triton (interleaved): {verdict(times[TUNED].interleaved, times[TRITON].interleaved)}")
        record['shapes'][name]['speed'] = {timer: {kn: speed(times, kn, timer) for kn in times} for timer in ('interleaved', 'flushed')}
    print("\nsummary, the tuned kernel's speed over cuBLAS bf16's:")
    for timer in ('interleaved', 'flushed'):
        speeds = {name: record['shapes'][name]['speed'][timer][TUNED] for name in names}
        worst = min(speeds, key=speeds.get)
        print(f"  {timer:11s}: geometric mean {geomean(speeds.values()):.3f}x over {len(speeds)} shapes, worst {speeds[worst]:.2f}x "
              f"({worst}); at least 0.95x on {sum(s >= 0.95 for s in speeds.values())} of {len(speeds)}")
    from course.timing import cpu_us_per_call
    m, n = random_inputs(2048, 2048, 2048, 'bf16')
    print("\nthe CPU's time per call on 2048^3 (each call only queues its kernel): " + ", ".join(
        f"{kn} {cpu_us_per_call(lambda: fn(m, n)):.1f} us" for kn, fn in kernels.items()))
    if a.steps:
        record['steps'] = {}
        for shape in ((4096,) * 3, (8192,) * 3):
            steps = {REFERENCE: cublas('bf16')}
            for step in ('specialized', 'persistent', 'cluster', 'store', 'overlap', 'streamk'):
                for fly in (False, True):
                    steps[f"{nb.HOPPER_STEPS[step].split('.')[0]}{', in flight' if fly else ''}"] = nb.HopperMatmul(step, IN_FLIGHT=fly)
            times = compare_fairly(steps, *shape, rounds=20, back_to_back=3, progress=False, dtype='bfloat16')
            print(f"\nsteps with and without a wgmma group in flight, {shape[0]}^3 (interleaved):")
            for kn, t in times.items():
                print(f"  {kn:16s} {t}  {times[REFERENCE].median / t.median:4.2f}x cuBLAS")
            record['steps']['x'.join(map(str, shape))] = {kn: list(t.samples) for kn, t in times.items()}
    if a.json: Path(a.json).write_text(json.dumps(record, indent=1))
    return 0


if __name__ == '__main__':
    sys.exit(main())
