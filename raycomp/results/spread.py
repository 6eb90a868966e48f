"""How much the baseline's metric varies between seeds, and what that lets a sweep's or a find's seeds show.

A configuration's paired difference from the baseline at one seed holds two trials' own noise; what a seed shares
(its data order and initialisation) cancels. With the baseline trained at several budgets on the same seeds, one
trial's own noise is what is left of the budgets-by-seeds table once each budget's and each seed's mean is taken
out (a two-way table's residuals); with the baseline alone it is the baseline's seed-to-seed spread, shared part
and all, which errs toward more seeds. ``seed_power`` turns the spread into seeds: the power of the accuracy half
of ``faster`` (non-inferiority within the tolerance).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Sequence

import numpy as np

from raycomp.base import keys
from raycomp.results.intervals import look_confidence
from raycomp.results.judging import Judging, trial_time
from raycomp.results.seed_power import equal_accuracy_seeds
from raycomp.results.summary import TrialSummary

REACH_POWER = 0.9  # "within reach": the seeds show a truly equal accuracy this often (the speed-up's half aside)
# The budgets whose residuals measure a trial's own noise: trained near the baseline's length. A short budget's
# accuracy swings far more between seeds than a method near the baseline's accuracy does (find_cnn's half budget:
# docs/benchmarks.md, issue 55), and put a tolerance of tens of points "within reach".
NEAR_FULL_BUDGET = 0.75


@dataclasses.dataclass(frozen=True)
class Spread:
    """The baseline's seed-to-seed sd of the metric and CV of its time over ``seeds`` seeds; ``paired``: the sd
    of one seed's paired difference, read off ``degrees`` degrees of freedom."""

    accuracy_sd: float
    time_cv: float
    seeds: int
    paired: float
    degrees: int

    @classmethod
    def of(cls, table: Sequence[Sequence[float]], times: Sequence[float]) -> Spread | None:
        """From the baseline's metric at each budget (rows; the full baseline first) and seed (columns) and the
        full baseline's times; None with fewer than two seeds."""
        values = np.array(table, dtype=float)
        if values.ndim != 2 or values.shape[1] < 2 or not np.isfinite(values).all() or len(times) < 2:
            return None
        budgets, seeds = values.shape
        accuracy_sd = float(np.std(values[0], ddof=1))
        time_cv = statistics.stdev(times) / statistics.fmean(times)
        if budgets < 2:
            return cls(accuracy_sd, time_cv, seeds, math.sqrt(2) * accuracy_sd, seeds - 1)
        residuals = values - values.mean(axis=1, keepdims=True) - values.mean(axis=0, keepdims=True) + values.mean()
        degrees = (budgets - 1) * (seeds - 1)
        return cls(accuracy_sd, time_cv, seeds, math.sqrt(2 * float((residuals**2).sum()) / degrees), degrees)

    def bound(self, quantile: float) -> float:
        """The paired sd at its one-sided 90 % bound: the low end at ``quantile`` 0.9, the high end at 0.1."""
        from scipy import stats

        return self.paired * math.sqrt(self.degrees / stats.chi2.ppf(quantile, self.degrees))

    def seeds_needed(self, tolerance: float, confidence: float, paired: float | None = None) -> int | None:
        """Paired seeds that show a truly equal accuracy within ``tolerance`` ``REACH_POWER`` of the time."""
        return equal_accuracy_seeds(self.paired if paired is None else paired, tolerance, confidence, REACH_POWER)

    def line(self, metric: str, tolerance: float, confidence: float, cap: int, points: bool, cap_name: str) -> str:
        """``the baseline's eval/accuracy varies by ±0.9 points between seeds (its time by 2.1 %, over 3 seeds), a
        paired difference by ±1.3 points; equal eval/accuracy within 0.5 points needs about 21 seeds (Confirm has
        8)``. The paired difference is what the seeds needed (and an ``auto`` tolerance) come from: it can be far
        larger than the baseline's own spread when its budgets move apart from seed to seed."""
        needed = self.seeds_needed(tolerance, confidence)
        how_many = f"about {needed} seeds" if needed is not None else "more than 100 seeds"
        return (
            f"the baseline's {metric} varies by ±{amount(self.accuracy_sd, points)} between seeds (its time by "
            f"{self.time_cv:.1%}, over {self.seeds} seeds), a paired difference by ±{amount(self.paired, points)}; "
            f"equal {metric} within {amount(tolerance, points)} needs {how_many} ({cap_name} has {cap})"
        )


def amount(value: float, points: bool) -> str:
    """In points for a [0, 1] metric (``0.86 points``), else in its units."""
    return f"{value * 100:.3g} points" if points else f"{value:.3g}"


def sweep_spread(trials: Sequence[TrialSummary], judging: Judging) -> str | None:
    """The line a sweep prints: its baseline's spread over the seeds where the baseline and each budget finished,
    and the seeds that show equal accuracy at its tolerance against the seeds it may run; None below two seeds."""
    rows: dict[float, dict[int, float]] = {}
    times: dict[int, float] = {}
    for trial in trials:
        if trial.variant not in (keys.BASELINE, keys.FRONTIER) or trial.status != keys.TERMINATED:
            continue
        value, budget = trial.final_metric, trial.budget if trial.variant == keys.FRONTIER else 1.0
        if value is not None and math.isfinite(value) and budget is not None:
            rows.setdefault(budget, {})[trial.repeat or 0] = value
            if budget == 1.0 and (time_s := trial_time(trial, judging.timing)) is not None:
                times[trial.repeat or 0] = time_s
    seeds = sorted(set(times).intersection(*rows.values())) if 1.0 in rows else []
    order = [1.0, *sorted(budget for budget in rows if budget != 1.0 and budget >= NEAR_FULL_BUDGET)]
    spread = Spread.of([[rows[b][s] for s in seeds] for b in order], [times[s] for s in seeds]) if seeds else None
    if spread is None:
        return None
    cap, name = (judging.looks[1], "sweep.max_repeats") if judging.looks else (len(seeds), "sweep.repeats")
    level = look_confidence(cap, *judging.looks, judging.confidence) if judging.looks else judging.confidence
    return spread.line(judging.metric, judging.tolerance, level, cap, judging.bounds == (0.0, 1.0), name)
