"""What the seeds can support, said before the candidates train: the baseline's seed-to-seed spread, and the
accuracy tolerance Confirm's seeds can show a truly equal recipe within.

A find starts by training the baseline and its frontier alone at Screen's first seeds. Their spread says how many
paired seeds it takes to show a recipe's accuracy equal within ``find.accuracy_tolerance`` (``seed_power``: the
power of the non-inferiority half of ``faster``, asked 90 % of the time so that, with the speed-up's half, a
recipe truly faster at equal accuracy is recommended about 80 % of the time). When that is more than Confirm's
last look has, no recipe could be recommended, however fast: the find stops there and says which tolerance is
within reach, or takes it when ``find.accuracy_tolerance: auto``. A spread read off a few seeds is itself
uncertain, so the find stops only when the tolerance is out of reach even at the low end of what those seeds say
(the spread's one-sided 90 % chi-square bound): a find that could still answer is not stopped by chance. The
tolerance it offers (and ``auto`` takes) is within reach at the spread's 75 % bound (``AUTO_QUANTILE``): at the 90 %
bound, on the few degrees of freedom of three seeds, find_cnn's ``auto`` took a vacuous 32 points.

How much a recipe's paired difference from the baseline varies at one seed is read off the same runs
(``results.spread.Spread``: the residuals of the budgets-by-seeds table, of the budgets trained near the baseline's
length: ``NEAR_FULL_BUDGET``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from raycomp.base import keys
from raycomp.find.observations import Observations, frontier_arm
from raycomp.find.plan import FindPlan
from raycomp.find.race import Request, Round
from raycomp.find.state import CONFIRM, SCREEN, FindState
from raycomp.results.seed_power import reachable_tolerance
from raycomp.results.spread import NEAR_FULL_BUDGET, REACH_POWER, Spread, amount

# The spread's bound the offered tolerance is within reach at: its one-sided 75 % bound. The 90 % bound on the few
# degrees of freedom of three seeds tripled it (a vacuous "equal"); the median took too small a tolerance to show
# a truly equal 1.3x recipe in 80 % of simulated finds (docs/benchmarks.md has both rates).
AUTO_QUANTILE = 0.25


def settle_tolerance(plan: FindPlan, state: FindState, observations: Observations) -> Round | None:
    """Sets ``state.tolerance`` (and ``state.spread``) from the baseline's first seeds; the round that trains them
    while they are missing, else None. A tolerance out of reach ends the find (``state.out_of_reach``)."""
    stage, seeds = _measured_at(plan)
    arms = [plan.arm_for(stage, arm) for arm in (keys.BASELINE, *map(frontier_arm, plan.frontier_budgets))]
    runs = [[run for run in observations.runs(arm, seeds) if run.accuracy is not None and run.time_s] for arm in arms]
    if any(len(row) < len(seeds) for row in runs):
        return _references(plan, observations, stage, seeds)
    near_full = [True, *(budget >= NEAR_FULL_BUDGET for budget in plan.frontier_budgets)]
    table = [[run.accuracy for run in row] for row, used in zip(runs, near_full, strict=True) if used]
    spread = Spread.of(table, [run.time_s for run in runs[0]])  # type: ignore[arg-type, misc]
    assert spread is not None  # Seeds: first >= 2
    (last, cap_name), points = _confirm_cap(plan, state.spent_s, len(observations)), plan.judging.bounds == (0.0, 1.0)
    level = plan.confirm.level(last, plan.judging.confidence)
    state.spread = spread.line(plan.judging.metric, plan.judging.tolerance, level, last, points, cap_name)
    reachable = _rounded_up(reachable_tolerance(spread.bound(AUTO_QUANTILE), last, level, REACH_POWER))
    at_best = spread.seeds_needed(plan.judging.tolerance, level, spread.bound(0.9))
    if at_best is not None and at_best <= last:
        state.tolerance = plan.judging.tolerance
    elif plan.tolerance_auto:
        state.tolerance = max(plan.judging.tolerance, reachable)
        state.spread += f"; find.accuracy_tolerance: auto takes {amount(state.tolerance, points)}"
    else:
        state.out_of_reach = (
            f"equal accuracy within {amount(plan.judging.tolerance, points)} is out of reach of Confirm's {last} "
            "seeds: "
            f"{amount(reachable, points)} is within reach. Set find.accuracy_tolerance: {reachable:g} (or auto), "
            "or bring the spread down (longer runs, more eval data), and run the find again with --resume"
        )
    return None


def _confirm_cap(plan: FindPlan, spent_s: float, trials: int) -> tuple[int, str]:
    """The seeds Confirm can reach: its last look, or fewer when its share of ``find.budget`` (what the search
    leaves) affords fewer at the time the references' trials took; and how the spread line names that cap."""
    last = plan.confirm.last
    if plan.budget_s is None or trials == 0 or spent_s <= 0:
        return last, "Confirm"
    per_seed = spent_s / trials * plan.confirm_seed_trials
    affordable = int((1 - plan.search_share) * plan.budget_s / per_seed)
    if affordable >= last:
        return last, "Confirm"
    return max(2, affordable), "Confirm, in what find.budget leaves it,"


def _measured_at(plan: FindPlan) -> tuple[str, Sequence[int]]:
    """Where the spread is measured: the first seeds of Screen, or, when Screen races on a proxy, the first seeds of
    Confirm at full length (the spread Confirm's verdict faces; Confirm reuses those references, so they cost
    nothing more, and no recipe is chosen on them)."""
    if plan.on_proxy(SCREEN):
        return CONFIRM, plan.confirm_seeds(plan.confirm.first)
    return SCREEN, range(plan.screen.first)


def _references(plan: FindPlan, observations: Observations, stage: str, seeds: Sequence[int]) -> Round:
    """The baseline and its frontier at ``seeds`` as ``stage`` trains them, those not trained yet: the first round."""
    wanted = [Request(plan.arm_for(stage, keys.BASELINE), seed, keys.BASELINE) for seed in seeds]
    budgets = plan.frontier_budgets
    wanted += [
        Request(plan.arm_for(stage, frontier_arm(b)), s, keys.FRONTIER, budget=b) for b in budgets for s in seeds
    ]
    return Round(stage, tuple(r for r in wanted if not observations.has(r.arm, r.seed)))


def _rounded_up(value: float) -> float:
    """Two significant figures, up: a tolerance a person would write (0.0141 -> 0.015)."""
    if value <= 0:
        return 0.0
    step = 10 ** (math.floor(math.log10(value)) - 1)
    return round(math.ceil(value / step - 1e-9) * step, 12)
