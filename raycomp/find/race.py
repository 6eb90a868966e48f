"""What every stage of a find judges with: the trials it asks for (``Request``, ``Round``) and its verdicts (``Race``).

Every judgement is ``raycomp.results.verdicts.verdict_for``: a recipe against the baseline and its frontier on
paired seeds, or, in Compose, a combination against its best member (that member in the baseline's place).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable

from raycomp.base import keys
from raycomp.find.observations import Observations, frontier_arm
from raycomp.find.plan import FindPlan
from raycomp.find.recipes import Recipe
from raycomp.find.state import FindState
from raycomp.results.verdicts import FASTER, LESS_ACCURATE, NO_EVIDENCE, Verdict, verdict_for


@dataclasses.dataclass(frozen=True)
class Request:
    """One trial to run: an arm (a recipe's key or a reference's name) at a seed index."""

    arm: str
    seed: int
    variant: str = keys.METHOD
    recipe: Recipe | None = None
    budget: float | None = None


@dataclasses.dataclass(frozen=True)
class Round:
    """The trials of one look of a stage, its references (baseline, frontier, control) included."""

    stage: str
    requests: tuple[Request, ...]


class Race:
    """The plan, the state and the observations of one find, with the judgements every stage makes."""

    def __init__(self, plan: FindPlan, state: FindState, observations: Observations, spent_s: float = 0.0):
        self.plan, self.state, self.observations, self.spent_s = plan, state, observations, spent_s

    def arm(self, name: str, stage: str | None = None) -> str:
        """The arm ``name`` trains as in ``stage`` (default: the stage in progress): on the proxy, its proxy arm."""
        return self.plan.arm_for(stage or self.state.stage, name)

    def judge(
        self, recipe: Recipe, seeds: Iterable[int], level: float | None = None, stage: str | None = None
    ) -> Verdict:
        """``recipe`` against the baseline and its frontier at ``seeds``, its intervals at ``level``, on the run
        ``stage`` trains (default: the stage in progress's)."""
        seeds, obs = list(seeds), self.observations
        return self._verdict(
            obs.runs(self.arm(recipe.key, stage), seeds),
            obs.runs(self.arm(keys.BASELINE, stage), seeds),
            self._frontier(seeds, stage),
            level,
        )

    def judge_control(self, seeds: Iterable[int], level: float) -> Verdict:
        seeds, obs = list(seeds), self.observations
        control, baseline = obs.runs(self.arm(keys.CONTROL), seeds), obs.runs(self.arm(keys.BASELINE), seeds)
        return self._verdict(control, baseline, self._frontier(seeds), level, same_model=True)

    def judge_pair(self, recipe: Recipe, rival: Recipe, seeds: Iterable[int], level: float) -> Verdict:
        """``recipe`` against ``rival`` itself, paired by seed: faster means faster than ``rival`` at its accuracy."""
        seeds, obs = list(seeds), self.observations
        return self._verdict(obs.runs(self.arm(recipe.key), seeds), obs.runs(self.arm(rival.key), seeds), [], level)

    def _frontier(self, seeds: list[int], stage: str | None = None) -> list:
        budgets = self.plan.frontier_budgets
        return [run for b in budgets for run in self.observations.runs(self.arm(frontier_arm(b), stage), seeds)]

    def _verdict(
        self, runs: list, baseline: list, frontier: list, level: float | None, same_model: bool = False
    ) -> Verdict:
        plan = self.plan
        return verdict_for(
            runs,
            baseline,
            frontier,
            mode=plan.mode,  # type: ignore[arg-type]
            tolerance=plan.judging.tolerance if self.state.tolerance is None else self.state.tolerance,
            confidence=plan.judging.confidence if level is None else level,
            equivalence=plan.judging.equivalence,
            bounds=plan.judging.bounds,
            same_model=same_model,
        )

    def merit(self, recipe: Recipe) -> float:
        """How good ``recipe`` looks so far, to rank recipes: its log speed-up over every search seed it ran;
        -inf when it is less accurate, below the frontier (its speed-up only an upper bound) or not judged."""
        seeds = [s for s in self.observations.seeds_of(self.arm(recipe.key)) if s < self.plan.search_seeds]
        return merit(self.judge(recipe, seeds))

    def overruns(self, trials: int, limit_s: float | None) -> bool:
        """Whether ``trials`` more would end past ``limit_s`` (None: no limit), each costing the wall time a trial
        has cost so far (the rounds' time over their trials, concurrency included): a look that cannot finish
        within the budget is not started (a 33-trial round once ran far past a find's whole budget)."""
        if limit_s is None:
            return False
        count = len(self.observations)
        per_trial = self.spent_s / count if count else 0.0
        return self.spent_s + trials * per_trial >= limit_s

    def missing(self, wanted: Iterable[tuple[Recipe, int]], control: bool = False) -> list[Request]:
        """The trials of ``wanted`` not run yet, with the references their seeds lack."""
        obs, requests = self.observations, []
        seeds = sorted({seed for _, seed in wanted})
        for recipe, seed in dict.fromkeys(wanted):
            if not obs.has(self.arm(recipe.key), seed):
                requests.append(Request(self.arm(recipe.key), seed, keys.METHOD, recipe))
        for seed in seeds:
            references = [Request(self.arm(keys.BASELINE), seed, keys.BASELINE)]
            budgets = self.plan.frontier_budgets
            references += [Request(self.arm(frontier_arm(b)), seed, keys.FRONTIER, budget=b) for b in budgets]
            if control:
                references.append(Request(self.arm(keys.CONTROL), seed, keys.CONTROL))
            requests += [request for request in references if not obs.has(request.arm, seed)]
        return requests


def shown_faster(verdict: Verdict) -> bool:
    """The search's cue to go on with a recipe: ``faster``, or its speed-up shown at the accuracy it measured
    while that accuracy is not yet shown within tolerance (``no evidence`` for that reason only). The search
    stages pick on it; only Confirm's ``faster``, both halves shown on fresh seeds, is recommended."""
    return verdict.verdict == FASTER or (verdict.verdict == NO_EVIDENCE and verdict.speed_shown)


def merit(verdict: Verdict) -> float:
    if verdict.speedup is None or verdict.verdict == LESS_ACCURATE or verdict.below_frontier:
        return -math.inf
    return math.log(verdict.speedup)
