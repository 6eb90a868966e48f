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
from raycomp.find.state import COMPOSE, CONFIRM, describe
from raycomp.results.verdicts import RESOLVED


def compose(race: Race) -> list[Request]:
    plan, state = race.plan, race.state
    while True:
        if state.trying is None and not _next_member(race):
            state.recipe, state.stage, state.confirm_n = state.current, CONFIRM, plan.confirm.first
            return []
        assert state.current is not None and state.rival is not None and state.trying is not None
        combination = state.current.joined(state.tuned[state.trying])
        n = state.compose_n
        requests = race.missing([(recipe, seed) for recipe in (combination, state.rival) for seed in range(n)])
        if requests:
            return requests
        verdict = race.judge_pair(combination, state.rival, range(n), plan.compose.level(n, plan.judging.confidence))
        against = state.rival.key
        if shown_faster(verdict):
            state.leave(state.trying, COMPOSE, f"added: {combination.key} {describe(verdict, against)}")
            state.current, state.trying = combination, None
        elif verdict.verdict in RESOLVED or n >= plan.compose.last or race.overruns(2, plan.search_limit_s):
            state.leave(state.trying, COMPOSE, f"left out: {combination.key} {describe(verdict, against)}")
            state.trying = None
        else:
            state.compose_n = n + 1


def _next_member(race: Race) -> bool:
    """Takes the next survivor that may join the recipe (False when none is left), naming its rival."""
    plan, state = race.plan, race.state
    assert state.current is not None
    while state.queue:
        name = state.queue.pop(0)
        clash = plan.by_name[name].combines_with(state.current, plan.by_name)
        if clash is not None:
            state.leave(name, COMPOSE, f"not combined: it cannot be trained with {clash}")
        elif race.overruns(plan.compose.first, plan.search_limit_s):  # the combination at compose.first seeds
            state.leave(name, COMPOSE, "not combined: the search budget was spent")
        else:
            alone = state.tuned[name]
            state.rival = max((state.current, alone), key=race.merit)  # ties: the recipe so far
            state.trying, state.compose_n = name, plan.compose.first
            return True
    return False
