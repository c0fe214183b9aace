"""Compile, in parallel, every CUDA C kernel variant the later notebooks and the benchmark use, before running them.

    python tools/prebuild.py [--workers N] [--extensions]

Notebooks 10 to 15 and `bench/bench.py` compile their kernels when they first need them, one after another: on a
fresh machine notebook 15 spends minutes compiling before it times anything. This compiles notebook 10's search
space, its every-shape kernels and ladder, notebook 12's tensor-core search spaces, notebook 13's Hopper steps,
notebook 14's tuning candidates and TF32 kernel and notebook 17's drop-in kernel in every layout all at once, on
every CPU core (a bar shows the progress), into the compile cache that the notebooks read
(`$COURSE_CUDA_CACHE`, else ~/.cache/cuda-course). Variants already in the cache cost nothing. It needs nvcc, not a
GPU: without a GPU the kernels are compiled for an H100 (sm_90; notebook 13's steps for sm_90a), which a machine
with an H100 then finds in the cache. `--extensions` also builds the lecture-style torch extensions of notebooks 01 and
05 to 07 that notebook 15 times (those need a GPU).
"""
import argparse, sys, time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path: sys.path.insert(0, str(ROOT))      # the course's modules, from any working folder


def course_variants():
    "Every TemplateVariant notebooks 10 to 14 and 17 export for their timings, each once."
    from utils import import_notebook
    nb10, nb11, nb12, nb13 = (import_notebook(n) for n in ('10', '11', '12', '13'))
    variants = [*nb10.SEARCH_SPACE, *nb11.EVERY_SHAPE_SPACE, *(k for k in nb10.ladder().values() if hasattr(k, 'build')),
                *nb12.search_space('bf16'), *nb12.search_space('tf32'), nb13.MMA_SYNC_FALLBACK,
                *(h.kernel for h in nb13.hopper_ladder().values()), *hopper_every_shape_variants(nb13),
                *drop_in_variants(import_notebook('17'), nb11)]
    unique = {}
    for v in variants: unique.setdefault(v.source, v)          # the same source is one compile
    return list(unique.values())


def hopper_every_shape_variants(nb13):
    """The Hopper kernel's tuning candidates (course.hopper_tuning), step 10's 64 x 256 ping-pong tile (the 64 x 128 ones
    are candidates) and its cooperative 128 x 128 rival, steps 3 to 9 with a wgmma group in flight, and the TF32 wgmma kernel (course.hopper_tf32)."""
    from course.hopper_ladder import SPECIALIZED_STEPS, specialized_variant
    from course.hopper_tf32 import tf32_variant
    from course.hopper_tuning import CANDIDATES
    return [*(specialized_variant(nb13.HOPPER_SOURCE, **params) for params in CANDIDATES),
            specialized_variant(nb13.HOPPER_SOURCE, BN=256, STAGES=5, IN_FLIGHT=True, OVERLAP=False, PINGPONG=True),
            specialized_variant(nb13.HOPPER_SOURCE, BN=128, STAGES=6, IN_FLIGHT=True),     # step 10's cooperative rival
            *(nb13.hopper_kernel(step, IN_FLIGHT=True) for step in SPECIALIZED_STEPS),
            *(tf32_variant(nb13.HOPPER_SOURCE, BM=bm, CLUSTER=c) for bm in (256, 128) for c in (1, 2))]


def drop_in_variants(nb17, nb11):
    """Notebook 17's drop-in kernel for every tile of notebook 11's tuner, every layout of A and B, one product and a
    batch (32-bit offsets: the 64-bit kernels, for matrices of 2^31 elements or more, compile when first needed), its
    steps' kernels, and step 6's cp.async try for the tuner's 128 x 256 tiles and for the tile, warps and buffers of
    the kernel cuBLAS ran on an H100 (and one buffer more)."""
    tile = dict(nb11.WARP_TILE, MIN_BLOCKS=2, GROUP=8)
    wide_tiles = [t for t in nb11.EVERY_SHAPE_TILES if (t['BM'], t['BN']) == (128, 256)]
    cublas_like = nb17.cublas_like(nb17.CUBLAS_4096_ON_H100)
    return [*(nb17.drop_in_variant(a_t, b_t, False, batched, **t) for a_t in (False, True) for b_t in (False, True)
              for batched in (False, True) for t in nb11.EVERY_SHAPE_TILES),
            nb17.step_variant(nb17.EITHER_LAYOUT, **tile), nb17.step_variant(nb17.WIDE_OFFSETS, **tile),
            nb17.step_variant(nb17.WIDE_OFFSETS, wide=True, **tile), nb17.drop_in_variant(False, False, True, False, **tile),
            *(nb17.pipelined(STAGES=3, **dict(t, MIN_BLOCKS=1)) for t in wide_tiles),
            *(nb17.pipelined(**dict(cublas_like, STAGES=s)) for s in (cublas_like['STAGES'], cublas_like['STAGES'] + 1))]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--workers', type=int, default=None, help='parallel compiles (default: one per CPU core)')
    ap.add_argument('--extensions', action='store_true', help="also build notebook 15's torch extensions (needs a GPU)")
    a = ap.parse_args(argv)
    from course.autotune import compile_all
    start = time.perf_counter()
    variants = course_variants()
    print(f"kernel variants to compile: {len(variants)}", flush=True)
    print(f"compiled (or found in the cache) in {compile_all(variants, workers=a.workers):.0f} s", flush=True)
    if a.extensions:
        from utils import import_notebook
        import_notebook('15').all_kernels()
        print(f"and the torch extensions: {time.perf_counter() - start:.0f} s in all")
    return 0


if __name__ == '__main__':
    sys.exit(main())
