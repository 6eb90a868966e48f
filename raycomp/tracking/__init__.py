"""MLflow tracking: the only package that imports mlflow (docs/tracking.md).

A sweep is a parent run, each trial a child run, a training one run; ``runs`` opens and ends them
all as context managers. Rank 0 of each run's workers logs to it through one ``MlflowCallback``,
which batches its metrics through an explicit ``MlflowClient`` and run id (``RunRef``).

Names are imported on first use, so ``raycomp.tracking.ref`` (and whatever carries a ``RunRef``,
such as a ``TrialSpec``) imports without mlflow.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from raycomp.tracking.ref import RunRef

if TYPE_CHECKING:
    from raycomp.tracking.artifacts import download_checkpoint, parse_run_reference
    from raycomp.tracking.callback import MlflowCallback
    from raycomp.tracking.client import BatchedClient
    from raycomp.tracking.runs import (
        TrackedRun,
        close_orphaned_run,
        finish_open_trial_runs,
        log_files,
        log_verdicts,
        sweep_run,
        train_run,
        trial_run,
    )
    from raycomp.tracking.store import make_client, open_experiment, tracking_uri

_MODULE_OF = {
    "download_checkpoint": "artifacts",
    "parse_run_reference": "artifacts",
    "MlflowCallback": "callback",
    "BatchedClient": "client",
    "TrackedRun": "runs",
    "close_orphaned_run": "runs",
    "finish_open_trial_runs": "runs",
    "log_files": "runs",
    "log_verdicts": "runs",
    "sweep_run": "runs",
    "train_run": "runs",
    "trial_run": "runs",
    "make_client": "store",
    "open_experiment": "store",
    "tracking_uri": "store",
}


def __getattr__(name: str) -> Any:
    if name not in _MODULE_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_MODULE_OF[name]}"), name)


__all__ = [
    "BatchedClient",
    "MlflowCallback",
    "RunRef",
    "TrackedRun",
    "close_orphaned_run",
    "download_checkpoint",
    "finish_open_trial_runs",
    "log_files",
    "log_verdicts",
    "make_client",
    "open_experiment",
    "parse_run_reference",
    "sweep_run",
    "tracking_uri",
    "train_run",
    "trial_run",
]
