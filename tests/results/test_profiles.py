"""Performance profiles (raycomp.results.profiles) on hand-made times whose profiles are known, and the time to a
target each method's curves give."""

from __future__ import annotations

import math

import pytest

from raycomp.results.profiles import NEVER, performance_profile, time_to_target

# Two methods on three workloads: A is the fastest on w1, twice B's best on w2 and never reaches w3's target.
TIMES = {"A": {"w1": 10.0, "w2": 20.0, "w3": NEVER}, "B": {"w1": 20.0, "w2": 10.0, "w3": 30.0}}


def test_two_methods_on_three_workloads_have_the_profiles_worked_out_by_hand():
    profile = performance_profile(TIMES)
    assert profile.workloads == ("w1", "w2", "w3") and profile.methods == ("A", "B")
    assert [profile.ratio("A", w) for w in profile.workloads] == [1.0, 2.0, NEVER]
    assert [profile.ratio("B", w) for w in profile.workloads] == [2.0, 1.0, 1.0]
    assert [profile.fraction_within("A", tau) for tau in (1, 1.5, 2, 100)] == pytest.approx(
        [1 / 3, 1 / 3, 2 / 3, 2 / 3]
    )
    assert [profile.fraction_within("B", tau) for tau in (1, 1.5, 2, 100)] == pytest.approx([2 / 3, 2 / 3, 1, 1])
    # AlgoPerf's score: the area under rho from 1 to 4, over 3
    assert profile.area("A", 4) == pytest.approx((3 + 2) / 9) and profile.area("B", 4) == pytest.approx((2 + 3 + 3) / 9)
    taus, fractions = profile.steps("A", 4)
    assert taus == [1.0, 2.0, 4.0] and fractions == pytest.approx([1 / 3, 2 / 3, 2 / 3])


def test_a_method_missing_from_a_workload_counts_as_never_there_and_a_workload_nobody_solves_counts_for_nobody():
    profile = performance_profile({"A": {"w1": 5.0}, "B": {"w1": 10.0, "w2": NEVER}})
    assert profile.ratio("A", "w2") == NEVER and profile.ratio("B", "w2") == NEVER
    assert profile.fraction_within("A", 1) == 0.5 and profile.fraction_within("B", 2) == 0.5
    with pytest.raises(ValueError, match="at least one workload"):
        performance_profile({})


def test_time_to_target_is_the_median_over_seeds_of_the_first_evaluation_at_each_seeds_target():
    curves = {0: [(1.0, 0.5), (2.0, 0.8), (3.0, 0.9)], 1: [(1.0, 0.7), (2.0, 0.85)], 2: [(1.0, 0.1), (4.0, 0.2)]}
    targets = {0: 0.8, 1: 0.9, 2: 0.15, 3: 0.5}  # seed 3 ran no trial of this method: left out
    assert time_to_target(curves, targets, "max") == 4.0  # seeds: 2.0, never, 4.0 -> median 4.0
    assert time_to_target(curves, targets, "max", tolerance=0.05) == 2.0  # seed 1 gets within 0.05 at 2.0
    assert time_to_target({0: [(1.0, 0.5)], 1: [(1.0, 0.9)]}, {0: 0.8, 1: 0.8}, "max") == NEVER  # 1 of 2: never
    assert time_to_target({0: [(1.0, 2.0), (2.0, 1.0)]}, {0: 1.2}, "min") == 2.0  # a loss: at or below the target
    assert math.isinf(time_to_target({}, {0: 1.0}, "max"))
