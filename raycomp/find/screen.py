"""Screen: every candidate alone at its documented default arguments, raced on paired seeds.

All open candidates look together: at ``screen.first`` seeds, then one more seed at a time. A candidate goes on
to Tune as soon as it is shown faster at the accuracy it measured (``race.shown_faster``: its accuracy is shown
within tolerance only at Confirm); it leaves as soon as its verdict is ``slower``, ``less accurate``,
``equivalent`` or ``trade-off`` (nothing to gain in time), when its trials fail, or when ``screen.last`` seeds (or
the search budget) are spent without an answer. Each look's intervals are at its group-sequential level, so
looking again does not add false ``faster`` verdicts.
"""

from __future__ import annotations

from raycomp.find.race import Race, Request, shown_faster
from raycomp.find.state import DONE, SCREEN, TRIALS_FAILED, Halving, describe, next_stage
from raycomp.results.verdicts import FASTER, RESOLVED


def screen(race: Race) -> list[Request]:
    plan, state, observations = race.plan, race.state, race.observations
    while state.screen.open:
        wanted = [(plan.by_name[name].default, seed) for name, n in state.screen.open.items() for seed in range(n)]
        requests = race.missing(wanted)
        if requests:
            return requests
        for name, n in list(state.screen.open.items()):
            recipe = plan.by_name[name].default
            verdict = race.judge(recipe, range(n), plan.screen.level(n, plan.judging.confidence))
            error = observations.error_of(race.arm(recipe.key)) if verdict.n == 0 else None
            if shown_faster(verdict):
                state.screen.survivors.append(name)
                shown = "" if verdict.verdict == FASTER else "faster at the accuracy it measured: "
                state.leave(name, SCREEN, f"shown {shown}{describe(verdict)}")
            elif error is not None or verdict.verdict in RESOLVED:
                state.leave(name, SCREEN, f"{TRIALS_FAILED}: {error}" if error else describe(verdict))
            elif n >= plan.screen.last:
                state.leave(name, SCREEN, f"not shown faster in {n} seeds: {describe(verdict)}")
            elif race.overruns(len(state.screen.open) + plan.references, plan.search_limit_s):  # one more seed each
                state.leave(name, SCREEN, f"the search budget was spent: {describe(verdict)}")
            else:
                state.screen.open[name] = n + 1
                continue
            del state.screen.open[name]
    for name in state.screen.survivors:
        candidate = plan.by_name[name]
        state.tune.halving[name] = Halving(
            [candidate.recipe(setting) for setting in candidate.settings], plan.tune.first
        )
    state.stage = next_stage(SCREEN) if state.screen.survivors else DONE
    return []
