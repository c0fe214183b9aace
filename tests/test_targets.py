"""course.targets: the sentence that says whether a kernel met its target against a reference, and by how much."""
import pytest

from course.targets import against_target, against_target_across_runs
from course.timing import Spread


def test_a_speed_target_met_and_missed():
    assert against_target(0.100, 0.070, 'cuBLAS bf16', 'speed', 0.60) == \
        "0.70x cuBLAS bf16's speed; target at least 0.60x: met"
    # 0.177 / 0.347 = 0.51x of the speed, 15% short of 0.60x; 0.60x would take 0.177 / 0.60 = 0.295 ms
    assert against_target(0.347, 0.177, 'cuBLAS bf16', 'speed', 0.60) == \
        "0.51x cuBLAS bf16's speed; target at least 0.60x: missed by 15% (it would need 0.295 ms, not 0.347)"


def test_a_speed_target_met_exactly_counts_as_met():
    assert against_target(0.2, 0.2, 'cuBLAS bf16', 'speed', 1.0).endswith(': met')


def test_a_time_target_met_and_missed():
    assert against_target(0.075, 0.063, 'cuBLAS tf32', 'time', 1.25) == \
        "1.19x cuBLAS tf32's time; target at most 1.25x: met"
    # 0.101 / 0.063 = 1.60x the time, 28% over 1.25x; 1.25x would be 0.063 * 1.25 = 0.079 ms
    assert against_target(0.101, 0.063, 'cuBLAS tf32', 'time', 1.25) == \
        "1.60x cuBLAS tf32's time; target at most 1.25x: missed by 28% (it would need 0.079 ms, not 0.101)"


def test_a_near_miss_gets_the_digits_that_show_it():
    # the H100 bench's 4096³ line: 0.177 against 0.177 at three decimals, and yet a miss
    line = against_target(0.17700, 0.17672, 'cuBLAS bf16', 'speed', 1.0)
    assert line == "0.998x cuBLAS bf16's speed; target at least 1.00x: missed by 0.2% (it would need 0.1767 ms, not 0.1770)"
    assert against_target(0.10011, 0.1, 'cuBLAS', 'time', 1.0) == \
        "1.001x cuBLAS's time; target at most 1.00x: missed by 0.1% (it would need 0.1000 ms, not 0.1001)"
    for ours in (0.1001, 0.10001):                              # a near miss never reads as its own goal
        line = against_target(ours, 0.1, 'cuBLAS', 'speed', 1.0)
        assert 'missed' in line and not line.startswith('1.00') and 'missed by 0% ' not in line and 'by 0.0%' not in line


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"): against_target(1.0, 1.0, 'cuBLAS', 'throughput', 1.0)


def spread_of(median, width=0.002):
    return Spread(median, median * (1 - width / 2), median * (1 + width / 2), ())


def test_across_runs_a_margin_inside_the_references_move_is_too_close_to_call():
    line = against_target_across_runs([spread_of(1.45)], [spread_of(1.55), spread_of(1.47), spread_of(1.61)], 'cuBLAS')
    assert "1.07x cuBLAS's speed (1 measurement(s))" in line and "spread across this run: 9.5%" in line
    assert "its median moved 9.5% over 3 measurement(s), 1.470-1.610 ms; its widest middle half 0.2%" in line
    assert line.endswith("target at least 1.00x: above it, by less than that spread: too close to call")
    below = against_target_across_runs([spread_of(1.65), spread_of(1.50)], [spread_of(1.55), spread_of(1.47), spread_of(1.61)], 'cuBLAS')
    assert "0.94x, 0.98x cuBLAS's speed" in below and below.endswith("below it, by less than that spread: too close to call")


def test_across_runs_met_and_missed_need_every_ratio_past_the_move():
    theirs = [spread_of(1.00), spread_of(1.02), spread_of(1.01)]
    assert against_target_across_runs([spread_of(0.90), spread_of(0.91)], theirs, 'ref').endswith("met: above it by more than that spread")
    assert against_target_across_runs([spread_of(1.10), spread_of(1.12)], theirs, 'ref').endswith("missed: below it by more than that spread")
    # one ratio past the spread, one inside it, both above the goal: too close to call; on both sides of it: on par
    assert against_target_across_runs([spread_of(0.90), spread_of(1.01)], theirs, 'ref').endswith("too close to call")
    assert against_target_across_runs([spread_of(0.90), spread_of(1.03)], theirs, 'ref').endswith(
        "on par: on both sides of it, inside that spread")


def test_across_runs_the_widest_middle_half_counts_too():
    wide = Spread(1.0, 0.95, 1.05, ())        # a middle half 10% wide
    line = against_target_across_runs([spread_of(0.95)], [wide, spread_of(1.0), spread_of(1.0)], 'ref')
    assert "spread across this run: 10.0% (its median moved 0.0% over 3 measurement(s)" in line
    assert line.endswith("above it, by less than that spread: too close to call")
    assert "met" in against_target_across_runs([spread_of(0.85)], [wide, spread_of(1.0), spread_of(1.0)], 'ref',
                                               clocks='clocks: SM 1980 of 1980 MHz')


def test_across_runs_too_few_measurements_of_the_reference_give_no_verdict():
    """Two medians of cuBLAS do not tell its spread: a margin past them (1.06x against a 5% move) is still on par."""
    for theirs in ([spread_of(1.57)], [spread_of(1.496), spread_of(1.570)]):
        line = against_target_across_runs([spread_of(1.40)] * len(theirs), theirs, 'cuBLAS bf16')
        assert line.endswith(f"no verdict: {len(theirs)} measurement(s) of cuBLAS bf16 are too few to know its spread "
                             "(a verdict needs 3)")


def test_across_runs_needs_the_reference_beside_each_of_ours():
    with pytest.raises(ValueError): against_target_across_runs([spread_of(1.0)] * 2, [spread_of(1.0)], 'ref')
    with pytest.raises(ValueError): against_target_across_runs([], [spread_of(1.0)], 'ref')


def test_a_long_sentence_is_wrapped_at_the_notebook_width_without_losing_a_word():
    from course.targets import LINE_WIDTH, wrapped
    sentence = "1.01x, 1.00x cuBLAS bf16's speed (2 measurement(s)); " * 8
    text = wrapped(sentence)
    assert all(len(line) <= LINE_WIDTH for line in text.splitlines()) and len(text.splitlines()) > 2
    assert text.startswith('  1.01x') and all(line.startswith('    ') for line in text.splitlines()[1:])
    assert text.split() == sentence.split()
    assert wrapped('short') == '  short'
