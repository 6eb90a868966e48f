"""Confirm: the chosen recipe against the baseline on fresh seeds, which no choice saw; its verdict there is the
find's answer.

Picking the best of several noisy estimates overstates it (the winner's curse), so the search's own numbers are
never reported. Confirm races the recipe, with the baseline, its frontier and the control arm, at
``confirm.first`` to ``confirm.last`` new seeds (group-sequential looks), until its verdict resolves, the seeds run
out or the find's budget is spent. The control is judged on the same seeds: a ``faster`` or ``slower`` control
means the machine's timing could not support the verdict, and nothing is recommended.
"""

from __future__ import annotations

from raycomp.find.race import Race, Request
from raycomp.find.state import CONFIRM, describe, next_stage
from raycomp.results.verdicts import RESOLVED


def confirm(race: Race) -> list[Request]:
    plan, state = race.plan, race.state
    assert state.confirm.recipe is not None
    while True:
        n = state.confirm.n
        seeds = plan.confirm_seeds(n)
        requests = race.missing([(state.confirm.recipe, seed) for seed in seeds], control=plan.control)
        if requests:
            return requests
        level = plan.confirm.level(n, plan.judging.confidence)
        verdict = race.judge(state.confirm.recipe, seeds, level)
        next_look = plan.confirm_seed_trials
        if verdict.verdict in RESOLVED or n >= plan.confirm.last or race.overruns(next_look, plan.budget_s):
            state.confirm.verdict = verdict
            state.confirm.control = race.judge_control(seeds, level) if plan.control else None
            confirmed = f"{state.confirm.recipe.key} on {n} fresh seeds: {describe(verdict)}"
            for name in state.confirm.recipe.names:
                state.leave(name, CONFIRM, f"in the recipe ({state.lines[name].outcome})", step=confirmed)
            state.stage = next_stage(CONFIRM)
            return []
        state.confirm.n = n + 1
