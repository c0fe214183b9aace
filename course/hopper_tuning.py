"""The Hopper kernel on every shape: a choice of specialized.cu's switches per shape, made by a model and checked by
timing a short list, kept on disk; and rows TMA cannot copy, on padded copies.

Notebook 13's step 8 fixes its switches: tiles of 128 x 256, clusters of 2, stream-K for the last round. On a product
of 128 rows, the second block of each cluster multiplies rows that do not exist; on 3072 x 3072, 12 x 12 tiles of 256
columns fill 144 multiprocessors' worth of units on 132; on a long K, stream-K's hand-over may cost more than the
round it shortens. So, as notebook 10's fp32 tuner does, a model ranks every candidate of `CANDIDATES` (tile width
128, 192 or 256, 64 or 128 rows per tile, clusters of 1 or 2, stream-K on or off, consumers sharing a tile or taking
turns), the few
it ranks best are timed (course.model_tuning.model_tuner) and the winner is kept per GPU, code and shape
(course.tuning_cache). The model, for one candidate:

- a unit (a tile, or CLUSTER tiles for a cluster) costs `overhead + stages x stage` ms, both measured once per GPU
  (`calibrate`: a few full rounds of units at two lengths of K, two times for two unknowns, kept on disk);
- the GPU runs `resident` clusters at once (as many as the launcher's occupancy query says, `launch_plan`), each
  busy for the stages course.stream_k's schedule gives it (with stream-K: its stretch of the last round and the
  hand-overs), so the product takes the busiest one's time;
- and no product is faster than reading A and B and writing C once (`floor_ms`).

`TunedHopperMatmul(kernel_of, fallback)` is the callable: bf16 inputs checked as everywhere; shapes TMA can copy go
to the tuned kernel for their shape; rows TMA cannot copy (K or N not a multiple of 8 values, or an input that does not
start on 16 bytes) are copied into padded, aligned buffers first (`padded_shape`), so that such a product costs its
aligned neighbour's time plus the copies; `fallback` serves only where padding would not fit in memory.
"""
import math

from .cuda_library import current_gpu
from .hopper_dispatch import dispatch_bf16, padded_copies
from .stream_k import HANDOVER_STAGES, stages_per_cluster
from .waves import H100_HBM_TBPS

BK = 64                    # K per stage, as in every Hopper step (common.cuh)
H100_SMS = 132

# The candidates: specialized.cu's switches (course.hopper_ladder.specialized_variant's parameters), the first step 8's
# own. Tiles 256 wide fit 4 stages of 48 KiB, 192 wide 5 of 40 KiB, 128 wide 6 of 32 KiB; 192 is 3 boxes of 64 columns,
# which a cluster of 2 cannot share evenly. A tile of 64 rows has one consumer (few-row products), which keeps a wgmma
# group in flight: no other consumer's group keeps the tensor cores busy while it waits (bench/hopper_shapes.py --steps
# measures the switch with two consumers). The last two are step 10's ping-pong: 64 x 128 tiles, two consumers taking
# turns, 6 or 8 stages of 24 KiB (deeper for few rows, where the time goes to reading B).
CANDIDATES = (*(dict(BN=bn, STAGES=4 if bn == 256 else 6, CONSUMERS=2, CLUSTER=cluster, STREAM_K=sk, IN_FLIGHT=False)
                for bn in (256, 128) for cluster in (2, 1) for sk in (True, False)),
              *(dict(BN=192, STAGES=5, CONSUMERS=2, CLUSTER=1, STREAM_K=sk, IN_FLIGHT=False) for sk in (True, False)),
              *(dict(BN=bn, STAGES=5 if bn == 256 else 6, CONSUMERS=1, CLUSTER=1, STREAM_K=True, IN_FLIGHT=True)
                for bn in (256, 128)),
              *(dict(BN=128, STAGES=stages, CONSUMERS=2, CLUSTER=2, STREAM_K=True, IN_FLIGHT=True, PINGPONG=True,
                     OVERLAP=False) for stages in (6, 8)))


def tile_rows(params):
    "The rows of one tile: 64 per consumer, or 64 in all where the consumers take turns (PINGPONG, step 10)."
    return 64 if params.get('PINGPONG') else 64 * params['CONSUMERS']


def workers(params):
    "How many tiles a block works on at once: one, or one per consumer where they take turns."
    return params['CONSUMERS'] if params.get('PINGPONG') else 1


def units_of(params, h, w):
    "The units (CLUSTER tiles, one above the other) of an h x w product with a candidate's tiles."
    rows = tile_rows(params) * params['CLUSTER']
    return math.ceil(h / rows) * math.ceil(w / params['BN'])


def busiest_stages(params, h, k, w, resident):
    """The stages of K the busiest cluster multiplies (with stream-K, hand-overs counted in stages, as
    course.stream_k's model does), and the units or pieces of units it takes."""
    units, k_tiles = units_of(params, h, w), math.ceil(k / BK)
    if params['STREAM_K']:
        per_cluster = stages_per_cluster(units, resident, k_tiles, handover=params.get('SK_HANDOVER', HANDOVER_STAGES))
        return max(per_cluster), math.ceil(units / resident)
    rounds = math.ceil(units / resident)
    return rounds * k_tiles, rounds


def floor_ms(h, k, w, tbps=H100_HBM_TBPS):
    "The time to read A and B and write C once, bf16, at `tbps` TB/s."
    return 2 * (h * k + k * w + h * w) / (tbps * 1e12) * 1e3


def modeled_ms(rates, params, h, k, w, tbps=H100_HBM_TBPS):
    """The model's time for one candidate on h x k @ k x w: `rates` = (overhead ms per unit, ms per stage, resident
    clusters), as `calibrate` measures them."""
    overhead, stage, resident = rates
    stages, pieces = busiest_stages(params, h, k, w, resident)
    return max(pieces * max(overhead, 0.0) + stages * stage, floor_ms(h, k, w, tbps))


def nominal_rates(params, sms=H100_SMS, peak_tflops=989.0):
    """(overhead ms, ms per stage, resident clusters) of a candidate at the datasheet's dense bf16 peak (the H100
    SXM's unless said), with no overhead: what the model assumes before `calibrate` has measured this GPU. Where the
    consumers take turns, each counts as a cluster of its own, at its share of the multiprocessor's rate."""
    flop = 2 * tile_rows(params) * params['BN'] * BK                  # one tile's stage
    return 0.0, flop / (peak_tflops * 1e12 / sms / workers(params)) * 1e3, sms // params['CLUSTER'] * workers(params)


CALIBRATION_NAME = 'Hopper kernel rates per candidate, from 4 square rounds of units'   # its name on disk
CALIBRATION_ROUNDS = 4      # rounds of units in each calibration shape: enough GPU time that the host's is a small part
CALIBRATION_K = (4096, 16384)


def calibration_shapes(params, resident, rounds=CALIBRATION_ROUNDS):
    """Two shapes of exactly `rounds` full rounds of units (`resident` clusters each take one unit a round), their
    tiles laid out as near a square as `resident`'s factors allow (so that they reuse each other's rows of A and
    columns of B from L2, as on a large product), with CALIBRATION_K's two lengths of K: their difference is the time
    of the extra stages, what is left the units' overhead. Each is large enough (tens of GFLOP at least) that the
    host's time per call hides under the GPU's."""
    units = rounds * resident
    across = max(d for d in range(1, math.isqrt(units) + 1) if units % d == 0)         # units side by side
    h, w = units // across * tile_rows(params) * params['CLUSTER'], across * params['BN']
    return tuple((h, k, w) for k in CALIBRATION_K)


def rates_from(times, shapes, rounds=CALIBRATION_ROUNDS):
    "(overhead ms, ms per stage) of a unit from the times of `calibration_shapes`' two shapes."
    (t1, t2), (k1, k2) = times, (shapes[0][1] // BK, shapes[1][1] // BK)
    stage = max((t2 - t1) / rounds / (k2 - k1), 1e-9)
    return t1 / rounds - k1 * stage, stage


def padded_shape(h, k, w):
    "K and w rounded up to multiples of 8 values (16 bytes of bf16): the widths TMA can copy."
    return h, -(-k // 8) * 8, -(-w // 8) * 8


def padding_bytes(h, k, w):
    """What the padded copies of an h x k @ k x w product move (bf16): A and B read, their padded copies written (the
    new columns and rows as zeros), and, where w is padded, C's first w columns read and written again."""
    _, k8, w8 = padded_shape(h, k, w)
    return 2 * (h * k + h * k8 + k * w + k8 * w8 + (2 * h * w if w8 != w else 0))


class TunedHopperMatmul:
    """C = A B (bf16 in and out, fp32 sums) by specialized.cu's kernel with the switches tuned for each shape.

    `kernel_of(**params)` makes the callable of one candidate (notebook 14 passes one that builds a
    course.hopper_ladder.StepMatmul from its device code); `fallback(m, n)` takes products whose padded copies would
    not fit in memory. Tuning happens on a shape's first call (timings of a few hundred milliseconds, the model's
    calibration once per GPU, kept on disk), never while a CUDA graph is being captured: then the model's pick is
    used (the first candidate, step 8's switches, if the model is not calibrated yet), and the
    tuning waits for a call outside capture."""
    def __init__(self, kernel_of, fallback, candidates=CANDIDATES, path=None, progress=False):
        self.candidates = [kernel_of(**params) for params in candidates]
        self.fallback, self.path, self.progress = fallback, path, progress
        self.winners = {}               # (GPU, h, k, w) -> the candidate kept
        self.calibration = None         # params key -> (overhead ms, ms per stage, resident clusters), this GPU's
        self.last_tuning = None         # what the last tuning saw (course.model_tuning.Tuning)

    def __call__(self, m, n):
        return dispatch_bf16(m, n, self.on_tma, self.padded, self.unavailable)

    def unavailable(self):
        return self.candidates[0].unavailable()

    def chosen(self, h, k, w, device=None):
        "The candidate GPU `device` (the current one unless said) runs h x k @ k x w with: kept, read from disk, or tuned now."
        key = (current_gpu() if device is None else device, h, k, w)
        kept = self.winners.get(key)
        if kept is not None: return kept                      # (before any import: this is every call's path)
        import torch
        from .tuning_cache import gpu_identity, load_winner, tuned
        if torch.cuda.is_current_stream_capturing():          # no timing inside a capture: a winner from disk, else
            kept = load_winner(self.candidates, h, k, w, 'bfloat16', gpu_identity(), self.path)   # the model's pick,
            if kept is None:                                  # or the first candidate
                return self.ranked(h, k, w)[0][1] if self.calibration else self.candidates[0]
        else:
            kept = tuned(self.candidates, h, k, w, 'bfloat16', self.path, tune=self.tune, progress=self.progress)
        self.winners[key] = kept
        return kept

    def on_tma(self, m, n):
        (h, k), w = m.shape, n.shape[1]
        return self.chosen(h, k, w, m.get_device()).on_tma(m, n)

    def padded(self, m, n):
        """A product TMA cannot copy as it is: its inputs copied into buffers of the padded widths (zeros beyond the
        matrices: they add nothing), the product taken there, and its first w columns copied out."""
        import torch
        (h, k), w = m.shape, n.shape[1]
        _, k8, w8 = padded_shape(h, k, w)
        free, _ = torch.cuda.mem_get_info(m.device)
        if padding_bytes(h, k, w) + 2 * h * w8 > free // 2: return self.fallback(m, n)
        c = self.on_tma(*padded_copies(m, n, 8))
        return c if w8 == w else c[:, :w].contiguous()

    # ---- the model and its calibration ----
    def calibrate(self):
        """{params key: (overhead ms, ms per stage, resident clusters)} for every candidate on this GPU: measured once
        (two short timings each) and kept on disk with the tuning results."""
        from .model_tuning import short_time_ms
        from .tuning_cache import remembered
        def measure():
            rates = {}
            for c in self.candidates:
                resident = c.launch_plan(1 << 16, BK, 1 << 16)[0] * workers(c.params)
                shapes = calibration_shapes(c.params, resident)
                times = [short_time_ms(c, *shape, dtype='bfloat16', reps=5) for shape in shapes]
                rates[_key(c.params)] = (*rates_from(times, shapes), resident)
            return rates
        if self.calibration is None:
            self.calibration = remembered(CALIBRATION_NAME, self.candidates, measure, self.path)
        return self.calibration

    def rates(self, params):
        "(overhead ms, ms per stage, resident clusters) of the candidate with these switches, as calibrated on this GPU."
        return self.calibrate()[_key(params)]

    def ranked(self, h, k, w):
        "[(modeled ms, candidate)] for every candidate, fastest first."
        rates = self.calibrate()
        return sorted(((modeled_ms(rates[_key(c.params)], c.params, h, k, w), c) for c in self.candidates),
                      key=lambda pair: pair[0])

    def tune(self, candidates, h, k, w, progress=False, dtype='bfloat16'):
        "course.model_tuning.model_tuner's timing of the model's shortlist; `self.last_tuning` keeps what it saw."
        from .model_tuning import model_tuner
        tuner = model_tuner(None, H100_SMS, top=4, finalists=2, rank=lambda cands, *shape: self.ranked(*shape))
        trials = tuner(candidates, h, k, w, progress=progress, dtype=dtype)
        self.last_tuning = tuner.last
        return trials

    def __repr__(self): return f"TunedHopperMatmul({len(self.candidates)} candidates)"


def _key(params):
    "A candidate's switches as one string (a JSON object's key)."
    return ' '.join(f"{name}={params[name]}" for name in ('BN', 'STAGES', 'CONSUMERS', 'CLUSTER', 'STREAM_K', 'IN_FLIGHT')) + (
        ' PINGPONG=True' if params.get('PINGPONG') else '')



def tuned_matmul(source, fallback, **options):
    """A TunedHopperMatmul of specialized.cu compiled after `source` (notebook 13's HOPPER_SOURCE), products that
    cannot be padded going to `fallback`; `options`: TunedHopperMatmul's (candidates, path, progress)."""
    from .hopper_ladder import StepMatmul, specialized_variant
    return TunedHopperMatmul(lambda **params: StepMatmul('tuned', specialized_variant(source, **params), fallback),
                             fallback, **options)


def switches(params):
    "A candidate's switches in a few words: '128x256, cluster 2, stream-K, in flight'."
    return (f"{tile_rows(params)}x{params['BN']}, cluster {params['CLUSTER']}"
            + (", stream-K" if params['STREAM_K'] else "") + (", in flight" if params['IN_FLIGHT'] else "")
            + (f", ping-pong, {params['STAGES']} stages" if params.get('PINGPONG') else ""))
