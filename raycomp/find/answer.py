"""What a find concludes (``Answer``): the recipe recommended, or that none is, with the evidence either way."""

from __future__ import annotations

import dataclasses

from raycomp.find.confirm import covered
from raycomp.find.plan import FindPlan
from raycomp.find.race import shown_faster
from raycomp.find.recipes import Recipe
from raycomp.find.state import TRIALS_FAILED, FindState, Line, describe
from raycomp.results.verdicts import EQUIVALENT, FASTER, NO_EVIDENCE, RESOLVED, Verdict


@dataclasses.dataclass(frozen=True)
class Answer:
    """``chosen`` is the recipe Confirm ran (None: no candidate survived the search); it is ``recommended`` only
    when its verdict on the fresh seeds is ``faster`` and the control arm's timing holds."""

    chosen: Recipe | None
    verdict: Verdict | None
    control: Verdict | None
    lines: dict[str, Line]
    candidates: int
    paths: dict[str, list[Line]] = dataclasses.field(default_factory=dict)  # what each stage said of each
    spread: str = ""  # what the baseline's spread let the seeds show (find/spread.py)
    out_of_reach: str = ""  # why no candidate raced: the tolerance asked is out of reach of the seeds
    tolerance: float | None = None  # the accuracy tolerance the find judged with (find.accuracy_tolerance: auto)
    changed: dict[str, str] = dataclasses.field(default_factory=dict)  # what the find changed to make a method run
    proxy: str = ""  # the shorter run the search raced on (``find.proxy.max_duration``), "" without one
    proxy_data: float = 1.0  # and the share of the training data it trained on
    on_proxy: dict[str, Verdict] = dataclasses.field(default_factory=dict)  # each recipe's verdict there
    at_full: dict[str, Verdict] = dataclasses.field(default_factory=dict)  # each recipe Confirm ran at full length
    alone: dict[str, Verdict] = dataclasses.field(default_factory=dict)  # each other survivor, on Confirm's first seeds
    covered: tuple[str, ...] = ()  # the survivors not run alone: the recipe they are in held

    def proxy_held(self) -> list[tuple[str, Verdict, Verdict | None, bool | None]]:
        """For each recipe the proxy judged: (its key, the proxy's verdict, the full run's or None where it did not
        run at full length, whether the proxy's call held, None where that is not known). A recipe Confirm ran held
        when shown faster on the proxy and ``faster`` at full length, or neither. A survivor's few seeds alone rarely
        show its accuracy, so its call is the search's (``race.shown_faster``) on both runs, and not known while its
        full-length verdict is neither resolved nor shown faster (not shown either way)."""
        held = []
        for key, proxy in self.on_proxy.items():
            said = shown_faster(proxy)
            if key in self.at_full:
                full = self.at_full[key]
                held.append((key, proxy, full, said == (full.verdict == FASTER)))
            elif key in self.alone:
                full = self.alone[key]
                known = full.verdict in RESOLVED or shown_faster(full)
                held.append((key, proxy, full, said == shown_faster(full) if known else None))
            else:
                held.append((key, proxy, None, None))
        return held

    def in_held_recipe(self, key: str) -> bool:
        """Whether the survivor ``key`` was not run alone because the recipe it is in held (``faster``)."""
        return key in self.covered

    @property
    def timing_holds(self) -> bool:
        return self.control is None or self.control.verdict in (NO_EVIDENCE, EQUIVALENT)

    @property
    def recommended(self) -> Recipe | None:
        faster = self.verdict is not None and self.verdict.verdict == FASTER
        return self.chosen if faster and self.timing_holds else None

    def headline(self) -> str:
        """The answer in one sentence."""
        if self.recommended is not None:
            return f"recommended: {self.recommended.key} (on fresh seeds: {describe(self.verdict)})"
        none = f"none of the {self.candidates} methods is faster at equal accuracy on this model"
        if self.out_of_reach:
            return f"stopped before the race: {self.out_of_reach}"
        cut = [name for name, line in self.lines.items() if "search budget was spent" in line.outcome]
        if self.chosen is None and cut:  # not a negative result: the search stopped before it could say
            return (
                f"inconclusive: the search budget ran out in {self.lines[cut[0]].stage} with {len(cut)} of the "
                f"{self.candidates} methods unresolved ({', '.join(cut)}); a larger find.budget finishes it "
                "(--resume keeps every trial)"
            )
        failed = [name for name, line in self.lines.items() if line.outcome.startswith(TRIALS_FAILED)]
        if self.chosen is None and failed and len(failed) == len(self.lines):
            return f"no method could train on this model: the trials of all {len(failed)} candidates failed"
        if self.chosen is None:
            return f"{none}: no method was shown faster in the search"
        if not self.timing_holds:
            return (
                f"{none} that this machine could show: the control arm (identical to the baseline) came out "
                f"{describe(self.control)} on the confirmation seeds, so their timing could not support a verdict"
            )
        unconfirmed = f"the search's choice, {self.chosen.key}, was not confirmed on fresh seeds"
        return f"{none}: {unconfirmed} ({describe(self.verdict)})"


def answer_of(plan: FindPlan, state: FindState) -> Answer:
    """The answer of a finished find (``state.stage == DONE``)."""
    lines = {c.name: state.lines.get(c.name, Line("screen", "not judged")) for c in plan.candidates}
    paths = {c.name: list(state.paths.get(c.name, [])) for c in plan.candidates}
    answer = Answer(
        state.confirm.recipe, state.confirm.verdict, state.confirm.control, lines, len(plan.candidates), paths
    )
    changed = {c.name: c.changed for c in plan.candidates if c.changed}
    proxy = plan.proxy.duration if plan.proxy is not None else ""
    return dataclasses.replace(
        answer,
        spread=state.spread,
        out_of_reach=state.out_of_reach,
        tolerance=state.tolerance,
        changed=changed,
        proxy=proxy,
        proxy_data=plan.proxy.data_fraction if plan.proxy is not None else 1.0,
        on_proxy=dict(state.confirm.proxy),
        at_full=dict(state.confirm.full),
        alone=dict(state.confirm.alone),
        covered=tuple(covered(state)),
    )
