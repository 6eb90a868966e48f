"""Confirm: the chosen recipe against the baseline on fresh seeds, which no choice saw; its verdict there is the
find's answer.

Picking the best of several noisy estimates overstates it (the winner's curse), so the search's own numbers are
never reported. Confirm races the recipe, with the baseline, its frontier and the control arm, at
``confirm.first`` to ``confirm.last`` new seeds (group-sequential looks), until its verdict resolves, the seeds run
out or the find's budget is spent. The control is judged on the same seeds: a ``faster`` or ``slower`` control
means the machine's timing could not support the verdict, and nothing is recommended.

After a search on a proxy (``find.proxy``), Confirm runs at full length: the proxy's ranking is a guess there. When
its recipe is not shown faster, a proxy that misled should still end in an answer, and the best one left: each
method of that recipe trains alone at full length on Confirm's first seeds (their references trained already), and
the recipe without the methods that are not faster alone there (the culprits: a method that helps only on short
runs) is confirmed next on the same fresh seeds; when no method is to blame, or none is left, the next best on the
proxy (a tuned survivor alone that did not fail at full length) is; one such second guess
(``FindPlan.second_guesses``: each is another test on the same seeds), budget permitting. Then each tuned
survivor Confirm did not run trains alone the same way, unless the recipe it is in held: whether the proxy's
ranking of the methods held, not only its choice; none of them changes the answer. Each recipe's verdict on the
proxy and at full length is kept for the answer's "did the proxy hold" lines.
"""

from __future__ import annotations

from raycomp.find.race import Race, Request, merit
from raycomp.find.recipes import Recipe
from raycomp.find.state import CONFIRM, STAGES, FindState, describe, next_stage
from raycomp.results.verdicts import FASTER, RESOLVED, Verdict


def confirm(race: Race) -> list[Request]:
    plan, state = race.plan, race.state
    assert state.confirm.recipe is not None
    if plan.proxy is not None and not state.confirm.proxy:  # what the proxy said, before the full run says
        state.confirm.proxy = {recipe.key: _on_proxy(race, recipe) for recipe in _proxy_ranked(race)}
    requests = _answer(race) if state.confirm.verdict is None else []
    if not requests and plan.proxy is not None:
        requests = _survivors_at_full_length(race)
    if requests:
        return requests
    recipe, verdict = state.confirm.recipe, state.confirm.verdict
    assert verdict is not None
    confirmed = f"{recipe.key} on {state.confirm.n} fresh seeds: {describe(verdict)}"
    for name in recipe.names:
        state.leave(name, CONFIRM, f"in the recipe ({state.lines[name].outcome})", step=confirmed)
    state.stage = next_stage(CONFIRM)
    return []


def _answer(race: Race) -> list[Request]:
    """The recipe's looks (and, after a proxy that misled, the next candidate's) until its verdict is in
    ``state.confirm.verdict``: the trials a look still lacks, else none."""
    plan, state = race.plan, race.state
    while True:
        recipe, n = state.confirm.recipe, state.confirm.n
        seeds = plan.confirm_seeds(n)
        requests = race.missing([(recipe, seed) for seed in seeds], control=plan.control)
        if requests:
            return requests
        level = plan.confirm.level(n, plan.judging.confidence)
        verdict = race.judge(recipe, seeds, level)
        next_look = plan.confirm_seed_trials
        if verdict.verdict in RESOLVED or n >= plan.confirm.last or race.overruns(next_look, plan.budget_s):
            if plan.proxy is not None:
                state.confirm.full[recipe.key] = verdict
                if verdict.verdict != FASTER and len(recipe.methods) > 1:  # which of its methods failed?
                    members = _alone_at_full_length(race, [Recipe.of(method) for method in recipe.methods])
                    if members:
                        return members
                following = _next_candidate(race) if verdict.verdict != FASTER else None
                if following is not None:  # the proxy misled: the next candidate, on the same fresh seeds
                    for name in recipe.names:
                        state.note(name, CONFIRM, f"{recipe.key} did not hold at full length: {describe(verdict)}")
                    _leave_culprits(state, recipe, following)
                    state.confirm.recipe, state.confirm.n = following, plan.confirm.first
                    continue
            state.confirm.verdict = verdict
            state.confirm.control = race.judge_control(seeds, level) if plan.control else None
            return []
        state.confirm.n = n + 1


def _survivors_at_full_length(race: Race) -> list[Request]:
    """Each tuned survivor Confirm did not run and no held recipe covers, alone at full length (on Confirm's first
    seeds: ``_alone_at_full_length``)."""
    done = set(covered(race.state))
    return _alone_at_full_length(race, [recipe for recipe in _proxy_ranked(race) if recipe.key not in done])


def _alone_at_full_length(race: Race, recipes: list[Recipe]) -> list[Request]:
    """Each of ``recipes`` not run at full length yet, there on Confirm's first seeds: the trials still missing, or
    none once each is judged (into ``state.confirm.alone``) or the budget cannot pay for them (a check already
    started is finished: its trials are half spent)."""
    plan, state = race.plan, race.state
    seeds = plan.confirm_seeds(plan.confirm.first)
    done = state.confirm.full.keys() | state.confirm.alone.keys()
    unrun = [recipe for recipe in recipes if recipe.key not in done]
    requests = race.missing([(recipe, seed) for recipe in unrun for seed in seeds])
    started = any(race.observations.has(race.arm(recipe.key), seed) for recipe in unrun for seed in seeds)
    if requests and (started or not race.overruns(len(requests), plan.budget_s)):
        return requests
    level = plan.confirm.level(plan.confirm.first, plan.judging.confidence)
    for recipe in [] if requests else unrun:
        state.confirm.alone[recipe.key] = race.judge(recipe, seeds, level)
    return []


def covered(state: FindState) -> list[str]:
    """The tuned survivors not run alone because their methods are all in the recipe Confirm found ``faster``: that
    recipe held, so a check of their own would cost full-length runs (a proxy's whole point is fewer) to say less."""
    confirm = state.confirm
    if confirm.recipe is None or confirm.verdict is None or confirm.verdict.verdict != FASTER:
        return []
    names, ran = set(confirm.recipe.names), confirm.full.keys() | confirm.alone.keys()
    return [r.key for r in state.tune.tuned.values() if r.key not in ran and set(r.names) <= names]


def _proxy_stage(race: Race) -> str:
    assert race.plan.proxy is not None
    return next(stage for stage in STAGES if stage in race.plan.proxy.stages)


def _on_proxy(race: Race, recipe: Recipe) -> Verdict:
    """``recipe``'s verdict over the search seeds it ran on the proxy (the search's own numbers, for comparison)."""
    stage = _proxy_stage(race)
    seeds = race.observations.seeds_of(race.arm(recipe.key, stage))
    return race.judge(recipe, [seed for seed in seeds if seed < race.plan.search_seeds], stage=stage)


def _proxy_ranked(race: Race) -> list[Recipe]:
    """The recipe Confirm runs first, then the tuned survivors, best on the proxy first: the order in which a
    proxy that misled is second-guessed."""
    state = race.state
    assert state.confirm.recipe is not None
    tuned = sorted(state.tune.tuned.values(), key=lambda recipe: merit(_on_proxy(race, recipe)), reverse=True)
    return list({recipe.key: recipe for recipe in (state.confirm.recipe, *tuned)}.values())


def _next_candidate(race: Race) -> Recipe | None:
    """What Confirm runs after a recipe that did not hold, while ``plan.second_guesses`` allows one more and its
    first look fits in the budget: that recipe without its culprits (``_without_culprits``), else the best recipe
    on the proxy that Confirm has not run and that was not slower alone at full length; else None."""
    plan, state = race.plan, race.state
    if len(state.confirm.full) > plan.second_guesses:  # the proxy's recipe and each guess so far
        return None
    if race.overruns(plan.confirm.first, plan.budget_s):  # its own trials: the references at these seeds exist
        return None
    assert state.confirm.recipe is not None
    reduced = _without_culprits(race, state.confirm.recipe)
    if reduced is not None and reduced.key not in state.confirm.full:
        return reduced
    ranked = [recipe for recipe in _proxy_ranked(race) if recipe.key not in state.confirm.full]
    failed = {key for key, verdict in state.confirm.alone.items() if merit(verdict) <= 0}
    viable = [
        recipe
        for recipe in ranked
        if recipe.key not in failed and merit(state.confirm.proxy.get(recipe.key) or _on_proxy(race, recipe)) > 0
    ]
    return viable[0] if viable else None


def _without_culprits(race: Race, recipe: Recipe) -> Recipe | None:
    """``recipe`` without the methods that were not faster alone at full length (less accurate, below the
    frontier, or a speed-up under 1x on Confirm's first seeds): None when each method's run alone is not in (the
    budget had no room), when none is to blame (then the combination itself failed) or when none is left."""
    alone = race.state.confirm.alone | race.state.confirm.full
    keys = [Recipe.of(method).key for method in recipe.methods]
    if len(recipe.methods) < 2 or any(key not in alone for key in keys):
        return None
    kept = tuple(method for method, key in zip(recipe.methods, keys, strict=True) if merit(alone[key]) > 0)
    return Recipe(kept) if kept and len(kept) < len(recipe.methods) else None


def _leave_culprits(state: FindState, recipe: Recipe, following: Recipe) -> None:
    """The methods of ``recipe`` that ``following`` leaves out and that were not faster alone at full length (the
    culprits) end here, with what they did alone."""
    alone = state.confirm.alone | state.confirm.full
    for method in recipe.methods:
        verdict = alone.get(Recipe.of(method).key)
        if method.name not in following.names and verdict is not None and merit(verdict) <= 0:
            state.leave(method.name, CONFIRM, f"left out of the recipe: alone at full length {describe(verdict)}")
