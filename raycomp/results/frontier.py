"""The baseline frontier: the baseline's score against its training budget, and where a configuration's accuracy
reaches it (the budget whose time is that configuration's reference in ``raycomp.results.verdicts``).

**The frontier is a curve.** The baseline trains at several budgets (fractions of ``max_duration``, 1.0
is the baseline itself, above 1 prices accuracy gains). Its accuracy against budget is fitted once over
every seed's runs, monotone (isotonic regression, pool-adjacent-violators), so one seed whose shorter
budget happened to beat its full one no longer turns metric noise into time noise. Its *time* stays per
seed: at seed i the reference time for a budget is that seed's own measured time of it (interpolated
between budgets), which keeps the pairing in time that cancels slow spells of the machine.
"""

from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Iterable, Mapping
from typing import Literal, NamedTuple

import numpy as np

ROUNDING = 1e-9  # an interval must clear 1 (log 0) by more than this: equal times, interpolated, are not faster

Position = Literal["within", "below", "beyond"]


class Reach(NamedTuple):
    """The budget at which the fitted frontier reaches a target, and where the target lies against it."""

    budget: float
    position: Position


@dataclasses.dataclass(frozen=True)
class Frontier:
    """The baseline's score (accuracy, or minus a loss) against budget: non-decreasing, fitted over all seeds.

    ``budgets`` ascending; ``scores`` the isotonic fit of the mean score at each budget, weighted by its
    number of runs. Linear between budgets."""

    budgets: tuple[float, ...]
    scores: tuple[float, ...]

    @classmethod
    def fit(cls, points: Iterable[tuple[float, float]]) -> Frontier | None:
        """From (budget, score) points of every seed; None without any."""
        by_budget: dict[float, list[float]] = {}
        for budget, score in points:
            by_budget.setdefault(budget, []).append(score)
        if not by_budget:
            return None
        budgets = sorted(by_budget)
        means = np.array([statistics.fmean(by_budget[b]) for b in budgets])
        weights = np.array([float(len(by_budget[b])) for b in budgets])
        if len(budgets) > 1:
            from scipy.optimize import isotonic_regression

            means = isotonic_regression(means, weights=weights, increasing=True).x
        return cls(tuple(budgets), tuple(float(m) for m in means))

    def score_at(self, budget: float) -> float:
        return float(np.interp(budget, self.budgets, self.scores))

    def reach(self, score: float) -> Reach:
        """The earliest budget whose fitted score reaches ``score``: beyond the best, at the best's budget."""
        budgets, scores = self.budgets, self.scores
        if score > scores[-1] + ROUNDING:
            return Reach(budgets[scores.index(scores[-1])], "beyond")
        if score < scores[0] - ROUNDING:
            return Reach(budgets[0], "below")
        for k, reached in enumerate(scores):
            if reached >= score - ROUNDING:
                if k == 0 or reached <= scores[k - 1]:
                    return Reach(budgets[k], "within")
                share = (score - scores[k - 1]) / (reached - scores[k - 1])
                return Reach(budgets[k - 1] + share * (budgets[k] - budgets[k - 1]), "within")
        return Reach(budgets[-1], "within")  # unreachable: score <= scores[-1]


def time_at(budget_times: Mapping[float, float], budget: float) -> float:
    """A seed's training time at ``budget``: ``budget`` times the median of its budgets' time per unit of budget.

    Every budget trains the same steps (only more or fewer of them), so each of a seed's baseline trials
    measures the same step cost; their median is the seed's reference, not the full baseline's one trial.
    That trial alone carried whatever ran beside it: two trials share the machine's two cores, and in the
    default sweep the baseline happened to run beside the same lighter SelectiveBackprop arm at every seed
    (the arms' order is seeded), measurably below its own frontier budgets and its control, which then came
    out a false ``slower`` (docs/report.md). The median of four trials with different neighbours halves that spread."""
    return budget * statistics.median(time_s / b for b, time_s in budget_times.items())


def reference_reach(frontier: Frontier, mean_gain: float, tolerance: float) -> Reach:
    """Where the configuration's accuracy reaches the frontier: from its *mean* paired gain over the seeds.

    Equal within tolerance is the full baseline's own budget (the fitted curve may be flat up to it: a
    shorter budget that matched the full one would otherwise price an identical arm at that budget); only
    the part of the gain beyond tolerance moves the reference along the frontier. One budget for every
    seed: read seed by seed, each seed's accuracy noise (a few tenths of a point on 1,000 test images)
    became time noise through the frontier's slope (a few tenths of a point moved the reference by a tenth of
    the baseline's time), and it, not the timing, kept configurations near 1.0x open (docs/report.md)."""
    excess = mean_gain - min(max(mean_gain, -tolerance), tolerance)
    return Reach(1.0, "within") if excess == 0 else frontier.reach(frontier.score_at(1.0) + excess)
