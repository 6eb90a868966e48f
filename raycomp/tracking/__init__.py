"""MLflow tracking: the only package that imports mlflow (docs/tracking.md).

A sweep is a parent run, each trial a child run, a training one run; ``runs`` opens and ends them
all as context managers. Rank 0 of each run's workers logs to it through one ``MlflowCallback``,
which batches its metrics through an explicit ``MlflowClient`` and run id (``RunRef``).

Names are imported on first use, so ``raycomp.tracking.ref`` (and whatever carries a ``RunRef``,
such as a ``TrialSpec``) imports without mlflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from raycomp.base.lazy import lazy_attributes

if TYPE_CHECKING:
    from raycomp.tracking.artifacts import download_checkpoint
    from raycomp.tracking.callback import MlflowCallback
    from raycomp.tracking.run_recovery import close_orphaned_run, finish_open_trial_runs
    from raycomp.tracking.runs import sweep_run, train_run
    from raycomp.tracking.store import tracking_uri
    from raycomp.tracking.sweep_results import log_files, log_verdicts
    from raycomp.tracking.trial_runs import trial_run

_MODULE_OF = {
    "download_checkpoint": "artifacts",
    "MlflowCallback": "callback",
    "close_orphaned_run": "run_recovery",
    "finish_open_trial_runs": "run_recovery",
    "log_files": "sweep_results",
    "log_verdicts": "sweep_results",
    "sweep_run": "runs",
    "train_run": "runs",
    "trial_run": "trial_runs",
    "tracking_uri": "store",
}


__getattr__ = lazy_attributes(__name__, {name: f"{__name__}.{module}" for name, module in _MODULE_OF.items()})


__all__ = [
    "MlflowCallback",
    "close_orphaned_run",
    "download_checkpoint",
    "finish_open_trial_runs",
    "log_files",
    "log_verdicts",
    "sweep_run",
    "tracking_uri",
    "train_run",
    "trial_run",
]
