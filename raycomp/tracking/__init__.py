"""MLflow tracking: the only package that imports mlflow (docs/tracking.md).

A sweep is a parent run, each trial a child run, a training one run; ``runs`` opens and ends them
all as context managers. Rank 0 of each run's workers logs to it through one ``MlflowCallback``,
which batches its metrics through an explicit ``MlflowClient`` and run id (``RunRef``).
"""

from raycomp.tracking.artifacts import download_checkpoint, parse_run_reference
from raycomp.tracking.callback import MlflowCallback
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.ref import RunRef
from raycomp.tracking.runs import TrackedRun, close_orphaned_run, log_files, sweep_run, train_run, trial_run
from raycomp.tracking.store import make_client, open_experiment, tracking_uri

__all__ = [
    "BatchedClient",
    "MlflowCallback",
    "RunRef",
    "TrackedRun",
    "close_orphaned_run",
    "download_checkpoint",
    "log_files",
    "make_client",
    "open_experiment",
    "parse_run_reference",
    "sweep_run",
    "tracking_uri",
    "train_run",
    "trial_run",
]
