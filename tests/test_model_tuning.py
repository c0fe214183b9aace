"""The model-ranked autotuner on a CPU: a pretend GPU whose times follow known rates, so that the fitted rates, the
ranking and the choice of split can be checked exactly."""
from types import SimpleNamespace

import pytest

from course.model_tuning import Rates, fit_rates, model_tuner, modeled_ms, ranked, variant_key
from course.waves import plan

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


def test_calibrate_fits_each_variant_aligned_and_not():
    from course.model_tuning import calibrate
    vs = [SimpleNamespace(**variant(bm, bn).__dict__, resources=lambda r=r: {'blocks_per_sm': r.blocks_per_sm})
          for (bm, bn), r in TRUE_RATES.items()]
    shapes = {True: ((4096, 256, 4096), (4096, 4096, 4096)), False: ((4095, 255, 4095), (4095, 4095, 4095))}
    cal = calibrate(vs, SMS, shapes, time_ms=true_ms, progress=False)
    assert len(cal) == 2 * len(vs)
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


def test_the_tuner_times_only_the_top_few_and_returns_the_fastest_first():
    timed = []
    def pretend(c, h, k, w):
        timed.append(c)
        return true_ms(c, h, k, w) * (0.5 if c.params['splits'] == 2 else 1.0)   # the GPU disagrees with the model
    tune = model_tuner(calibration(), SMS, top=3, time_ms=pretend)
    trials = tune(candidates(), 256, 8192, 8192, progress=False)
    assert len(timed) == 3 and [t.variant for t in trials] == sorted(timed, key=lambda c: pretend(c, 256, 8192, 8192))
    assert trials[0].ms <= trials[-1].ms
    assert {c.params['splits'] for c in timed} != {1}


def test_the_tuner_refuses_without_a_calibration():
    with pytest.raises(ValueError, match='calibrate'):
        model_tuner({}, SMS, time_ms=true_ms)(candidates(), 100, 100, 100, progress=False)
