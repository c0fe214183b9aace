"""course.targets: the sentence that says whether a kernel met its target against a reference, and by how much."""
import pytest

from course.targets import against_target


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


def test_an_unknown_kind_is_refused():
    with pytest.raises(ValueError, match="kind must be one of"): against_target(1.0, 1.0, 'cuBLAS', 'throughput', 1.0)
