"""Running a sweep: a new one, or the continuation of one (``--resume``, ``--extend``) after any stop.

A new sweep is one Tune experiment over its arms, or, past ``TRIALS_PER_EXPERIMENT`` arms of a random search
on FIFO, consecutive experiments of that many. A continued one first restores each of its Tune experiments
(ledger.py), whose unfinished trials resume from their newest checkpoint and whose finished ones stay; then,
with random search, the arms no trial holds (new repeats or grid values of ``--extend``, arms of experiments
not started yet, or arms a driver killed outright generated but never saved) train in new experiments.
Results are read from all of them, so the tables and the report cover every trial of the sweep.
"""

from __future__ import annotations

import time

from ray import tune

from raycomp.base.collector import resume_collector
from raycomp.base.errors import ConfigError
from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.launch.signals import interrupts_deferred, tune_interrupts
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
from raycomp.launch.sweep.outcome import ExperimentResults, SweepOutcome, kept_result, unfinished
from raycomp.launch.sweep.space import sweep_arms
from raycomp.launch.sweep.stall import said_when_quiet
from raycomp.launch.sweep.tuner import build_tuner, restore_tuner
from raycomp.tracking.ref import RunRef

# Tune's driver keeps every trial of an experiment, with its running statistics and cached state, until the
# experiment ends, and writes (on a bucket, uploads) that state whole at each experiment checkpoint: one
# experiment of 10,000 trials would take the driver's memory to gigabytes (docs/benchmarks.md "At scale").
# Arms of a random search on FIFO are independent, so past this many they train as consecutive experiments,
# each freed when it ends; an ASHA scheduler or Optuna compares trials within one experiment, so those stay one.
TRIALS_PER_EXPERIMENT = 1_000


def fit_experiment(tuner: tune.Tuner) -> tuple[ExperimentResults, bool]:
    """Runs the Tune experiment; its results and whether an interrupt stopped it (``signals.tune_interrupts``).
    Only the results are kept (``outcome.kept_result``): Tune's ``ResultGrid`` holds every trial's whole state.
    A find's rounds run theirs with it too."""
    resume_collector()  # a sweep's or a find's driver has started (base/collector.py)
    with tune_interrupts() as interrupted, said_when_quiet():
        grid = tuner.fit()
    return list(map(kept_result, grid)), bool(interrupted)


def experiment_parts(config: ExperimentConfig, arms: list[Arm] | None) -> list[list[Arm] | None]:
    """``arms`` (None: the sweep's own) in the Tune experiments they train in, one after another: runs of
    ``TRIALS_PER_EXPERIMENT`` for a random search on FIFO, else all in one (None stays None: Tune's searcher)."""
    sweep = config.sweep_or_default
    if sweep.search_alg == "optuna" or (sweep.scheduler is not None and sweep.scheduler.name != "fifo"):
        return [arms]
    arms = sweep_arms(config) if arms is None else arms
    if len(arms) <= TRIALS_PER_EXPERIMENT:
        return [arms]
    return [arms[start : start + TRIALS_PER_EXPERIMENT] for start in range(0, len(arms), TRIALS_PER_EXPERIMENT)]


def _train(
    config: ExperimentConfig,
    parent: RunRef | None,
    arms: list[Arm] | None,
    folder: tuple[str, str] | None,
    earlier: list[ExperimentResults],
) -> SweepOutcome:
    """Trains ``arms`` (None: the sweep's own) after the experiments ``earlier`` restored, the first part in
    ``folder`` (None: the sweep's own), each later one in the sweep's next folder; stops at an interrupt, the
    arms of the parts not started counted unfinished (``--resume`` trains them)."""
    parts = experiment_parts(config, arms)
    grids = list(earlier)
    for index, part in enumerate(parts):
        waiting = sum(len(later or []) for later in parts[index + 1 :])
        if index == 0:
            tuner = build_tuner(config, parent, arms=part, folder=folder)
        else:  # a Ctrl-C between two parts stops the sweep as one inside Tune does, not with a traceback
            with interrupts_deferred() as stopped:
                tuner = build_tuner(config, parent, arms=part, folder=next_folder(config.layout.run_dir))
            if stopped:
                return SweepOutcome(grids, True, len(part or []) + waiting)
        if len(parts) > 1:  # Tune's table counts the trials of one experiment
            print(f"sweep part {index + 1} of {len(parts)}: {len(part or [])} trial(s)", flush=True)
        grid, interrupted = fit_experiment(tuner)
        grids.append(grid)
        if interrupted:
            return SweepOutcome(grids, True, unfinished(grid) + waiting)
    return SweepOutcome(grids)


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

    def train_round(arms: list[Arm], folder: tuple[str, str]) -> SweepOutcome:  # in parts, as the sweep's own
        return _train(config, parent, arms, folder, [])

    stopped = adapt(config, outcome.grids, train_round, started=started)
    if stopped is not None:
        return SweepOutcome(outcome.grids, True, stopped.unfinished)
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
        return _train(config, parent, None, None, [])
    grids: list[ExperimentResults] = []
    run_dir = config.layout.run_dir
    for folder in experiment_folders(run_dir):
        set_aside_damaged_state(folder)
        if has_state(folder):
            grid, interrupted = fit_experiment(restore_tuner(config, folder, parent))
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
    return _train(config, parent, arms, next_folder(run_dir), grids)
