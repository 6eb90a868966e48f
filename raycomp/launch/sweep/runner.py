"""Running a sweep: a new one, or the continuation of one (``--resume``, ``--extend``) after any stop.

A new sweep is one Tune experiment over all its arms. A continued one first restores each of its Tune
experiments (ledger.py), whose unfinished trials resume from their newest checkpoint and whose finished
ones stay; then, with random search, the arms no trial holds (new repeats or grid values of
``--extend``, or arms a driver killed outright generated but never saved) train in a new experiment.
Results are read from all of them, so the tables and the report cover every trial of the sweep.
"""

from __future__ import annotations

import dataclasses
import time

from ray import tune

from raycomp.base.errors import ConfigError
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.launch.signals import tune_interrupts
from raycomp.launch.sweep.adaptive import adapt
from raycomp.launch.sweep.ledger import (
    experiment_folders,
    has_state,
    missing_arms,
    next_folder,
    relabeled,
    result_arm,
    set_aside_damaged_state,
)
from raycomp.launch.sweep.outcome import unfinished
from raycomp.launch.sweep.space import sweep_arms
from raycomp.launch.sweep.tuner import build_tuner, restore_tuner
from raycomp.tracking.ref import RunRef


@dataclasses.dataclass
class SweepOutcome:
    """The sweep's Tune results, one grid per experiment, whether a Ctrl-C (or SIGTERM) stopped it, and how
    many of its trials were left unfinished then."""

    grids: list[tune.ResultGrid]
    interrupted: bool = False
    unfinished: int = 0


def _fit(tuner: tune.Tuner) -> tuple[tune.ResultGrid, bool]:
    """Runs the Tune experiment; whether an interrupt stopped it (``signals.tune_interrupts``)."""
    with tune_interrupts() as interrupted:
        grid = tuner.fit()
    return grid, bool(interrupted)


def run_sweep(
    config: ExperimentConfig,
    parent: RunRef | None,
    *,
    resume: bool = False,
    extend: bool = False,
) -> SweepOutcome:
    """Runs the sweep (or continues it) on the Ray the caller started; stops at the first Ctrl-C. With
    ``sweep.max_repeats`` it then adds seeds to the configurations still unresolved (adaptive.py)."""
    started = time.monotonic()
    outcome = _run_arms(config, parent, resume=resume, extend=extend)
    sweep = config.sweep_or_default
    if outcome.interrupted or not sweep.adaptive or sweep.search_alg == "optuna":
        return outcome

    def fit(arms: list[Arm], folder: tuple[str, str]) -> tuple[tune.ResultGrid, bool]:
        return _fit(build_tuner(config, parent, arms=arms, folder=folder))

    grid = adapt(config, outcome.grids, fit, started=started)
    if grid is not None:  # the last round was interrupted
        return SweepOutcome(outcome.grids, True, unfinished(grid))
    return outcome


def _run_arms(
    config: ExperimentConfig,
    parent: RunRef | None,
    *,
    resume: bool,
    extend: bool,
) -> SweepOutcome:
    """The sweep's own arms (its first ``repeats`` seeds): trained, or restored and completed."""
    sweep = config.sweep_or_default
    random_search = sweep.search_alg != "optuna"
    if extend and not random_search:
        raise ConfigError("--extend needs sweep.search_alg: random (a searcher samples each trial anew)")
    if not (resume or extend):
        grid, interrupted = _fit(build_tuner(config, parent))
        return SweepOutcome([grid], interrupted, unfinished(grid))
    grids: list[tune.ResultGrid] = []
    run_dir = config.layout.run_dir
    for folder in experiment_folders(run_dir):
        set_aside_damaged_state(folder)
        if has_state(folder):
            grid, interrupted = _fit(restore_tuner(config, folder, parent))
            grids.append(grid)
            if interrupted:
                return SweepOutcome(grids, interrupted, unfinished(grid))
    if not random_search and grids:
        return SweepOutcome(grids)
    trained = [arm for grid in grids for arm in map(result_arm, grid) if arm is not None]
    arms = missing_arms(relabeled(sweep_arms(config), trained), trained) if random_search else None
    if arms == []:
        return SweepOutcome(grids)
    if arms is not None and grids:
        print(f"training {len(arms)} arm(s) the sweep has no trial of yet", flush=True)
    grid, interrupted = _fit(build_tuner(config, parent, arms=arms, folder=next_folder(run_dir)))
    return SweepOutcome([*grids, grid], interrupted, unfinished(grid))
