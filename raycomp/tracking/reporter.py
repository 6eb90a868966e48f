"""The report that also goes to MLflow: metrics, the Engine's trace summary, and the checkpoint.

Wraps whatever ``Reporter`` a run reports to (Ray Train, Ray Tune, a folder) on rank 0 and sends to
MLflow first, so a trial that Tune stops at this report has already logged everything it reported.
Checkpoints are uploaded to a new ``checkpoints/step_<n>/`` folder; only then do the run's tags
``raycomp.checkpoint.latest`` / ``.best`` point at it and older folders go, so a crash mid-upload
leaves the previous checkpoint in place.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raycomp.core.trace import TraceSummary
from raycomp.tracking.logger import MlflowLogger

CHECKPOINT_FILE = "checkpoint.pt"  # as raycomp.launch.reporting writes it
LATEST_TAG = "raycomp.checkpoint.latest"  # artifact path of the newest checkpoint
BEST_TAG = "raycomp.checkpoint.best"  # and of the best by the sweep's metric, whose value is in
BEST_VALUE_TAG = "raycomp.checkpoint.best_value"
TRACE_TABLE = "traces.json"
# Sent through the Trainer's Logger already (every step; eval/* at each evaluation); the step is MLflow's axis.
_PER_STEP = {"trainer/lr", "step"}
TRACE_COLUMNS = ["algorithm", "event", "count", "total_s", "mean_s", "exit_codes"]


class TrackedReporter:
    """Logs each report to the run, then passes it on to ``inner`` with ``tracking/failures`` and
    ``time/tracking_s`` added."""

    def __init__(
        self, inner: Any, logger: MlflowLogger, *, metric: str | None, mode: str = "max", num_to_keep: int | None = 2
    ):
        self.inner, self.logger = inner, logger
        self.metric, self.mode, self.num_to_keep = metric, mode, num_to_keep
        self.traces: TraceSummary | None = None  # the Engine's, set once the Trainer exists
        self.best: float | None = None
        self.best_folder: str | None = None
        self.kept: list[str] = []  # checkpoint folders in the run's artifacts, oldest first
        self._restore()

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        step = int(metrics.get("step") or 0)
        # Rank 0 logs every step's train/loss; the report's is the mean over ranks since the last report.
        sent = {_renamed(k): v for k, v in metrics.items() if k not in _PER_STEP and not k.startswith("eval/")}
        self.logger.log_metrics(sent, step)
        if self.traces is not None:
            self.logger.log_metrics(trace_metrics(self.traces), step)
        if checkpoint_dir is not None:
            self._log_checkpoint(Path(checkpoint_dir) / CHECKPOINT_FILE, step, metrics.get(self.metric or ""))
        if self.traces is not None and (checkpoint_dir is not None or metrics.get("finished")):
            self.logger.log_table(TRACE_COLUMNS, trace_rows(self.traces), TRACE_TABLE)
        self.logger.flush()
        metrics["tracking/failures"] = self.logger.failures
        metrics["time/tracking_s"] = self.logger.seconds  # rank 0's time in MLflow calls and buffering so far
        self.inner.report(metrics, checkpoint_dir)

    def _log_checkpoint(self, path: Path, step: int, value: Any) -> None:
        folder = f"checkpoints/step_{step:08d}"
        if not self.logger.log_artifact(path, folder):
            return
        tags = {LATEST_TAG: f"{folder}/{CHECKPOINT_FILE}"}
        if isinstance(value, int | float) and (self.best is None or _better(value, self.best, self.mode)):
            self.best, self.best_folder = float(value), folder
            tags.update({BEST_TAG: f"{folder}/{CHECKPOINT_FILE}", BEST_VALUE_TAG: repr(float(value))})
        if not self.logger.set_tags(tags):
            return  # the pointers still name the previous checkpoints: keep their folders
        if folder not in self.kept:
            self.kept.append(folder)
        if self.num_to_keep:
            stale = [f for f in self.kept[: -self.num_to_keep] if f != self.best_folder]
            for old in stale:
                if self.logger.delete_artifacts(old):
                    self.kept.remove(old)

    def _restore(self) -> None:
        """A restarted worker continues the run's checkpoint bookkeeping (best value, kept folders)."""
        try:
            run = self.logger.client.get_run(self.logger.ref.run_id)
            listed = self.logger.client.list_artifacts(self.logger.ref.run_id, "checkpoints")
        except Exception:  # an unreachable store is reported by the first send, not here
            return
        tags = run.data.tags
        if BEST_VALUE_TAG in tags and BEST_TAG in tags:
            self.best, self.best_folder = float(tags[BEST_VALUE_TAG]), str(Path(tags[BEST_TAG]).parent)
        self.kept = sorted(entry.path for entry in listed if entry.is_dir)


def trace_metrics(traces: TraceSummary) -> dict[str, float]:
    """``trace/<Algorithm>/<event>/{count,total_s,mean_s}``: what each algorithm cost where it ran."""
    metrics: dict[str, float] = {}
    for row in traces.rows():
        prefix = f"trace/{row['algorithm']}/{row['event']}"
        metrics.update(
            {f"{prefix}/count": row["count"], f"{prefix}/total_s": row["total_s"], f"{prefix}/mean_s": row["mean_s"]}
        )
    return metrics


def trace_rows(traces: TraceSummary) -> list[list[Any]]:
    return [[row[column] for column in TRACE_COLUMNS] for row in traces.rows()]


def _renamed(key: str) -> str:
    return "train/loss_mean" if key == "train/loss" else key


def _better(value: float, best: float, mode: str) -> bool:
    return value > best if mode == "max" else value < best
