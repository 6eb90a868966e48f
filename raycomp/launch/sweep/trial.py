"""One Tune trial: its arm becomes a ``TrialSpec``, trained in this process or by a ``TorchTrainer``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune

from raycomp import keys
from raycomp.checkpoint import KeptCheckpoints
from raycomp.config import ExperimentConfig, trial_config
from raycomp.errors import CheckpointError
from raycomp.launch.cluster import torch_trainer
from raycomp.launch.sinks import TuneSink
from raycomp.launch.spec import TrialSpec
from raycomp.launch.worker import run_in_process
from raycomp.layout import TRIAL_HISTORY
from raycomp.tracking import trial_run
from raycomp.tracking.ref import RunRef


def run_trial(param: dict[str, Any], sweep: ExperimentConfig, parent: RunRef | None = None) -> None:
    """Trains the arm ``param["arm"]`` of ``sweep``, resuming from the trial's checkpoint when restored.

    The trial's config is resolved here from the driver's validated one (no sweep section, nothing
    validated twice). With a ``parent`` run the trial logs to its own child run, which ``trial_run``
    ends FINISHED, KILLED (stopped by the scheduler) or FAILED.
    """
    arm = param["arm"]
    config = trial_config(sweep, arm)
    metric, mode = sweep.objective
    trial_id = tune.get_context().get_trial_id()
    with trial_run(parent, trial_id, arm, config) as run:
        fixed: dict[str, Any] = {"variant": arm["variant"]}
        if parent is not None and run is None:  # its run could not be opened (said once): counted, untracked
            fixed[keys.TRACKING_FAILURES] = 1
        folder = local_trial_folder()
        history = folder / TRIAL_HISTORY if folder is not None else None
        spec = TrialSpec(config, metric, mode, run=run, fixed_metrics=fixed, history=history)
        if config.scaling.num_workers == 0:
            newest = newest_trial_checkpoint()
            if newest is not None:
                run_in_process(spec, TuneSink(), load_path=newest)
            else:
                run_in_process(spec, TuneSink(), tune.get_checkpoint())
            return
        from ray.tune.integration.ray_train import TuneReportCallback

        # Named after the trial, so a restored sweep's trial resumes its own Train run.
        trainer = torch_trainer(spec, trial_id, sweep.layout.train_dir, run_callbacks=[TuneReportCallback()])
        trainer.fit()


def local_trial_folder() -> Path | None:
    """This trial's folder when the sweep's storage is local (where the trial itself can write), else None."""
    storage = tune.get_context().get_storage()
    if not isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return Path(storage.trial_fs_path)


def newest_trial_checkpoint() -> Path | None:
    """The newest checkpoint in this trial's folder that loads, on local storage (else None: Tune's own).

    Tune restores a trial from the last checkpoint its saved sweep state registered. A driver killed
    outright saved that state a while before it died, so the trial's folder can hold newer checkpoints,
    up to its final one: resuming from those, a trial that had finished trains no step again.
    """
    folder = local_trial_folder()
    if folder is None:
        return None
    try:
        return KeptCheckpoints(folder).newest_loadable()
    except CheckpointError:  # none whole (killed while its first was copied): from Tune's, or from scratch
        return None
