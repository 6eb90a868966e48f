"""Compose: greedy forward composition of the tuned survivors, best first.

The recipe starts as the best tuned survivor; each next survivor (in order of its tuned speed-up) is added when
the combination beats its best member (the recipe so far or the survivor alone, whichever looks faster) in a
paired comparison of the two, raced at ``compose.first`` to ``compose.last`` seeds: the member takes the
baseline's place in ``verdict_for``, so the combination must be shown faster than it at its accuracy. Beating the
baseline is not enough: a second method that helps only alone is left out. Methods declared incompatible
(``Candidate.incompatible_with``) are never trained together.
"""

from __future__ import annotations

from raycomp.find.race import Race, Request, shown_faster
from raycomp.find.state import COMPOSE, describe, next_stage
from raycomp.results.verdicts import RESOLVED


def compose(race: Race) -> list[Request]:
    plan, state = race.plan, race.state
    while True:
        if state.compose.trying is None and not _next_member(race):
            state.confirm.recipe, state.confirm.n = state.compose.current, plan.confirm.first
            state.stage = next_stage(COMPOSE)
            return []
        assert (
            state.compose.current is not None and state.compose.rival is not None and state.compose.trying is not None
        )
        combination = state.compose.current.joined(state.tune.tuned[state.compose.trying])
        n = state.compose.n
        requests = race.missing([(recipe, seed) for recipe in (combination, state.compose.rival) for seed in range(n)])
        if requests:
            return requests
        verdict = race.judge_pair(
            combination, state.compose.rival, range(n), plan.compose.level(n, plan.judging.confidence)
        )
        against = state.compose.rival.key
        if shown_faster(verdict):
            state.leave(state.compose.trying, COMPOSE, f"added: {combination.key} {describe(verdict, against)}")
            state.compose.current, state.compose.trying = combination, None
        elif verdict.verdict in RESOLVED or n >= plan.compose.last or race.overruns(2, plan.search_limit_s):
            state.leave(state.compose.trying, COMPOSE, f"left out: {combination.key} {describe(verdict, against)}")
            state.compose.trying = None
        else:
            state.compose.n = n + 1


def _next_member(race: Race) -> bool:
    """Takes the next survivor that may join the recipe (False when none is left), naming its rival."""
    plan, state = race.plan, race.state
    assert state.compose.current is not None
    while state.compose.queue:
        name = state.compose.queue.pop(0)
        clash = plan.by_name[name].combines_with(state.compose.current, plan.by_name)
        if clash is not None:
            state.leave(name, COMPOSE, f"not combined: it cannot be trained with {clash}")
        elif race.overruns(plan.compose.first, plan.search_limit_s):  # the combination at compose.first seeds
            state.leave(name, COMPOSE, "not combined: the search budget was spent")
        else:
            alone = state.tune.tuned[name]
            state.compose.rival = max((state.compose.current, alone), key=race.merit)  # ties: the recipe so far
            state.compose.trying, state.compose.n = name, plan.compose.first
            return True
    return False
