"""The model-ranked autotuner on a CPU: a pretend GPU whose times follow known rates, so that the fitted rates, the
ranking and the choice of split can be checked exactly."""
from types import SimpleNamespace

import pytest

from course.model_tuning import Rates, fit_rates, model_tuner, modeled_ms, PADDING_KERNELS_MS, padding_bytes, ranked, shortlist, variant_key
from course.waves import H100_HBM_TBPS, plan

SMS = 132


def variant(bm, bn, bk=16, splits=1):
    return SimpleNamespace(params={'BM': bm, 'BN': bn, 'BK': bk, 'splits': splits}, source=f'{bm}x{bn}x{bk}')


TRUE_RATES = {(64, 128): Rates(0.004, 0.0010, 2), (128, 128): Rates(0.006, 0.0016, 1), (128, 256): Rates(0.010, 0.0030, 1)}


def true_ms(c, h, k, w):
    "The pretend GPU: exactly the model with TRUE_RATES."
    return modeled_ms(TRUE_RATES[c.params['BM'], c.params['BN']], c.params, h, k, w, c.params.get('splits', 1), SMS)


def test_fit_rates_recovers_the_rates_from_two_shapes():
    for (bm, bn), rates in TRUE_RATES.items():
        v = variant(bm, bn)
        timings = {s: true_ms(v, *s) for s in ((4096, 256, 4096), (4096, 4096, 4096))}
        fitted = fit_rates(v.params, rates.blocks_per_sm, timings, SMS)
        assert fitted.overhead_ms == pytest.approx(rates.overhead_ms) and fitted.step_ms == pytest.approx(rates.step_ms)


def test_fit_rates_needs_two_values_of_k():
    with pytest.raises(ValueError, match='differ in K'):
        fit_rates(variant(128, 128).params, 1, {(4096, 512, 4096): 1.0, (4096 * 2, 512, 4096): 2.0}, SMS)


def calibration():
    return {variant_key(variant(bm, bn).params): r for (bm, bn), r in TRUE_RATES.items()}


def candidates():
    return [variant(bm, bn, splits=s) for bm, bn in TRUE_RATES for s in (1, 2, 4, 8, 16)]


def test_a_skinny_problem_is_ranked_to_split_k_and_a_square_one_not():
    big_tiles = [c for c in candidates() if c.params['BM'] == 128]    # 64 x 128 tiles, 2 per SM, fill the GPU unsplit
    fastest = ranked(big_tiles, calibration(), 256, 8192, 8192, SMS)[0][1]
    assert fastest.params['splits'] > 1
    assert plan(256, 8192, 8192, fastest.params['BM'], fastest.params['BN'], 1, SMS).units < SMS   # too few tiles alone
    square = ranked(candidates(), calibration(), 4096, 4096, 4096, SMS)[0][1]
    assert square.params['splits'] == 1


def test_unaligned_shapes_are_priced_with_unaligned_rates():
    slow = {variant_key(variant(bm, bn).params, False): Rates(r.overhead_ms, 3 * r.step_ms, r.blocks_per_sm)
            for (bm, bn), r in TRUE_RATES.items()}
    both = {**calibration(), **slow}
    aligned, unaligned = (ranked(candidates(), both, 4096, 4096 - d, 4096, SMS)[0][0] for d in (0, 1))
    assert unaligned > 2 * aligned
    assert ranked(candidates(), calibration(), 4096, 4095, 4096, SMS) == []        # never calibrated unaligned


def padded(c):
    return SimpleNamespace(params={**c.params, 'padded': True}, source=c.source)


def test_padded_copies_are_priced_with_aligned_rates_and_their_traffic():
    slow = {variant_key(variant(bm, bn).params, False): Rates(r.overhead_ms, 1.2 * r.step_ms, r.blocks_per_sm)
            for (bm, bn), r in TRUE_RATES.items()}
    both = {**calibration(), **slow}
    cs = candidates() + [padded(c) for c in candidates()]
    assert not any(c.params.get('padded') for _, c in ranked(cs, both, 4096, 4096, 4096, SMS))   # nothing to pad
    big = ranked(cs, both, 4095, 4095, 4095, SMS)
    assert big[0][1].params.get('padded')                      # 20% slower steps cost more than the copies
    ms, c = big[0]
    at_padded_size = modeled_ms(TRUE_RATES[c.params['BM'], c.params['BN']], c.params, 4095, 4096, 4096, c.params['splits'], SMS)
    assert ms == pytest.approx(at_padded_size + PADDING_KERNELS_MS + padding_bytes(4095, 4095, 4095) / (H100_HBM_TBPS * 1e9))
    small = ranked(cs, both, 40, 4095, 40, SMS)[0][1]
    assert not small.params.get('padded')                      # three more kernels cost more than the product itself


def test_padding_bytes_counts_each_copy():
    assert padding_bytes(2, 3, 5) == 4 * (2 * 3 + 2 * 4 + 3 * 5 + 4 * 8 + 2 * 8 + 2 * 5)


def test_calibrate_fits_each_variant_aligned_and_not():
    from course.model_tuning import calibrate
    asked = []
    def resources(aligned, r):
        asked.append(aligned)
        return {'blocks_per_sm': r.blocks_per_sm}
    vs = [SimpleNamespace(**variant(bm, bn).__dict__, resources=lambda aligned=True, r=r: resources(aligned, r))
          for (bm, bn), r in TRUE_RATES.items()]
    shapes = {True: ((4096, 256, 4096), (4096, 4096, 4096)), False: ((4095, 255, 4095), (4095, 4095, 4095))}
    cal = calibrate(vs, SMS, shapes, time_ms=true_ms, progress=False)
    assert len(cal) == 2 * len(vs)
    assert sorted(asked) == [False] * len(vs) + [True] * len(vs)     # each instantiation's own occupancy
    for v in vs:
        for aligned in (True, False):
            assert cal[variant_key(v.params, aligned)].step_ms == pytest.approx(TRUE_RATES[v.params['BM'], v.params['BN']].step_ms, rel=0.05)


def test_ranked_leaves_out_what_it_cannot_price():
    cs = candidates() + [variant(32, 32)]                              # never calibrated
    priced = [c for _, c in ranked(cs, calibration(), 64, 20, 64, SMS)]
    assert all(c.params['splits'] <= 2 for c in priced)                # K = 20 has 2 steps of 16
    assert not any(c.params['BM'] == 32 for c in priced)
    huge = [c for _, c in ranked(cs, calibration(), 8192, 8192, 8192, SMS, most_workspace=2**30)]
    assert all(c.params['splits'] * 8192 * 8192 * 4 <= 2**30 or c.params['splits'] == 1 for c in huge)


def test_the_tuner_times_the_shortlist_then_the_finalists_longer():
    timed, final = [], []
    def pretend(c, h, k, w):
        timed.append(c)
        return true_ms(c, h, k, w) * (0.5 if c.params['splits'] == 2 else 1.0)   # the GPU disagrees with the model
    def pretend_long(c, h, k, w):
        final.append(c)
        return pretend(c, h, k, w)
    tune = model_tuner(calibration(), SMS, top=3, finalists=2, time_ms=pretend, final_time_ms=pretend_long, budget_s=0)
    trials = tune(candidates(), 256, 8192, 8192, progress=False)
    shape = (256, 8192, 8192)
    picked = shortlist(ranked(candidates(), calibration(), *shape, SMS), 3)
    assert timed[:len(picked)] == picked and len(timed) == len(picked) + 2      # each once, the 2 finalists again
    by_time = sorted(picked, key=lambda c: pretend(c, *shape))
    assert final == by_time[:2] and [t.variant for t in trials] == by_time
    assert trials[0].ms <= trials[1].ms and {c.params['splits'] for c in picked} != {1}


def test_the_shortlist_times_each_tile_shape_at_least_once():
    order = ranked(candidates(), calibration(), 4096, 4096, 4096, SMS)
    picked = shortlist(order, 2)
    assert picked[:2] == [c for _, c in order[:2]]
    tiles = [(c.params['BM'], c.params['BN']) for c in picked]
    assert sorted(set(tiles)) == sorted(TRUE_RATES) and len(picked) == 2 + len(set(tiles) - set(tiles[:2]))
    for c in picked[2:]:                                  # each added one is the best-ranked of its tile shape
        same = [d for _, d in order if (d.params['BM'], d.params['BN']) == (c.params['BM'], c.params['BN'])]
        assert c is same[0]


def test_the_finalists_longer_timing_decides():
    short = {(64, 128): 1.0, (128, 128): 1.1}             # the short timing prefers 64 x 128 tiles
    long = {(64, 128): 1.3, (128, 128): 1.2}              # the longer one, 128 x 128: it decides
    def tile(c): return c.params['BM'], c.params['BN']
    tune = model_tuner(calibration(), SMS, top=6, finalists=2, time_ms=lambda c, *s: short.get(tile(c), 9) + c.params['splits'],
                       final_time_ms=lambda c, *s: long.get(tile(c), 9) + c.params['splits'], budget_s=0)
    best = tune([variant(64, 128), variant(128, 128), variant(128, 256)], 4096, 4096, 4096, progress=False)[0]
    assert best.variant.params['BM'] == 128 and best.variant.params['BN'] == 128 and best.ms == pytest.approx(2.2)


def test_quick_candidates_get_more_timings_within_the_budget():
    from course.model_tuning import affordable
    order = [(0.08, None)] * 500                          # a small product: 0.08 ms each
    n_small = affordable(order, 777, 1234, 999, budget_s=0.5)
    assert n_small == int(0.5e3 // (10 * 4 * 0.08 + 1.0))    # 10 calls back to back, 3 reps and a warm-up, + 1 ms
    assert affordable([(3.0, None)] * 500, 4096, 4096, 4096, budget_s=0.5) == int(0.5e3 // (4 * 3.0 + 1.0))
    assert affordable(order, 777, 1234, 999, budget_s=0) == 0
    timed = []
    tune = model_tuner(calibration(), SMS, top=2, finalists=1, time_ms=lambda c, *s: timed.append(c) or 1.0,
                       final_time_ms=lambda c, *s: 1.0, budget_s=0.5)
    shape = (768, 1232, 1024)
    order = ranked(candidates(), calibration(), *shape, SMS)
    tune(candidates(), *shape, progress=False)
    wanted = shortlist(order, max(2, affordable(order, *shape, budget_s=0.5)))
    assert timed[:len(wanted)] == wanted and len(wanted) > 2     # more than `top`: these are quick to time


def test_short_timings_queue_small_products_back_to_back(monkeypatch):
    import course.model_tuning as mt
    seen = {}
    monkeypatch.setattr(mt, 'random_input_pairs', lambda h, k, w, dtype, count: [(h, k, w)] * count)
    monkeypatch.setattr(mt, 'cuda_time_ms', lambda fn, arg_sets, back_to_back, reps, warmup, max_seconds: seen.setdefault((arg_sets[0], reps), back_to_back))
    for shape in ((777, 1234, 999), (5120, 256, 5120), (6000, 6000, 6000)):
        mt.short_time_ms(None, *shape)
    mt.short_time_ms(None, 6000, 6000, 6000, reps=15)
    assert seen[(777, 1234, 999), 3] == 10            # 0.06 ms of GPU work: launches must hide behind it
    assert 1 < seen[(5120, 256, 5120), 3] < 10
    assert seen[(6000, 6000, 6000), 3] == 1 and seen[(6000, 6000, 6000), 15] == 1


def test_the_tuner_refuses_without_a_calibration():
    with pytest.raises(ValueError, match='calibrate'):
        model_tuner({}, SMS, time_ms=true_ms)(candidates(), 100, 100, 100, progress=False)


def test_the_tuner_keeps_what_its_last_tuning_saw():
    timed = []
    def pretend(c, h, k, w):
        timed.append((true_ms(c, h, k, w) * (0.5 if c.params['splits'] == 4 else 1.0), c))   # the GPU disagrees
        return timed[-1][0]
    tune = model_tuner(calibration(), SMS, top=4, finalists=2, time_ms=pretend, final_time_ms=pretend, budget_s=0)
    assert tune.last is None
    shape = (256, 8192, 8192)
    cands = candidates()
    kept = tune(cands, *shape, progress=False)[0].variant
    seen, short = tune.last, timed[:len(tune.last.timed)]          # the short timings, then the finalists' again
    assert [(ms, c.params) for ms, c in seen.order] == [(ms, c.params) for ms, c in ranked(cands, calibration(), *shape, SMS)]
    assert [t.variant for t in seen.timed] == [c for _, c in sorted(short, key=lambda t: t[0])]
    assert seen.final[0].variant is kept and kept.params['splits'] == 4
    assert seen.rank_of(seen.order[0][1]) == 1 and seen.rank_of(kept) == 1 + [c for _, c in seen.order].index(kept)


def test_the_tuner_prices_traffic_at_the_bandwidth_it_is_given():
    slow = model_tuner(calibration(), SMS, top=1, finalists=1, time_ms=true_ms, final_time_ms=true_ms, budget_s=0,
                       tbps=H100_HBM_TBPS / 100)
    slow(candidates(), 50000, 16, 1000, progress=False)         # K = 16: the memory floor decides
    floor = 4 * (50000 * 16 + 16 * 1000 + 50000 * 1000) / (H100_HBM_TBPS / 100 * 1e9)
    assert slow.last.order[0][0] >= floor
