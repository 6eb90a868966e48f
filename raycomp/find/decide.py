"""The find's decisions, driven by observations alone: given what the trials measured, which trials run next,
who leaves the race and what is recommended. Nothing here trains or times anything, so the same code runs a
real find (``raycomp.launch.find``) and thousands of simulated ones (tests/find/).

    state = start(plan)
    while (round := advance(plan, state, observations, spent_s)) is not None:
        observations.add(run(round))           # trains the round's trials, however that is done
    answer = answer_of(plan, state)
"""

from __future__ import annotations

from collections.abc import Callable

from raycomp.find.compose import compose
from raycomp.find.confirm import confirm
from raycomp.find.observations import Observations
from raycomp.find.plan import FindPlan
from raycomp.find.race import Race, Request, Round
from raycomp.find.screen import screen
from raycomp.find.spread import settle_tolerance
from raycomp.find.state import COMPOSE, CONFIRM, DONE, SCREEN, TUNE, FindState, ScreenState
from raycomp.find.tune import tune

STEPS: dict[str, Callable[[Race], list[Request]]] = {SCREEN: screen, TUNE: tune, COMPOSE: compose, CONFIRM: confirm}


def start(plan: FindPlan) -> FindState:
    """A new find: every candidate open in the screen at its first look."""
    screening = {candidate.name: plan.screen.first for candidate in plan.candidates}
    return FindState(stage=SCREEN if screening else DONE, screen=ScreenState(open=screening))


def advance(plan: FindPlan, state: FindState, observations: Observations, spent_s: float = 0.0) -> Round | None:
    """The next round to run, or None once the find is done (its answer is then in ``state``).

    Judges every look whose trials are all in, moving ``state`` on (candidates leave, stages end), until a look
    needs trials that have not run. Called again with the same observations, it returns the same round."""
    race = Race(plan, state, observations, spent_s)
    if state.tolerance is None and state.stage != DONE:  # what the seeds can support, before any candidate trains
        first = settle_tolerance(plan, state, observations)
        if first is not None:
            return first
        if state.out_of_reach:
            state.stage = DONE
    while state.stage != DONE:
        requests = STEPS[state.stage](race)
        if requests:
            return Round(state.stage, tuple(requests))
    return None
