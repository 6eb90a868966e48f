"""One Tune trial: its arm becomes a ``TrialSpec``, trained in this process or by a ``TorchTrainer``. Tune calls it
through ``trial_entry.run_trial``."""

from __future__ import annotations

import logging
import os
import shutil
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune

from raycomp.base import keys
from raycomp.base.collector import resume_collector
from raycomp.base.errors import CheckpointError
from raycomp.base.layout import TRIAL_HISTORY
from raycomp.config import ExperimentConfig, trial_config
from raycomp.config.arm import Arm
from raycomp.config.trial import worker_budget
from raycomp.launch.cluster import torch_trainer
from raycomp.launch.sinks import TuneSink
from raycomp.launch.spec import TrialSpec
from raycomp.launch.sweep.ledger import CONFIG_DIGEST, lost_trial_folder
from raycomp.launch.sweep.remote_checkpoint import newest_stored_checkpoint, store_params, stored_history
from raycomp.launch.worker import run_in_process
from raycomp.loop.checkpoint import KeptCheckpoints
from raycomp.tracking.ref import RunRef


def train_trial(
    param: dict[str, Any],
    sweep: ExperimentConfig,
    parent: RunRef | None = None,
    credentials: dict[str, str] | None = None,
) -> None:
    """Trains the arm ``param["arm"]`` of ``sweep``, resuming from the trial's checkpoint when restored.

    The trial's config is resolved here from the driver's validated one (no sweep section, nothing
    validated twice). With a ``parent`` run the trial logs to its own child run, which ``trial_run``
    ends FINISHED, KILLED (stopped by the scheduler) or FAILED; ``credentials`` are the MLflow variables
    the driver's tracking URI held (its reference here has none).

    A trial with no arm was made up by Tune from a damaged saved state (it restarts an experiment it cannot
    read, with an empty config): it ends at once, having trained and reported nothing.
    """
    if not isinstance(param.get("arm"), dict):
        print(f"trial {tune.get_context().get_trial_id()} has no arm (Tune made it up): nothing to train", flush=True)
        return
    os.environ.update(credentials or {})
    quiet_per_trial_lines()
    store_params(param)
    arm = Arm.from_tune(param["arm"])
    config = trial_config(sweep, arm)
    metric, mode = sweep.objective
    trial_id = tune.get_context().get_trial_id()
    folder = local_trial_folder()
    lost = lost_trial(sweep, arm, trial_id, folder, param.get(CONFIG_DIGEST))
    with tracked(parent, trial_id, arm, config, lost) as run:
        fixed: dict[str, Any] = {keys.VARIANT: arm.variant}
        if parent is not None and run is None:  # its run could not be opened (said once): counted, untracked
            fixed[keys.TRACKING_FAILURES] = 1
        history = folder / TRIAL_HISTORY if folder is not None else stored_history()
        budget = worker_budget(sweep, arm)
        spec = TrialSpec(config, metric, mode, run=run, fixed_metrics=fixed, history=history, budget=budget)
        if config.scaling.num_workers == 0:
            with newest_stored_checkpoint() as stored:  # remote storage's counterpart of newest_checkpoint
                newest = newest_checkpoint(folder) or newest_checkpoint(lost) or stored
                if newest is not None:
                    run_in_process(spec, TuneSink(metric), load_path=newest)
                else:
                    run_in_process(spec, TuneSink(metric), tune.get_checkpoint())
            return
        from ray.tune.integration.ray_train import TuneReportCallback

        # Named after the trial (or the lost trial it continues), so it resumes that Train run.
        name = lost.name if lost else trial_id
        trainer = torch_trainer(spec, name, sweep.layout.train_dir, run_callbacks=[TuneReportCallback()])
        resume_collector()
        trainer.fit()


def tracked(
    parent: RunRef | None, trial_id: str, arm: Arm, config: ExperimentConfig, lost: Path | None
) -> AbstractContextManager[RunRef | None]:
    """The trial's MLflow run (``tracking.trial_run``), or none without a parent run. mlflow is imported only
    then: a sweep without tracking does not pay its import in every trial process."""
    if parent is None:
        return nullcontext(None)
    from raycomp.tracking import trial_run

    return trial_run(parent, trial_id, arm, config, lost_trial_id=lost.name if lost else None)


def quiet_per_trial_lines() -> None:
    """No lines in this trial's process that say, for every trial, what the driver says once for the sweep.

    MLflow's "View run/experiment at <url>" (the driver prints the sweep's page) and Ray's "Checkpoint successfully
    created at" (the trial's folder has them) are three lines a trial. Each crosses the cluster to the driver,
    which printed them merged ("[repeated 26x across cluster]"): an eighth of the driver's samples in a profile of a
    3,000-trial sweep. MLflow's link also reads the run back, a request a trial (docs/benchmarks.md "At scale").
    """
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    logging.getLogger("ray.train._internal.storage").setLevel(logging.WARNING)


def lost_trial(
    sweep: ExperimentConfig, arm: Arm, trial_id: str, folder: Path | None, digest: str | None
) -> Path | None:
    """The folder of the trial of this arm and training config (``digest``) that a driver killed outright lost
    (``ledger.lost_trial_folder``),
    when this trial starts with nothing of its own; its history is copied here, and this trial continues
    it: from its newest checkpoint, under its MLflow run, so no step is trained twice."""
    train_run = Path(sweep.layout.train_dir) / trial_id
    if folder is None or tune.get_checkpoint() is not None or (folder / TRIAL_HISTORY).exists() or train_run.exists():
        return None  # local storage only; a restored trial has a past of its own
    found = lost_trial_folder(sweep.layout.run_dir, arm, trial_id, digest)
    if found is None:
        return None
    lost = Path(found)
    if (lost / TRIAL_HISTORY).is_file():
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(lost / TRIAL_HISTORY, folder / TRIAL_HISTORY)
    print(f"trial {trial_id} continues trial {lost.name}, which the sweep's saved state had lost", flush=True)
    return lost


def local_trial_folder() -> Path | None:
    """This trial's folder when the sweep's storage is local (where the trial itself can write), else None."""
    storage = tune.get_context().get_storage()
    if not isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return Path(storage.trial_fs_path)


def newest_checkpoint(folder: Path | None) -> Path | None:
    """The newest checkpoint in a trial's folder that loads (None without one, or off local storage).

    Tune restores a trial from the last checkpoint its saved sweep state registered. A driver killed
    outright saved that state a while before it died, so the trial's folder can hold newer checkpoints,
    up to its final one: resuming from those, a trial that had finished trains no step again.
    """
    if folder is None:
        return None
    try:
        return KeptCheckpoints(folder).newest_loadable()
    except CheckpointError:  # none whole (killed while its first was copied): from Tune's, or from scratch
        return None
