"""MLflow tracking: the only package that imports mlflow (docs/tracking.md).

A sweep is a parent run, each trial a child run created by the trial; rank 0 of each run's workers
logs to it through an explicit ``MlflowClient`` and run id (``RunRef``), batching its metrics.
"""

from raycomp.tracking.checkpoints import CheckpointNotFound, download_checkpoint, parse_run_reference
from raycomp.tracking.logger import MlflowLogger
from raycomp.tracking.reporter import TrackedReporter, trace_metrics
from raycomp.tracking.runs import close_trial_run, end_run, find_trial_run, start_run, start_trial_run
from raycomp.tracking.store import RunRef, TrackingUnavailable, open_experiment, tracking_uri

__all__ = [
    "CheckpointNotFound",
    "MlflowLogger",
    "RunRef",
    "TrackedReporter",
    "TrackingUnavailable",
    "close_trial_run",
    "download_checkpoint",
    "end_run",
    "find_trial_run",
    "open_experiment",
    "parse_run_reference",
    "start_run",
    "start_trial_run",
    "trace_metrics",
    "tracking_uri",
]
