"""The Tuner of a sweep: resources per trial, the scheduler, Tune's live table, build and restore."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import ray
from ray import tune
from ray.tune.schedulers import AsyncHyperBandScheduler, FIFOScheduler, TrialScheduler

from raycomp.base import keys
from raycomp.base.errors import NotFound, RunConflict, one_line
from raycomp.base.layout import is_uri
from raycomp.base.remedies import remedies
from raycomp.config import ExperimentConfig, SweepConfig
from raycomp.config.arm import Arm
from raycomp.launch.cluster import TRIAL_SLOT
from raycomp.launch.sweep.bucket import tune_storage
from raycomp.launch.sweep.credentials import (
    config_without_credentials,
    keep_saved_state_private,
    ref_without_credentials,
    tracking_credentials,
)
from raycomp.launch.sweep.loggers import result_loggers
from raycomp.launch.sweep.outcome import quiet_missing_result_files
from raycomp.launch.sweep.retired_checkpoints import stand_in_for_retired_checkpoints
from raycomp.launch.sweep.space import search_space
from raycomp.launch.sweep.stall import Heard
from raycomp.launch.sweep.trial_entry import run_trial
from raycomp.tracking.ref import RunRef

ITERATION = "training_iteration"  # one iteration = one result = one evaluation
# ASHA needs a last rung; a sweep stops trials by max_duration, so this only has to exceed any trial's evaluations.
_NO_MAX_T = 10_000


class CloseOrphanedRuns(tune.Callback):
    """Ends the MLflow run of a trial that could not end it itself: its process died (FAILED), or the scheduler
    stopped a multi-worker trial (KILLED; FINISHED at its final result). Without such a scheduler a trial completes
    only by returning, its run ended (by the sweep's end if the store was down), so its run is not read: a request
    a trial, a sixth of the driver's CPU. Tune saves it in ``tuner.pkl``: it holds a ref without credentials."""

    def __init__(self, parent: RunRef, *, scheduler_stops_trials: bool = True):
        self.parent = ref_without_credentials(parent)
        self.scheduler_stops_trials = scheduler_stops_trials

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        from raycomp.tracking import close_orphaned_run

        if not getattr(self, "scheduler_stops_trials", True):  # (a sweep saved before the flag: True)
            return
        result = trial.last_result or {}
        finished = bool(result.get(keys.FINISHED))  # stopped at its final result
        close_orphaned_run(self.parent, trial.trial_id, failed=False, finished=finished, run_id=_run_id(result))

    def on_trial_error(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        from raycomp.tracking import close_orphaned_run

        close_orphaned_run(self.parent, trial.trial_id, failed=True, run_id=_run_id(trial.last_result or {}))


def _run_id(result: Mapping[str, Any]) -> str | None:
    """The trial's MLflow run as its last report named it; None if it never reported (then it is searched for)."""
    run_id = result.get(keys.MLFLOW_RUN_ID)
    return run_id if isinstance(run_id, str) and run_id else None


def trial_resources(config: ExperimentConfig) -> dict[str, float]:
    """What a trial's own process holds: the worker's CPU/GPU in local mode, else only a trial slot."""
    scaling = config.scaling
    if scaling.num_workers == 0:
        return {"CPU": scaling.cpus_per_worker, "GPU": scaling.worker_gpus}
    return {"CPU": 0, TRIAL_SLOT: 1}


def concurrent_trials(config: ExperimentConfig, resources: Mapping[str, float]) -> int:
    """``sweep.max_concurrent_trials``, or as many trials as the cluster's CPUs (and GPUs) fit at once."""
    if config.sweep and config.sweep.max_concurrent_trials:
        return config.sweep.max_concurrent_trials
    scaling = config.scaling
    workers = max(1, scaling.num_workers)
    fit = math.floor(resources.get("CPU", 1) / (workers * scaling.cpus_per_worker))
    if scaling.use_gpu:
        fit = min(fit, math.floor(resources.get("GPU", 0) / (workers * scaling.worker_gpus)))
    return max(1, fit)


class _KeepBaseline(AsyncHyperBandScheduler):
    """ASHA that stops only method trials early: the baseline, its frontier and its control are what every
    verdict is measured against, so they always run to the end."""

    def on_trial_result(self, tune_controller: Any, trial: Any, result: dict) -> str:
        decision = super().on_trial_result(tune_controller, trial, result)
        if trial.config.get("arm", {}).get("variant") != keys.METHOD and not result.get(keys.FINISHED):
            return TrialScheduler.CONTINUE
        return decision


def build_scheduler(sweep: SweepConfig) -> TrialScheduler:
    if sweep.scheduler is None or sweep.scheduler.name == "fifo":
        return FIFOScheduler()
    options = sweep.scheduler
    return _KeepBaseline(
        time_attr=ITERATION,
        grace_period=options.grace_period,
        reduction_factor=options.reduction_factor,
        max_t=options.max_t or _NO_MAX_T,
    )


def progress_reporter(sweep: SweepConfig) -> tune.CLIReporter:
    """Tune's live table: arm, swept values, the sweep's metric, train loss, epoch and training seconds."""
    parameters = {"arm/variant": "arm"}
    parameters.update({f"arm/overrides/{path}": path.split(".")[-1] for path in sweep.space})
    return tune.CLIReporter(
        metric_columns={
            sweep.metric: sweep.metric.split("/")[-1],
            keys.TRAIN_LOSS: "loss",
            keys.EPOCH: "ep",
            keys.WALL: "train s",
        },
        parameter_columns=parameters,
        max_report_frequency=10,
    )


def trial_folder(trial: Any) -> str:
    """A trial's folder: its id. Not a lambda, which Tune's saved state pickles whole into every trial."""
    return trial.trial_id


def make_trainable(config: ExperimentConfig, parent: RunRef | None) -> Any:
    """``run_trial`` with the sweep's config and parent run, neither holding the tracking URI's credentials
    (``credentials`` carries them apart, for a trial whose Ray did not inherit this process's environment)."""
    credentials = tracking_credentials() if parent is not None else {}
    trainable = tune.with_parameters(
        run_trial,
        sweep=config_without_credentials(config),
        parent=ref_without_credentials(parent),
        credentials=credentials,
    )
    return tune.with_resources(trainable, trial_resources(config))


def build_tuner(
    config: ExperimentConfig,
    parent: RunRef | None = None,
    callbacks: list[tune.Callback] | None = None,
    *,
    arms: list[Arm] | None = None,
    folder: tuple[str, str] | None = None,
) -> tune.Tuner:
    """The Tuner for ``config``'s sweep (no ``sweep`` section: the baseline and the config as written).

    ``parent`` is the sweep's MLflow run: each trial logs a child run under it. ``callbacks``: extra Tune callbacks
    on the driver (benchmarks time trial starts with one). ``arms`` (random search only) replaces the sweep's arms,
    ``folder`` (storage_path, name) its experiment folder: a continued sweep's new arms train apart (ledger.py).
    """
    sweep = config.sweep_or_default
    cluster = ray.cluster_resources()
    if config.scaling.num_workers > 0 and cluster.get(TRIAL_SLOT, 0) < 1:
        raise RuntimeError(
            f"The Ray cluster declares no '{TRIAL_SLOT}' resource, which each multi-worker trial's driver holds; "
            f"start the head with --resources='{{\"{TRIAL_SLOT}\": 8}}' (cluster.yaml does)"
        )
    max_concurrent = concurrent_trials(config, cluster)
    param_space, searcher, num_samples = search_space(config, arms)
    storage_path, name = folder or (config.layout.storage, config.name)
    opened_path, filesystem = tune_storage(storage_path)
    tuner = tune.Tuner(
        make_trainable(config, parent),
        param_space=param_space,
        tune_config=tune.TuneConfig(
            metric=sweep.metric,
            mode=sweep.mode,
            scheduler=build_scheduler(sweep),
            search_alg=searcher,
            num_samples=num_samples,
            max_concurrent_trials=max_concurrent,
            reuse_actors=reuses_actors(config),
            trial_dirname_creator=trial_folder,
        ),
        run_config=tune.RunConfig(
            name=name,
            storage_path=opened_path,
            storage_filesystem=filesystem,
            callbacks=[
                *result_loggers(storage_path),
                Heard(),  # what said_when_quiet reads: a round that hears nothing for a minute says why
                *(callbacks or []),
                *([CloseOrphanedRuns(parent, scheduler_stops_trials=stops_trials(config))] if parent else []),
            ],
            progress_reporter=progress_reporter(sweep),
            verbose=1,  # the table only; each result in full is in the trial folders
            failure_config=tune.FailureConfig(max_failures=trial_retries(config)),
            # the newest num_to_keep in each trial's folder: what a resume needs (a 6-epoch arm kept every one)
            checkpoint_config=tune.CheckpointConfig(num_to_keep=config.checkpoint.num_to_keep),
        ),
    )
    keep_saved_state_private(f"{storage_path.rstrip('/')}/{name}", parent)
    return tuner


def reuses_actors(config: ExperimentConfig) -> bool:
    """Local-mode trials of a FIFO sweep run one after another in the same Tune actor (no torch import per trial).
    Not under ASHA: to reuse the actor of a trial it stopped mid-run, Tune waits ``TUNE_FUNCTION_THREAD_TIMEOUT_S``
    for its thread to unwind and, if it has not, fails the *next* trial ("Could not re-use actor")."""
    return config.scaling.num_workers == 0 and not stops_trials(config)


def stops_trials(config: ExperimentConfig) -> bool:
    """Whether the sweep's scheduler (ASHA) may stop a trial before its function returns."""
    sweep = config.sweep
    return sweep is not None and sweep.scheduler is not None and sweep.scheduler.name != "fifo"


def trial_retries(config: ExperimentConfig) -> int:
    """``failure.max_failures`` for Tune: a local-mode trial (``num_workers: 0``) is retried by Tune, from its
    newest checkpoint; a multi-worker trial's TorchTrainer retries its worker group itself, so Tune does not."""
    return config.failure.max_failures if config.scaling.num_workers == 0 else 0


def restore_tuner(config: ExperimentConfig, folder: str, parent: RunRef | None = None) -> tune.Tuner:
    """The Tune experiment saved in ``folder``: unfinished and failed (ERROR) trials resume from their newest
    checkpoint (retired_checkpoints), finished ones stay; Tune restores its saved callbacks (``CloseOrphanedRuns``,
    ``Heard``). Its state is a pickle: restoring runs code from the folder, which must be trusted (docs/faults.md)."""
    if not tune.Tuner.can_restore(folder):
        raise NotFound(f"no sweep to resume at {folder} (run without {remedies().resume} to start one)")
    stand_in_for_retired_checkpoints(folder)
    try:
        opened_folder, filesystem = tune_storage(folder)
        tuner = tune.Tuner.restore(
            opened_folder,
            trainable=make_trainable(config, parent),
            resume_unfinished=True,
            resume_errored=True,
            storage_filesystem=filesystem,
        )
    except Exception as error:  # a damaged tuner.pkl: unpickling fails in many ways
        raise RunConflict(
            f"the sweep's saved state in {folder} cannot be read ({one_line(error)}): "
            f"start the sweep again under another name ({remedies().rename})"
        ) from error
    if is_uri(folder):  # a sweep saved with Tune's loggers keeps them; one saved without, without
        quiet_missing_result_files()
    keep_saved_state_private(folder, parent)
    return tuner
