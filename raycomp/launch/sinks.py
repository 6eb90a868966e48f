"""Where a run's per-evaluation results go: Ray Train, Ray Tune, or a local folder.

A *result* is what Ray calls a report: the metrics of one evaluation, with a checkpoint folder when
one is due. The ``EvalReportCallback`` hands each one to a list of sinks in order (MLflow first, so a
trial Tune stops at this result has logged it already). Ray is imported only by the sink that uses it.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from raycomp.base import keys
from raycomp.loop.checkpoint import KeptCheckpoints

if TYPE_CHECKING:
    import pyarrow.fs


class ResultSink(Protocol):
    """Takes one result. ``checkpoint_dir`` holds ``checkpoint.pt`` (rank 0 only) and is deleted after."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None: ...


class TrainSink:
    """``ray.train.report`` inside a Train worker; Ray copies the checkpoint folder before it returns."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        import ray.train

        checkpoint = ray.train.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
        ray.train.report(metrics, checkpoint=checkpoint)


# What Tune and the sweep's driver read of a local-mode trial's result: the sweep's metric (scheduler, searcher),
# train loss, epoch and training time (the live table), the step, whether the trial finished and its MLflow run.
# Tune keeps running statistics of every number it is sent (two deques each, ~1.6 kB a number a trial) and the
# whole last result in its saved state, so the other keys stay in the trial's history.jsonl, which results.json
# is built from (issue 33: the driver's memory per trial).
TUNE_KEYS = frozenset({keys.FINISHED, keys.MLFLOW_RUN_ID, keys.STEP, keys.EPOCH, keys.TRAIN_LOSS, keys.WALL})


class TuneSink:
    """``tune.report`` of a local-mode trial's ``TUNE_KEYS`` and ``metric``; Tune persists the checkpoint in the
    trial folder. The full result is the ``HistorySink``'s, which comes first."""

    def __init__(self, metric: str):
        self.kept = TUNE_KEYS | {metric}

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        from ray import tune

        checkpoint = tune.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
        try:
            tune.report({key: value for key, value in metrics.items() if key in self.kept}, checkpoint=checkpoint)
        except SystemExit:  # how Tune stops a trial (ASHA); at the final result, training is done anyway
            if not metrics.get(keys.FINISHED):
                raise


class HistorySink:
    """Each result appended to a Tune trial's ``history.jsonl`` by the trial itself (rank 0), before Ray
    hears of it.

    Tune's own record of a trial's results is written by the sweep's driver, and a driver killed outright
    loses those it had not saved; the trial, resumed from its newest checkpoint, does not report them
    again. The file keeps them, so the trial's curve has no gap (``outcome.trial_history``).
    """

    def __init__(self, path: Path):
        self.path = path

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        append_result(self.path, metrics)


@dataclass(frozen=True)
class StoredFile:
    """A file in remote storage (a bucket) as pyarrow reaches it; picklable, so a trial can hand it to its
    Train workers."""

    filesystem: pyarrow.fs.FileSystem
    path: str

    def read_text(self) -> str:
        """The file's text; "" when there is none yet. Opened without asking first whether it exists: pyarrow
        answers that for a missing file in a bucket with a HEAD and a LIST (it might be a folder), where opening
        costs one HEAD."""
        try:
            with self.filesystem.open_input_stream(self.path) as stream:
                return stream.read().decode("utf-8", errors="replace")
        except FileNotFoundError:
            return ""

    def write_text(self, text: str) -> None:
        """The whole file at once: a bucket's object is replaced whole or not at all."""
        with self.filesystem.open_output_stream(self.path) as stream:
            stream.write(text.encode("utf-8"))


class StoredHistorySink:
    """``HistorySink`` for a trial whose folder is in a bucket: the file is ``result.json`` there (Tune's name,
    layout.STORED_TRIAL_HISTORY), read once when the trial (re)starts and written whole at each result, since a
    bucket cannot append. A trial resumed by a new driver on another node thus still has the results it reported
    before its checkpoint."""

    def __init__(self, file: StoredFile):
        self.file = file
        self.text = file.read_text()

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        self.text += json.dumps(metrics, default=str) + "\n"
        self.file.write_text(self.text)


class FolderSink:
    """Results kept in memory and checkpoints in a local folder: a run with no Ray to persist them."""

    def __init__(self, checkpoints: KeptCheckpoints):
        self.checkpoints = checkpoints
        self.history: list[dict[str, Any]] = []

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        self.history.append(dict(metrics))
        if checkpoint_dir is not None:
            self.checkpoints.add(checkpoint_dir)


def append_result(path: Path, metrics: dict[str, Any]) -> None:
    """One result as one JSON line, on disk before this returns (a kill right after must not lose it)."""
    path.parent.mkdir(parents=True, exist_ok=True)  # Tune makes a trial's folder at its first checkpoint
    with path.open("a", encoding="utf-8") as file:
        file.write(json.dumps(metrics, default=str) + "\n")
        file.flush()
        os.fsync(file.fileno())
