"""What the seeds can support, said before the candidates train: the baseline's seed-to-seed spread, and the
accuracy tolerance Confirm's seeds can show a truly equal recipe within.

A find starts by training the baseline and its frontier alone at Screen's first seeds. Their spread says how many
paired seeds it takes to show a recipe's accuracy equal within ``find.accuracy_tolerance`` (``seed_power``: the
power of the non-inferiority half of ``faster``, asked 90 % of the time so that, with the speed-up's half, a
recipe truly faster at equal accuracy is recommended about 80 % of the time). When that is more than Confirm's
last look has, no recipe could be recommended, however fast: the find stops there and says which tolerance is
within reach, or takes it when ``find.accuracy_tolerance: auto``. A spread read off a few seeds is itself
uncertain, so the find stops only when the tolerance is out of reach even at the low end of what those seeds say
(the spread's one-sided 90 % chi-square bound): a find that could still answer is not stopped by chance; and the
tolerance it offers (and ``auto`` takes) is within reach even at the high end.

How much a recipe's paired difference from the baseline varies at one seed is read off the same runs: the
baseline at each budget and seed, less each budget's mean and each seed's (what a seed shares, its data order and
initialisation, cancels in a paired difference as it does here), leaves one trial's own noise; a paired difference
holds two such noises (√2). Without frontier budgets it is √2 times the baseline's seed-to-seed spread, which
counts the shared part too, so errs on the side of more seeds.
"""

from __future__ import annotations

import math
import statistics

import numpy as np

from raycomp.base import keys
from raycomp.find.observations import Observations, frontier_arm
from raycomp.find.plan import FindPlan
from raycomp.find.race import Request, Round
from raycomp.find.state import SCREEN, FindState
from raycomp.results.seed_power import equal_accuracy_seeds, reachable_tolerance

REACH_POWER = 0.9  # "within reach": Confirm's seeds show a truly equal accuracy this often


def settle_tolerance(plan: FindPlan, state: FindState, observations: Observations) -> Round | None:
    """Sets ``state.tolerance`` (and ``state.spread``) from the baseline's first seeds; the round that trains them
    while they are missing, else None. A tolerance out of reach ends the find (``state.out_of_reach``)."""
    seeds = range(plan.screen.first)
    baseline = [run for run in observations.runs(keys.BASELINE, seeds) if run.accuracy is not None and run.time_s]
    if len(baseline) < len(seeds):
        return _references(plan, observations, seeds)
    accuracy_sd = statistics.stdev(run.accuracy for run in baseline)  # type: ignore[misc]
    times = [run.time_s for run in baseline]
    time_cv = statistics.stdev(times) / statistics.fmean(times)  # type: ignore[arg-type]
    (spread, spread_df), last = paired_spread(plan, observations, seeds, accuracy_sd), plan.confirm.last
    level = plan.confirm.level(last, plan.confidence)
    needed = equal_accuracy_seeds(spread, plan.tolerance, level, REACH_POWER)
    reachable = reachable_tolerance(spread * _end(spread_df, 0.1), last, level, REACH_POWER)
    state.spread = spread_line(plan, accuracy_sd, time_cv, len(baseline), needed)
    at_best = equal_accuracy_seeds(spread * _end(spread_df, 0.9), plan.tolerance, level, REACH_POWER)
    if at_best is not None and at_best <= last:
        state.tolerance = plan.tolerance
    elif plan.tolerance_auto:
        state.tolerance = max(plan.tolerance, _rounded_up(reachable))
        state.spread += f"; find.accuracy_tolerance: auto takes {_amount(state.tolerance, plan)}"
    else:
        state.out_of_reach = (
            f"equal accuracy within {_amount(plan.tolerance, plan)} is out of reach of Confirm's {last} seeds: "
            f"{_amount(_rounded_up(reachable), plan)} is within reach. Set find.accuracy_tolerance: "
            f"{_rounded_up(reachable):g} (or auto), or bring the spread down (longer runs, more eval data), and run "
            "the find again with --resume"
        )
    return None


def paired_spread(plan: FindPlan, observations: Observations, seeds: range, accuracy_sd: float) -> tuple[float, int]:
    """The sd of one seed's paired difference and its degrees of freedom: √2 × one trial's own noise, from the
    residuals of the budgets-by-seeds table once each budget's and each seed's mean is taken out; √2 ×
    ``accuracy_sd`` without budgets."""
    arms = [keys.BASELINE, *(frontier_arm(budget) for budget in plan.frontier_budgets)]
    table = np.array([[run.accuracy for run in observations.runs(arm, seeds)] for arm in arms], dtype=float)
    if table.shape != (len(arms), len(seeds)) or len(arms) < 2 or not np.isfinite(table).all():
        return math.sqrt(2) * accuracy_sd, len(seeds) - 1
    residuals = table - table.mean(axis=1, keepdims=True) - table.mean(axis=0, keepdims=True) + table.mean()
    degrees = (len(arms) - 1) * (len(seeds) - 1)
    return math.sqrt(2 * float((residuals**2).sum()) / degrees), degrees


def _end(degrees: int, quantile: float) -> float:
    """The factor from a spread read off ``degrees`` of freedom to its one-sided 90 % bound: the low end at
    ``quantile`` 0.9, the high end at 0.1 (chi-square)."""
    from scipy import stats

    return math.sqrt(degrees / stats.chi2.ppf(quantile, degrees))


def spread_line(plan: FindPlan, accuracy_sd: float, time_cv: float, seeds: int, needed: int | None) -> str:
    """``the baseline's eval/accuracy varies by ±0.9 points between seeds (its time by 2.1 %, 3 seeds); equal
    accuracy within 0.5 points needs about 21 seeds``."""
    how_many = f"about {needed} seeds" if needed is not None else "more than 100 seeds"
    return (
        f"the baseline's {plan.metric} varies by ±{_amount(accuracy_sd, plan)} between seeds (its time by "
        f"{time_cv:.1%}, over {seeds} seeds); equal {plan.metric} within {_amount(plan.tolerance, plan)} needs "
        f"{how_many} (Confirm has {plan.confirm.last})"
    )


def _references(plan: FindPlan, observations: Observations, seeds: range) -> Round:
    """The baseline and its frontier at ``seeds``, those not trained yet: the find's first round."""
    wanted = [Request(keys.BASELINE, seed, keys.BASELINE) for seed in seeds]
    wanted += [Request(frontier_arm(b), s, keys.FRONTIER, budget=b) for b in plan.frontier_budgets for s in seeds]
    return Round(SCREEN, tuple(r for r in wanted if not observations.has(r.arm, r.seed)))


def _amount(value: float, plan: FindPlan) -> str:
    """In points for a [0, 1] metric, else in its units."""
    return f"{value * 100:.2g} points" if plan.bounds == (0.0, 1.0) else f"{value:.3g}"


def _rounded_up(value: float) -> float:
    """Two significant figures, up: a tolerance a person would write (0.0141 -> 0.015)."""
    if value <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(value)) - 1)
    return math.ceil(value / step - 1e-9) * step
