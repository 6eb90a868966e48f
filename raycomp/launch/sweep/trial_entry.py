"""The function Tune runs in a trial's process, in a module that imports nothing heavy.

A trial's process imports ``trial.py`` (torch, Ray Train, raycomp's loop) when it unpickles its trainable; from
here that import, and the trial's start-up after it, run with the cyclic garbage collector paused
(base/collector.py): less CPU in each trial process. Tune names trials and their log lines after this
function (``run_trial_...``, ``(run_trial pid=...)``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from raycomp.base.collector import collector_paused, freeze_imports
from raycomp.launch.signals import stops_said_quietly

if TYPE_CHECKING:
    from raycomp.config import ExperimentConfig
    from raycomp.tracking.ref import RunRef


def run_trial(
    param: dict[str, Any],
    sweep: ExperimentConfig,
    parent: RunRef | None = None,
    credentials: dict[str, str] | None = None,
) -> None:
    """``trial.train_trial``; the collector resumes once training starts (launch/worker.py), or when it ends."""
    stops_said_quietly()
    with collector_paused():
        from raycomp.launch.sweep.trial import train_trial

        freeze_imports()
        train_trial(param, sweep, parent, credentials)
