"""A find on Ray: the race (``raycomp.find.decide``) asks for a round, the round trains as a sweep round
(``rounds.py``), its finished trials become observations, and so on until the answer.

Its progress (the race's state, every observation, the round in flight and its Tune folder) is written whole to
``find_state.json`` in the run folder (``base.atomic_files``) before each round starts and after it ends. A find
stopped any way (Ctrl-C, SIGTERM, kill -9) continues with ``--resume`` from there: the round in flight is restored
from its Tune folder, where finished trials stay finished and unfinished ones resume from their checkpoints, so no
trial trains twice; the race then goes on from its stage.
"""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path
from typing import Any

import pydantic

from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import RunConflict, one_line
from raycomp.config import ExperimentConfig
from raycomp.find.answer import Answer, answer_of
from raycomp.find.decide import advance, start
from raycomp.find.observations import Observations, Trial
from raycomp.find.plan import FindPlan
from raycomp.find.race import Round
from raycomp.find.state import SCREEN, FindState
from raycomp.launch.find.rounds import Folder, arm_of, observed, round_config, run_round
from raycomp.launch.sweep.ledger import SET_ASIDE, next_folder
from raycomp.tracking.ref import RunRef

STATE_FILE = "find_state.json"


@dataclasses.dataclass
class Progress:
    """The race's state, what it has observed, and the round in flight with its Tune folder (None between rounds)."""

    state: FindState
    observations: Observations
    pending: Round | None = None
    folder: Folder | None = None


@dataclasses.dataclass(frozen=True)
class FindOutcome:
    plan: FindPlan
    progress: Progress
    interrupted: bool

    @property
    def answer(self) -> Answer:
        return answer_of(self.plan, self.progress.state)


def run_find(config: ExperimentConfig, plan: FindPlan, parent: RunRef | None, *, resume: bool) -> FindOutcome:
    """Runs the find (or continues the one in the run folder) on the Ray the caller started, until its answer or
    the first interrupt."""
    path = config.layout.local_dir / STATE_FILE
    progress = (load(path, plan) if resume and path.is_file() else None) or Progress(start(plan), Observations())
    if progress.state.out_of_reach:  # resumed with another tolerance: judge the references' spread again
        progress.state = dataclasses.replace(progress.state, stage=SCREEN, out_of_reach="", spread="")
    said, steps_said = "", _step_counts(progress.state)  # a resumed find's earlier steps were said before
    while True:
        if progress.pending is None:
            state = progress.state
            progress.pending = advance(plan, state, progress.observations, state.spent_s)
            if state.spread != said:  # what the seeds can support: said as soon as the references tell it
                said = state.spread
                print(f"find: {said}", flush=True)
            for line in _new_steps(state, steps_said):
                print(line, flush=True)
            steps_said = _step_counts(state)
            if progress.pending is None:
                save(path, plan, progress)
                return FindOutcome(plan, progress, interrupted=False)
            progress.folder = next_folder(config.layout.run_dir)
            save(path, plan, progress)
        if not _run_pending(config, plan, parent, progress):
            save(path, plan, progress)
            return FindOutcome(plan, progress, interrupted=True)
        save(path, plan, progress)


def _run_pending(config: ExperimentConfig, plan: FindPlan, parent: RunRef | None, progress: Progress) -> bool:
    """Trains the round in flight and observes it; False when an interrupt stopped it (nothing observed then)."""
    round_, folder = progress.pending, progress.folder
    assert round_ is not None and folder is not None
    recipes = [request.recipe for request in round_.requests if request.recipe is not None]
    proxy = plan.proxy if plan.on_proxy(round_.stage) else None
    trial_config = round_config(config, plan.candidates, recipes, proxy)
    unsettled = progress.state.tolerance is None  # the first round: the baseline's spread, before any candidate
    shown = ", ".join(dict.fromkeys(recipe.key for recipe in recipes)) or (
        "the baseline and its frontier, to measure their spread" if unsettled else "references only"
    )
    print(f"find: {round_.stage}: {len(round_.requests)} trials ({shown})", flush=True)
    print(f"find: {_so_far(plan, progress)}", flush=True)
    started = time.monotonic()
    arms = [arm_of(request, config if proxy else None) for request in round_.requests]
    grids, interrupted = run_round(trial_config, parent, arms, folder)
    progress.state.spent_s += time.monotonic() - started
    if interrupted:
        return False
    trials = [dataclasses.replace(trial, stage=round_.stage) for trial in observed(trial_config, grids)]
    progress.observations.add(trials)
    progress.state.rounds += 1
    progress.pending = progress.folder = None
    if parent is not None:
        from raycomp.tracking.find_runs import tag_stage

        on_proxy = proxy.duration if proxy is not None else ""
        tag_stage(parent, [trial.trial_id for trial in trials if trial.trial_id], round_.stage, on_proxy)
    return True


def _step_counts(state: FindState) -> dict[str, int]:
    return {name: len(steps) for name, steps in state.paths.items()}


def _new_steps(state: FindState, said: dict[str, int]) -> list[str]:
    """Each candidate's steps decided since ``said`` (who went on, who left and why), one line each, as decided."""
    return [
        f"find: {step.stage}: {name}: {step.outcome}"
        for name, steps in state.paths.items()
        for step in steps[said.get(name, 0) :]
    ]


def _so_far(plan: FindPlan, progress: Progress) -> str:
    """Trials done, the round's to come, and the budget spent: where a long find stands."""
    spent = f"{progress.state.spent_s / 60:.1f} min"
    budget = f"{spent} of the {plan.budget_s / 60:.0f}-minute budget" if plan.budget_s else f"{spent}"
    pending = len(progress.pending.requests) if progress.pending else 0
    return f"{len(progress.observations)} trials done, {pending} in this round; {budget} spent"


# -- the state file --------------------------------------------------------------------------------------------


def plan_data(plan: FindPlan) -> dict[str, Any]:
    """What a continued find must share with the find it continues: its candidates, settings, seeds and proxy."""
    candidates = [
        [c.name, [list(map(list, s)) for s in c.settings], sorted(c.incompatible_with)] for c in plan.candidates
    ]
    seeds = {
        stage: [getattr(plan, stage).first, getattr(plan, stage).last]
        for stage in ("screen", "tune", "compose", "confirm")
    }
    proxy = None if plan.proxy is None else {"fraction": plan.proxy.fraction, "stages": sorted(plan.proxy.stages)}
    if plan.proxy is not None and plan.proxy.data_fraction != 1:
        proxy["data_fraction"] = plan.proxy.data_fraction  # type: ignore[index]
    shared = {"candidates": candidates, "seeds": seeds, "halving": plan.halving}
    return json.loads(json.dumps(shared | ({"proxy": proxy} if proxy else {})))  # a find without: as before


def check_resumable(config: ExperimentConfig, plan: FindPlan) -> None:
    """``RunConflict`` when the find saved in the run folder searched other candidates, settings or seeds."""
    path = config.layout.local_dir / STATE_FILE
    if path.is_file():
        load(path, plan)


@dataclasses.dataclass
class SavedFind:
    """``find_state.json``: what a continued find must share with this one (``plan``, ``plan_data``), the race's
    state, every observation, and the round in flight with its Tune folder. Written and read by pydantic."""

    plan: dict[str, Any]
    state: FindState
    observations: list[Trial]
    pending: Round | None = None
    folder: tuple[str, str] | None = None


_SAVED = pydantic.TypeAdapter(SavedFind)


def save(path: Path, plan: FindPlan, progress: Progress) -> None:
    saved = SavedFind(plan_data(plan), progress.state, list(progress.observations), progress.pending, progress.folder)
    atomic_write_text(path, _SAVED.dump_json(saved).decode() + "\n")


def load(path: Path, plan: FindPlan) -> Progress | None:
    """The progress saved at ``path``; ``RunConflict`` when it was made by a find with other candidates or seeds.
    A file that cannot be read (cut short by a full disk) is set aside (``*.damaged``), said in one line, and None
    returned: the find starts again as if it had been deleted, its trials found again in the Tune folders."""
    try:
        saved = _SAVED.validate_json(path.read_text())
        if saved.plan != plan_data(plan):
            raise RunConflict(
                f"the find saved in {path.parent} searched other methods, settings or seeds than this find section: "
                "continue it with the find section it started with, or start a new find (--set name=...)"
            )
        return Progress(saved.state, Observations(saved.observations), saved.pending, saved.folder)
    except (OSError, ValueError, KeyError, TypeError) as error:
        aside = path.with_name(path.name + SET_ASIDE)
        path.replace(aside)
        print(f"find: its saved state {path} cannot be read ({one_line(error)}): set aside as {aside.name}; the find "
              "starts again, keeping the trials its Tune folders hold", flush=True)  # fmt: skip
        return None
