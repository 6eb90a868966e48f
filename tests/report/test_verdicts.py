"""Speed-up verdicts (raycomp.report.verdicts): the statistics on simulated sweeps, then hand-made cases.

The simulations use bench/simulate_verdicts.py's model (the one docs/report.md's power table comes from)
with fixed generator seeds, so every run of these tests draws the same sweeps.
"""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest

from raycomp.report.verdicts import (
    FASTER,
    LESS_ACCURATE,
    NO_EVIDENCE,
    SLOWER,
    Reach,
    Run,
    Verdict,
    best_config,
    frontier_reach,
    frontier_time,
    noise_floor,
    t_interval,
    verdict_for,
)

_spec = importlib.util.spec_from_file_location(
    "simulate_verdicts", Path(__file__).parents[2] / "bench" / "simulate_verdicts.py"
)
simulation = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(simulation)


def share(verdicts: list[Verdict], *names: str) -> float:
    return sum(v.verdict in names for v in verdicts) / len(verdicts)


# -- the guarantees, on simulated sweeps --


def test_aa_sweeps_at_cv_02_and_3_seeds_give_a_false_verdict_at_most_5_percent():
    verdicts = simulation.simulate(np.random.default_rng(12), sweeps=1500, seeds=3, effect=1.0, cv=0.2)
    assert share(verdicts, FASTER, SLOWER) <= 0.05


def test_aa_with_identical_accuracies_is_calibrated_at_the_nominal_level():
    """Nothing off the frontier: each direction is a 2.5 % tail of an exact t interval (3 Monte Carlo sd)."""
    verdicts = simulation.simulate(np.random.default_rng(7), sweeps=1500, seeds=3, effect=1.0, cv=0.2, accuracy_sd=0)
    tolerance = 3 * math.sqrt(0.025 * 0.975 / 1500)
    assert share(verdicts, FASTER) == pytest.approx(0.025, abs=tolerance)
    assert share(verdicts, SLOWER) == pytest.approx(0.025, abs=tolerance)


def test_interval_covers_the_planted_speedup_at_3_seeds():
    verdicts = simulation.simulate(np.random.default_rng(3), sweeps=1500, seeds=3, effect=1.5, cv=0.2, accuracy_sd=0)
    coverage = sum(v.speedup_ci_low < 1.5 < v.speedup_ci_high for v in verdicts) / len(verdicts)
    assert coverage == pytest.approx(0.95, abs=3 * math.sqrt(0.05 * 0.95 / 1500))


def test_a_planted_2x_speedup_at_cv_01_and_3_seeds_is_found_at_least_90_percent():
    verdicts = simulation.simulate(np.random.default_rng(2), sweeps=1000, seeds=3, effect=2.0, cv=0.1)
    assert share(verdicts, FASTER) >= 0.90
    assert all(0 < v.speedup_ci_low <= v.speedup <= v.speedup_ci_high for v in verdicts)


def test_a_planted_accuracy_drop_well_beyond_tolerance_is_less_accurate():
    verdicts = simulation.simulate(
        np.random.default_rng(5), sweeps=200, seeds=3, effect=2.0, cv=0.1, accuracy_drop=0.02
    )
    assert share(verdicts, LESS_ACCURATE) == 1.0
    assert all(v.accuracy_delta_ci_high < -0.005 for v in verdicts)


# -- the frontier --

FRONTIER = [Run(0, 0.90, 50.0), Run(0, 0.94, 75.0), Run(0, 0.96, 100.0)]


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        (0.92, Reach(62.5, "within")),  # halfway between the 0.5 and 0.75 budgets
        (0.95, Reach(87.5, "within")),
        (0.94, Reach(75.0, "within")),  # exactly a budget's accuracy
        (0.96, Reach(100.0, "within")),  # the full baseline's accuracy: not beyond
        (0.90, Reach(50.0, "within")),
        (0.97, Reach(100.0, "beyond")),  # better than every budget: the best budget's time, a lower bound
        (0.85, Reach(50.0, "below")),  # worse than the cheapest budget: its time, an upper bound
    ],
)
def test_frontier_interpolates_between_budgets(target, expected):
    reach = frontier_reach(reversed(FRONTIER), target)
    assert reach.position == expected.position
    assert reach.time_s == pytest.approx(expected.time_s)


def test_frontier_time_is_none_beyond_the_frontier():
    assert frontier_time(FRONTIER, 0.97) is None
    assert frontier_time(FRONTIER, 0.95) == pytest.approx(87.5)
    assert frontier_time([], 0.95) is None
    assert frontier_reach([Run(0, None, 50.0), Run(0, 0.9, None)], 0.9) == Reach(None, None)


def test_a_longer_budget_that_did_worse_leaves_the_frontier_flat():
    noisy = [Run(0, 0.90, 50.0), Run(0, 0.95, 75.0), Run(0, 0.94, 100.0), Run(0, 0.97, 125.0)]
    assert frontier_time(noisy, 0.95) == pytest.approx(75.0)
    assert frontier_time(noisy, 0.96) == pytest.approx(112.5)  # from (100, 0.95) to (125, 0.97)
    assert frontier_reach(noisy[:3], 0.96) == Reach(75.0, "beyond")  # the time it reached its best


def test_a_full_budget_that_ran_fastest_starts_the_frontier_at_its_accuracy():
    """Timing noise can reorder budgets: below its first point the frontier is at that point, not below it."""
    reordered = [Run(0, 0.96, 48.0), Run(0, 0.90, 50.0)]
    assert frontier_reach(reordered, 0.93) == Reach(48.0, "within")
    assert frontier_reach(reordered, 0.89) == Reach(48.0, "below")


def test_frontier_for_a_metric_to_minimise():
    losses = [Run(0, 1.0, 50.0), Run(0, 0.6, 100.0)]
    assert frontier_time(losses, 0.8, mode="min") == pytest.approx(75.0)
    assert frontier_reach(losses, 0.5, mode="min").position == "beyond"
    with pytest.raises(ValueError, match="mode"):
        frontier_reach(losses, 0.5, mode="maximum")


# -- verdicts on hand-made seeds --


def runs(*pairs, curves=None):
    return [Run(seed, acc, time_s, curves[seed] if curves else ()) for seed, (acc, time_s) in enumerate(pairs)]


BASELINE = runs((0.96, 100.0), (0.96, 110.0), (0.96, 90.0))
SHORT_BUDGETS = [Run(seed, 0.90, 0.5 * b.time_s) for seed, b in enumerate(BASELINE)]


def test_a_config_twice_as_fast_at_the_same_accuracy():
    verdict = verdict_for(runs((0.96, 50.0), (0.96, 56.0), (0.96, 44.0)), BASELINE, SHORT_BUDGETS)
    assert verdict.verdict == FASTER
    assert verdict.n == 3 and verdict.seeds == (0, 1, 2)
    assert verdict.speedup == pytest.approx((100 / 50 * 110 / 56 * 90 / 44) ** (1 / 3))
    assert verdict.speedup_ci_low > 1
    assert verdict.accuracy_delta == 0 and verdict.accuracy_delta_ci_low == verdict.accuracy_delta_ci_high == 0
    assert (verdict.accuracy_median, verdict.time_median_s) == (0.96, 50.0)
    assert verdict.speedup_to_full_baseline == pytest.approx(verdict.speedup)
    assert verdict.beyond_frontier == verdict.below_frontier == 0


def test_the_frontier_credits_a_less_accurate_config_only_with_the_time_its_accuracy_needs():
    """0.93 is what the frontier reaches at 3/4 of the full time: a config taking 3/4 of it saves nothing."""
    config = runs(*((0.93, 0.75 * b.time_s) for b in BASELINE))
    verdict = verdict_for(config, BASELINE, SHORT_BUDGETS, tolerance=0.05)
    assert verdict.speedup == pytest.approx(1.0)
    assert verdict.verdict == NO_EVIDENCE
    assert verdict.full_baseline_reached == 0 and verdict.speedup_to_full_baseline is None


def test_time_to_the_full_baseline_comes_from_the_curve():
    curves = {0: ((25.0, 0.9), (40.0, 0.96)), 1: ((30.0, 0.97),), 2: ((20.0, 0.5),)}
    config = runs((0.97, 50.0), (0.97, 60.0), (0.97, 40.0), curves=curves)
    verdict = verdict_for(config, BASELINE, SHORT_BUDGETS)
    assert verdict.full_baseline_reached == 3
    assert verdict.speedup_to_full_baseline == pytest.approx((100 / 40 * 110 / 30 * 90 / 40) ** (1 / 3))
    assert verdict.beyond_frontier == 3  # 0.97 beats every budget: the speed-up is against the full baseline
    assert verdict.speedup == pytest.approx((100 / 50 * 110 / 60 * 90 / 40) ** (1 / 3))


def test_less_accurate_wins_over_faster():
    verdict = verdict_for(runs((0.93, 20.0), (0.935, 21.0), (0.932, 22.0)), BASELINE, SHORT_BUDGETS)
    assert verdict.verdict == LESS_ACCURATE
    assert verdict.accuracy_delta == pytest.approx((0.93 + 0.935 + 0.932) / 3 - 0.96)


def test_a_loss_is_less_accurate_when_it_is_higher():
    losses = runs((0.5, 100.0), (0.5, 110.0), (0.5, 90.0))
    worse = verdict_for(runs((0.6, 50.0), (0.61, 55.0), (0.62, 45.0)), losses, [], mode="min")
    better = verdict_for(runs((0.4, 100.0), (0.41, 110.0), (0.42, 90.0)), losses, [], mode="min")
    assert worse.verdict == LESS_ACCURATE
    assert better.verdict == NO_EVIDENCE and better.beyond_frontier == 3


def test_slower_is_not_claimed_beyond_the_frontier_and_faster_not_below_it():
    slow_but_better = verdict_for(runs((0.97, 200.0), (0.97, 220.0), (0.97, 180.0)), BASELINE, SHORT_BUDGETS)
    assert slow_but_better.speedup_ci_high < 1
    assert slow_but_better.verdict == NO_EVIDENCE and "beyond" in slow_but_better.note
    slow = verdict_for(runs((0.96, 200.0), (0.96, 220.0), (0.96, 180.0)), BASELINE, SHORT_BUDGETS)
    assert slow.verdict == SLOWER
    fast_but_worse = verdict_for(runs((0.85, 10.0), (0.85, 11.0), (0.85, 9.0)), BASELINE, SHORT_BUDGETS, tolerance=1)
    assert fast_but_worse.speedup_ci_low > 1 and fast_but_worse.below_frontier == 3
    assert fast_but_worse.verdict == NO_EVIDENCE and "below" in fast_but_worse.note


def test_missing_trials_drop_their_seed_pair():
    config = [Run(0, 0.96, 50.0), Run(1, None, 55.0), Run(2, 0.96, None), Run(3, 0.96, 40.0), Run(4, 0.96, 45.0)]
    baseline = [*BASELINE, Run(3, float("nan"), 80.0)]  # seed 4 has no baseline at all
    verdict = verdict_for(config, baseline, SHORT_BUDGETS)
    assert verdict.n == 1 and verdict.seeds == (0,)
    assert verdict.verdict == NO_EVIDENCE and verdict.note == "one paired seed: no interval"
    assert verdict.speedup == pytest.approx(2.0) and verdict.speedup_ci_low is None
    assert verdict.accuracy_delta_ci_low is None
    assert verdict.time_median_s == pytest.approx(45.0)  # the config's own runs with a value: 50, 40, 45
    empty = verdict_for([], BASELINE, SHORT_BUDGETS)
    assert (empty.n, empty.verdict, empty.note, empty.speedup) == (0, NO_EVIDENCE, "no paired seeds", None)


def test_best_config_has_the_highest_lower_bound_among_those_not_less_accurate():
    def made(verdict: str, low: float | None, point: float) -> Verdict:
        return Verdict(verdict, 3, (0, 1, 2), point, low, None, None, 0, None, None, None, None, None, 0, 0)

    verdicts = {
        "fast but inaccurate": made(LESS_ACCURATE, 3.0, 4.0),
        "wide": made(NO_EVIDENCE, 0.9, 2.5),
        "steady": made(FASTER, 1.2, 1.4),
        "steady, higher point": made(FASTER, 1.2, 1.5),
        "one seed": made(NO_EVIDENCE, None, 9.0),
    }
    assert best_config(verdicts) == "steady, higher point"
    assert best_config({"one seed": verdicts["one seed"]}) is None
    assert best_config({}) is None


def test_t_interval_and_noise_floor():
    mean, low, high = t_interval([1.0, 2.0, 3.0])
    assert mean == 2.0 and (low, high) == pytest.approx((2 - 4.302653 / math.sqrt(3), 2 + 4.302653 / math.sqrt(3)))
    assert t_interval([1.0]) is None
    assert noise_floor([90.0, 100.0, 110.0, None]) == pytest.approx(0.1)
    assert noise_floor([100.0]) is None
