"""What Tune's driver writes for each trial of a sweep: its result loggers on local storage; in a bucket, nothing.

Tune's loggers write into the driver's staging folder, which Tune uploads *whole* to the sweep's storage with its
experiment state at every experiment checkpoint (~10 s). In a bucket that upload grows with the sweep: at 1,000
two-step trials the loggers' files took about half the driver's CPU (ninth session), and with no files left the
upload still made a folder marker for every trial's empty folder, with its two parents, each time: ~43 PUT
requests a trial at 1,000 trials, 13 at 100 (twelfth session; docs/benchmarks.md "At scale"). So in a bucket
raycomp adds no loggers, each trial writes its history and ``params.json`` there itself (``result.json``:
layout.STORED_TRIAL_HISTORY), and a trial's staging folder is removed once the trial has ended (Tune writes
a failed trial's error files there, so it stays while the trial runs: the markers grow with the trials running at
once, not with the sweep).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from ray import tune
from ray.tune.logger import CSVLoggerCallback, JsonLoggerCallback

from raycomp.base.layout import is_uri
from raycomp.launch.sweep.outcome import quiet_missing_result_files


class NoStagingFolders(tune.Callback):
    """Removes a trial's folder in the driver's staging folder when the trial ends, if it is empty: Tune makes it
    as it schedules the trial, for the loggers raycomp leaves out in a bucket, and for a failed trial's error files
    (which keep it)."""

    def on_trial_complete(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        with contextlib.suppress(OSError):  # not empty (a logger a user added) or gone already: left as it is
            os.rmdir(trial.local_path)


def result_loggers(storage_path: str) -> list[tune.Callback]:
    """Tune's result.json and progress.csv for each trial on local storage (results.json completes the trials'
    own histories from them); in a bucket none, and no staging folder a finished trial. Never Tune's TensorBoard files
    (TUNE_DISABLE_AUTO_CALLBACK_LOGGERS in cluster.RAY_ENV)."""
    if not is_uri(storage_path):
        return [CSVLoggerCallback(), JsonLoggerCallback()]
    quiet_missing_result_files()
    return [NoStagingFolders()]
