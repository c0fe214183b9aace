"""An autotuner that answers in seconds: a model of the kernel ranks every variant for a shape, and only the few it
ranks best are timed.

The model, for one variant (tile sizes BM x BN x BK) and one split of K: a block computes one unit (a tile of C over
one piece of K) in `overhead + steps x step` ms, where `steps` is the number of BK steps in its piece of K and
`overhead` what a tile costs besides them (starting the pipeline, storing the tile). The GPU runs
`slots = SMs x blocks per SM` units at once, so a run takes `waves x unit time` (`course.waves.plan` counts the waves),
plus, with split-K, the partial sums' traffic; and no run is faster than moving A, B and C once through device memory.

`overhead` and `step` are each variant's own: `calibrate` measures them once per machine, from two shapes that differ
only in K (two times, two unknowns), once with rows that start on 16 bytes and once with rows that do not (the
kernel then reads float by float). The memory floor and the partial sums' traffic are not measured: they use a
bandwidth in TB/s, `tbps`, the H100 SXM's datasheet figure unless said (`H100_HBM_TBPS`), so on another GPU pass its
own. A new shape then costs the model's arithmetic for every variant and split, and the timing of the few it ranks
best (at least 8, more where they are quick to time: as many as its estimate of their timings fits in half a
second; and the best-ranked of each tile shape, should the model misprice one), then a longer timing of the fastest
three: `model_tuner(calibration, sms)` is a `tune` function for `course.tuning_cache.tuned`, and keeps what its last
tuning saw (`tune.last`, a `Tuning`).
"""
import json, math
from typing import NamedTuple

from .autotune import Trial, random_input_pairs
from .progress import progress as progress_of
from .template_variants import padded_widths
from .timing import cuda_time_ms
from .waves import H100_HBM_TBPS, partial_sums_bytes, plan

# Two shapes with the same tiles and waves, one K short and one long: the difference in time is the K steps'. The
# aligned ones (every size a multiple of 4), and unaligned ones (no size a multiple of 4).
CALIBRATION_SHAPES = {True: ((4096, 256, 4096), (4096, 4096, 4096)), False: ((4095, 255, 4095), (4095, 4095, 4095))}


class Rates(NamedTuple):
    overhead_ms: float      # a unit's time besides its K steps
    step_ms: float          # one BK step of one unit
    blocks_per_sm: int      # the variant's blocks per multiprocessor


def variant_key(params, aligned=True):
    """The name a variant's rates are kept under: its parameters, less how it is run (the split of K, padded copies),
    and whether the rows start on 16 bytes."""
    return json.dumps({k: v for k, v in params.items() if k not in ('splits', 'padded')}, sort_keys=True) + ('' if aligned else ' unaligned')


def rows_aligned(k, w):
    "Whether every row of A (k floats), B and C (w floats) can start on 16 bytes."
    return k % 4 == 0 and w % 4 == 0


def fit_rates(params, blocks_per_sm, timings, sms):
    """Rates from `timings` ({(h, k, w): ms} for shapes with the same h and w, whole-variant runs without split-K):
    the least-squares line through (waves x steps, ms) with `waves x overhead` as its intercept, kept non-negative."""
    rows = []
    for (h, k, w), ms in timings.items():
        p = plan(h, k, w, params['BM'], params['BN'], 1, sms, blocks_per_sm, params['BK'])
        rows.append((p.waves, p.waves * p.k_per_unit // params['BK'], ms))
    if len(rows) < 2: raise ValueError("fit_rates needs the times of at least two shapes")
    # ms = waves * overhead + (waves * steps) * step: least squares in (overhead, step)
    a11 = sum(wv * wv for wv, _, _ in rows); a12 = sum(wv * st for wv, st, _ in rows); a22 = sum(st * st for _, st, _ in rows)
    b1 = sum(wv * ms for wv, _, ms in rows); b2 = sum(st * ms for _, st, ms in rows)
    det = a11 * a22 - a12 * a12
    if det == 0: raise ValueError("the calibration shapes must differ in K")
    overhead, step = (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det
    if overhead < 0:                                       # a line through the origin instead
        overhead, step = 0.0, b2 / a22
    return Rates(overhead, max(step, 0.0), blocks_per_sm)


def modeled_ms(rates, params, h, k, w, splits, sms, tbps=H100_HBM_TBPS):
    """The model's time of one variant with K cut into `splits` pieces on h x k @ k x w, in ms."""
    p = plan(h, k, w, params['BM'], params['BN'], splits, sms, rates.blocks_per_sm, params['BK'])
    compute = p.waves * (rates.overhead_ms + p.k_per_unit // params['BK'] * rates.step_ms)
    traffic = (h * k + k * w + h * w) * 4 / (tbps * 1e9)                   # A, B and C once, in ms
    partials = partial_sums_bytes(splits, h, w) / (tbps * 1e9)
    return max(compute, traffic) + partials


PADDING_KERNELS_MS = 3 * 0.003     # Padded's three copies are three more kernels: a few µs each, however small


def padding_bytes(h, k, w):
    """The bytes `Padded`'s copies move besides the kernel's own: A and B read, and written padded; C's padded result
    read, and written cut back."""
    k4, w4 = padded_widths(k, w)
    return 4 * (h * k + h * k4 + k * w + k4 * w4 + h * w4 + h * w)


def ranked(candidates, calibration, h, k, w, sms, most_workspace=2**30, tbps=H100_HBM_TBPS):
    """(modeled ms, candidate) for every candidate the model can price, fastest first. A candidate is a variant with
    `params` (its `splits` among them, 1 if absent; `padded`, if it runs on padded copies: priced with the aligned
    rates at the padded widths, plus the copies' traffic and kernels); one whose splits K cannot take (more pieces than BK
    steps), whose workspace would pass `most_workspace` bytes, whose variant was never calibrated, or that pads
    rows already aligned, is left out."""
    priced = []
    for c in candidates:
        splits, padded = c.params.get('splits', 1), c.params.get('padded', False)
        if padded and rows_aligned(k, w): continue                       # nothing to pad: the same as unpadded
        kk, ww = padded_widths(k, w) if padded else (k, w)
        rates = calibration.get(variant_key(c.params, rows_aligned(kk, ww)))
        if rates is None or splits > math.ceil(kk / c.params['BK']): continue
        if splits > 1 and splits * h * ww * 4 > most_workspace: continue
        copies = PADDING_KERNELS_MS + padding_bytes(h, k, w) / (tbps * 1e9) if padded else 0.0
        priced.append((modeled_ms(Rates(*rates), c.params, h, kk, ww, splits, sms, tbps) + copies, c))
    return sorted(priced, key=lambda t: t[0])


def calibrate(variants, sms, shapes=CALIBRATION_SHAPES, time_ms=None, progress=True):
    """{variant_key: Rates} for every variant, aligned rows and not, from its time on each of `shapes` ({aligned: shapes};
    `time_ms(variant, h, k, w)`, by default a short timing on the GPU with rotating inputs)."""
    time_ms = time_ms or short_time_ms
    calibration = {}
    for v in progress_of(list(variants), 'calibrating the model', 'variant', show=progress):
        for aligned, pair in shapes.items():
            timings = {shape: time_ms(v, *shape) for shape in pair}
            calibration[variant_key(v.params, aligned)] = fit_rates(v.params, v.resources(aligned)['blocks_per_sm'], timings, sms)
    return calibration


_INPUTS = {}


def calls_back_to_back(h, k, w):
    "How many calls `short_time_ms` queues back to back on h x k @ k x w: about 40 GFLOP of work, 10 calls at most."
    return max(1, min(10, math.ceil(4e10 / max(2 * h * k * w, 1))))


SHORT_TIMING_WARMUP = 1   # rounds of calls `short_time_ms` runs before it times (`affordable` counts them too)


def short_time_ms(fn, h, k, w, dtype='float32', input_sets=2, reps=3):
    """A short timing of fn on h x k @ k x w: calls back to back, rotating `input_sets` random input pairs (kept for
    reuse). Enough calls go back to back for about 40 GFLOP of work (10 at most), so that on a small shape the CPU's
    cost of each call (checks, launches) hides behind the GPU's work on the calls before it, as in a program that
    calls it in a loop: timed alone, a 0.06 ms product would be ranked by its launch cost."""
    key = (h, k, w, dtype, input_sets)
    if key not in _INPUTS:
        _INPUTS.clear()                                # keep one shape's inputs at a time
        _INPUTS[key] = random_input_pairs(h, k, w, dtype, input_sets)
    sets = _INPUTS[key]
    return cuda_time_ms(fn, arg_sets=sets, back_to_back=calls_back_to_back(h, k, w), reps=reps, warmup=SHORT_TIMING_WARMUP,
                        max_seconds=0.05 * reps / 3)


def shortlist(order, top):
    """The candidates to time, from the model's ranking `order` ((ms, candidate), fastest first): its `top` best, then
    the best-ranked candidate of each tile shape (BM x BN, and whether its consumers take turns: PINGPONG) not among
    them, so that a tile shape the model misprices on this shape still gets one timing."""
    tile_of = lambda c: (c.params['BM'], c.params['BN'], c.params.get('PINGPONG', False))
    picked = [c for _, c in order[:top]]
    tiles = {tile_of(c) for c in picked}
    for _, c in order[top:]:
        tile = tile_of(c)
        if tile not in tiles:
            tiles.add(tile)
            picked.append(c)
    return picked


TIMING_BUDGET_S = 0.5     # what the shortlist's short timings may cost on a new shape, by the model's estimate
TIMING_OVERHEAD_MS = 1.0  # what a short timing costs besides the calls it times (inputs, synchronising), roughly


def affordable(order, h, k, w, budget_s=TIMING_BUDGET_S, reps=3):
    """How many of the model's best candidates (`order`, fastest first) `short_time_ms` can time on h x k @ k x w
    within `budget_s`, estimating each timing from the candidate's modeled time: on a product of a few hundredths of
    a millisecond, a hundred or so; on a large one, a handful."""
    per_call, spent, n = calls_back_to_back(h, k, w) * (reps + SHORT_TIMING_WARMUP), 0.0, 0   # timed and warm-up rounds
    for ms, _ in order:
        spent += (per_call * ms + TIMING_OVERHEAD_MS) / 1e3
        if spent > budget_s: break
        n += 1
    return n


class Tuning(NamedTuple):
    "What one model-ranked tuning saw: the model's ranking, the short timings of its shortlist, the finalists' longer ones."
    order: list             # (modeled ms, candidate) for every candidate the model priced, fastest first
    timed: list             # Trial per candidate of the shortlist, from its short timing, fastest first
    final: list             # Trial per finalist, from its longer timing, fastest first: final[0] is kept

    def rank_of(self, candidate):
        "The model's rank of `candidate` (1: the one it priced fastest)."
        return next(i for i, (_, c) in enumerate(self.order, 1) if c is candidate)


def model_tuner(calibration, sms, top=8, finalists=3, time_ms=None, final_time_ms=None, budget_s=TIMING_BUDGET_S,
                tbps=H100_HBM_TBPS, rank=None):
    """A `tune(variants, h, k, w, progress, dtype)` function (as `course.tuning_cache.tuned` calls it) that times only
    the candidates of the model's `shortlist` of its `top` best, or of as many as `affordable` within `budget_s` where
    that is more, then times the `finalists` fastest of them again, longer (their times are often within the noise
    of a short timing), and returns the trials, the finalists first, fastest first. `tbps`: the memory bandwidth the
    model assumes (the H100's datasheet figure unless said). `rank(candidates, h, k, w)`, where given, is the model
    instead of this module's `ranked` (course.hopper_tuning's). After each tuning, `tune.last` is its `Tuning`."""
    def tune(candidates, h, k, w, progress=True, dtype='float32'):
        order = rank(candidates, h, k, w) if rank else ranked(candidates, calibration, h, k, w, sms, tbps=tbps)
        if not order: raise ValueError(f"the model cannot price any candidate for {h}x{k}x{w}: calibrate first")
        timer = time_ms or (lambda fn, h, k, w: short_time_ms(fn, h, k, w, dtype))
        final_timer = final_time_ms or (lambda fn, h, k, w: short_time_ms(fn, h, k, w, dtype, reps=15))
        picked = shortlist(order, max(top, affordable(order, h, k, w, budget_s)))
        trials = sorted((Trial(c, timer(c, h, k, w)) for c in progress_of(
            picked, f"timing the model's {len(picked)} best", 'variant', show=progress)), key=lambda t: t.ms)
        final = sorted((Trial(t.variant, final_timer(t.variant, h, k, w)) for t in trials[:finalists]), key=lambda t: t.ms)
        tune.last = Tuning(order, trials, final)
        return final + trials[finalists:]
    tune.last = None
    return tune
