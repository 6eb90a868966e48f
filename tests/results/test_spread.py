"""What the baseline's spread lets the seeds show (raycomp.results.spread, seed_power's accuracy half): simulated
tables with a fixed generator, and the line a sweep prints."""

from __future__ import annotations

import math

import numpy as np
import pytest
from reportkit import hand_made_records

from raycomp.results.judging import Judging
from raycomp.results.seed_power import equal_accuracy_power, equal_accuracy_seeds, reachable_tolerance
from raycomp.results.spread import REACH_POWER, Spread, sweep_spread
from raycomp.results.summary import summarize


def test_the_budgets_by_seeds_residuals_leave_out_what_a_seed_shares():
    """Seeds 2 points apart (data order, initialisation) and 0.3 point of a trial's own noise: a paired difference
    varies by √2 x 0.3 point, not by the seeds' 2 points."""
    rng = np.random.default_rng(0)
    seeds, budgets = 200, (0.90, 0.94, 0.96, 0.97)
    shared = 0.02 * rng.standard_normal(seeds)
    table = [[b + s + 0.003 * rng.standard_normal() for s in shared] for b in budgets]
    spread = Spread.of(table, list(100 + rng.standard_normal(seeds)))
    assert spread.paired == pytest.approx(math.sqrt(2) * 0.003, rel=0.1)
    assert spread.accuracy_sd == pytest.approx(0.02, rel=0.2) and spread.degrees == 3 * 199
    alone = Spread.of(table[:1], [100.0] * seeds)  # the baseline alone: its seeds' spread, shared part and all
    assert alone.paired == pytest.approx(math.sqrt(2) * alone.accuracy_sd) and alone.degrees == seeds - 1


def test_seeds_needed_and_the_tolerance_within_reach_agree():
    spread = 0.0093  # find_cnn's Confirm: a paired sd of 0.93 points
    assert equal_accuracy_seeds(spread, 0.005, 0.95, REACH_POWER) > 20  # half a point: out of reach of 8
    reachable = reachable_tolerance(spread, 8, 0.95, REACH_POWER)
    assert 0.005 < reachable < 0.02
    assert equal_accuracy_power(spread, reachable, 8, 0.95) == pytest.approx(REACH_POWER, abs=1e-6)
    assert equal_accuracy_seeds(spread, reachable, 0.95, REACH_POWER) == 8
    assert equal_accuracy_seeds(2 * spread, reachable, 0.95, REACH_POWER) > 8  # more noise, more seeds
    assert equal_accuracy_power(0.0, 0.005, 3) == 1.0 and equal_accuracy_power(spread, 0.005, 1) == 0.0


def test_a_sweep_says_how_its_baseline_varies_and_what_its_seeds_can_show():
    line = sweep_spread(summarize(hand_made_records()), Judging(looks=(3, 12)))
    assert line.startswith("the baseline's eval/accuracy varies by ±1 points between seeds (its time by 3.5%, over 3")
    # its only frontier budget is 0.5, too short to measure a trial's own noise (NEAR_FULL_BUDGET): the baseline's
    # seed-to-seed spread stands for it, shared part and all, which errs toward more seeds
    assert line.endswith("equal eval/accuracy within 0.5 points needs about 98 seeds (sweep.max_repeats has 12)")
    assert ", a paired difference by ±1.41 points; " in line  # one budget: √2 times the baseline's own spread
    assert sweep_spread(summarize(hand_made_records(repeats=1)), Judging()) is None  # one seed: no spread
