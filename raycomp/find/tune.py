"""Tune: each survivor's argument settings (``Candidate.settings``: the defaults and a few declared choices) by
successive halving on the search seeds.

Every setting still in runs at the rung's seeds (``tune.first``, then twice as many, up to ``tune.last``); a setting
leaves as soon as it is resolved as not faster (``slower``, ``less accurate``, ``equivalent``, ``trade-off``); the
best ``1/halving`` of the rest, ranked by their speed-up at equal accuracy, go to the next rung. The last one in,
or the best at the last rung (or when the search budget is spent), is the survivor's tuned recipe. Its estimate
carries the winner's curse; only Confirm's fresh seeds give the number that is reported.
"""

from __future__ import annotations

import math

from raycomp.find.race import Race, Request, merit
from raycomp.find.recipes import Recipe
from raycomp.find.state import COMPOSE, DONE, TUNE, describe, next_stage
from raycomp.results.verdicts import FASTER, RESOLVED


def tune(race: Race) -> list[Request]:
    plan, state = race.plan, race.state
    while state.tune.halving:
        requests = race.missing(_wanted(race))
        if requests and race.overruns(len(requests), plan.search_limit_s):
            _ran_only(race)  # no rung is started past the budget: each survivor is judged on what ran
            requests = race.missing(_wanted(race))
        if requests:
            return requests
        for name, rung in list(state.tune.halving.items()):
            level = plan.tune.level(rung.n, plan.judging.confidence)
            verdicts = {recipe.key: race.judge(recipe, range(rung.n), level) for recipe in rung.alive}
            alive = [r for r in rung.alive if _still_in(verdicts[r.key].verdict)]
            ranked = sorted(alive, key=lambda recipe: merit(verdicts[recipe.key]), reverse=True)
            kept = ranked[: math.ceil(len(ranked) / plan.halving)]
            if not ranked:
                best = max(rung.alive, key=lambda recipe: merit(verdicts[recipe.key]))
                state.leave(name, TUNE, f"no setting is faster, the best {describe(verdicts[best.key])}")
            elif len(kept) == 1 or rung.n >= plan.tune.last or race.overruns(0, plan.search_limit_s):
                state.tune.tuned[name] = ranked[0]
                state.leave(name, TUNE, f"tuned to {ranked[0].key}: {describe(verdicts[ranked[0].key])}")
            else:
                rung.alive, rung.n = kept, min(plan.tune.last, 2 * rung.n)
                continue
            del state.tune.halving[name]
    order = sorted(state.tune.tuned, key=lambda name: race.merit(state.tune.tuned[name]), reverse=True)
    if order:
        state.compose.current, state.compose.queue = state.tune.tuned[order[0]], order[1:]
        state.note(order[0], COMPOSE, f"starts the recipe: the fastest tuned survivor, {state.compose.current.key}")
    state.stage = next_stage(TUNE) if order else DONE
    return []


def _wanted(race: Race) -> list[tuple[Recipe, int]]:
    return [
        (recipe, seed) for rung in race.state.tune.halving.values() for recipe in rung.alive for seed in range(rung.n)
    ]


def _ran_only(race: Race) -> None:
    """Each rung cut to the settings whose trials ran at its seeds, at as many seeds as ran (the screened setting
    at least: Screen ran it), so that the budget ends Tune with no new trial."""
    observations = race.observations
    for rung in race.state.tune.halving.values():
        ran = {recipe: len(observations.seeds_of(race.arm(recipe.key))) for recipe in rung.alive}
        rung.n = min(rung.n, max(2, max(ran.values())))
        rung.alive = [recipe for recipe in rung.alive if not race.missing([(recipe, s) for s in range(rung.n)])]
        rung.alive = rung.alive or [max(ran, key=ran.__getitem__)]


def _still_in(verdict: str) -> bool:
    """Shown faster, or not yet resolved either way (a speed-up whose accuracy is not yet shown is open)."""
    return verdict == FASTER or verdict not in RESOLVED
