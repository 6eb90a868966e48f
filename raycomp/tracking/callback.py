"""``MlflowCallback``: rank 0's one tracking object for a run, its metrics sink and its report sink.

As a ``LoggerDestination`` it buffers every step's metrics. At each report (one per evaluation,
called before the report goes to Ray, so a trial Tune stops at this report has logged it) it logs
the report's metrics, the Engine's trace summary and the checkpoint, then flushes. Checkpoints are
uploaded to a new ``checkpoints/step_<n>/`` folder; only then do the run's tags
``raycomp.loop.checkpoint.latest`` / ``.best`` point at it and older folders go, so a crash mid-upload
leaves the previous checkpoint in place.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.core import Callback, Logger, State
from raycomp.tracking.artifacts import checkpoint_tag
from raycomp.tracking.client import BatchedClient
from raycomp.tracking.params import CLASSES_PARAM, measured_classes, measured_params
from raycomp.tracking.ref import RunRef

TRACE_TABLE = "traces.json"
TRACE_COLUMNS = ["algorithm", "event", "count", "total_s", "mean_s", "exit_codes"]
CHECKPOINTS = "checkpoints"
# Sent through the Trainer's Logger already (every step; eval/* at each evaluation); the step is MLflow's axis.
_PER_STEP = {keys.LR_METRIC, keys.STEP}
_EVERY_STEP = keys.LR_METRIC  # the Trainer logs it at every step: its history says how far a run got


class MlflowCallback(Callback):
    """Logs one run's steps and reports to MLflow; ``report`` adds ``tracking/failures`` and
    ``time/tracking_s`` to the report's metrics for whatever sink gets them next."""

    reads_tensors_later = True  # the step's loss is buffered as a tensor and read at the report's flush

    def __init__(self, ref: RunRef, *, metric: str, mode: str, num_to_keep: int | None, spill_file: Path | None = None):
        self.client = BatchedClient(ref)
        self.spill_file = spill_file  # where points the store did not take survive this process
        if spill_file is not None and (count := self.client.load_spilled(spill_file)):
            print(f"raycomp: sending {count} metric points an earlier attempt could not send", file=sys.stderr)
        self.metric, self.mode, self.num_to_keep = metric, mode, num_to_keep
        self.best: float | None = None
        self.best_folder: str | None = None
        self.kept: list[str] = []  # checkpoint folders in the run's artifacts, oldest first
        self.logged_through = -1  # the last step an earlier attempt of this run logged: a resume re-trains past it
        self.retrained = False
        self.logged_params: set[str] = set()  # the run's params: the config's, and those measured so far
        self._restore()

    # -- LoggerDestination -----------------------------------------------------------------------------

    def log_metrics(self, metrics: Mapping[str, Any], step: int) -> None:
        if step > self.logged_through:
            self.client.log_metrics(metrics, step)
        elif _EVERY_STEP in metrics and not self.retrained:  # a resumed run's steps up to there are logged
            self.retrained = True  # already; the tag says from where it trained them again
            self.client.set_tags({keys.RETRAINED_FROM_TAG: str(step)})

    # -- result sink -----------------------------------------------------------------------------------

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        step = int(metrics.get(keys.STEP) or 0)
        traces: Sequence[Mapping[str, Any]] = metrics.get(keys.TRACES) or []
        # Rank 0 logs every step's train/loss; the report's is the mean over ranks since the last report.
        skipped = {*_PER_STEP, keys.TRACES}
        sent = {_renamed(k): v for k, v in metrics.items() if k not in skipped and not k.startswith("eval/")}
        self.log_metrics({**sent, **trace_metrics(traces)}, step)
        if checkpoint_dir is not None:
            self._log_checkpoint(Path(checkpoint_dir) / keys.CHECKPOINT_FILE, step, metrics.get(self.metric))
        if keys.TRACES in metrics and (checkpoint_dir is not None or metrics.get(keys.FINISHED)):
            self.client.log_table(TRACE_COLUMNS, trace_rows(traces), TRACE_TABLE)
        self._flush()
        metrics[keys.TRACKING_FAILURES] = self.client.failures
        metrics[keys.TRACKING_SECONDS] = self.client.seconds  # rank 0's time in MLflow calls and buffering so far

    # -- loop hooks ------------------------------------------------------------------------------------

    def fit_start(self, state: State, logger: Logger) -> None:
        """The loader settings the run really trains with, where the config's params left them out (user data)."""
        self._log_measured(measured_params(state))

    def eval_after_forward(self, state: State, logger: Logger) -> None:
        """A user's classifier's number of classes, from its outputs on the first eval batch."""
        if CLASSES_PARAM not in self.logged_params:
            classes = measured_classes(state.outputs, state.batch)
            self._log_measured({CLASSES_PARAM: classes} if classes is not None else {})

    def _log_measured(self, params: Mapping[str, Any]) -> None:
        """Logs what the run's params lack (a param keeps its first value: those the config set stay)."""
        new = {key: value for key, value in params.items() if key not in self.logged_params}
        if new:
            self.client.log_params(new)  # a refusal is said once by the client, and not retried at every batch
            self.logged_params |= set(new)

    def fit_end(self, state: State, logger: Logger) -> None:
        for callback in getattr(
            state, "callbacks", ()
        ):  # a profiler's traces (raycomp/loop/profiling.py), written at its FIT_END
            for path in getattr(callback, "trace_files", ()):
                self.client.log_artifact(path, "profile")
        if not self._flush() and self.spill_file is not None:
            print(
                f"raycomp: {self.client.unsent} metric points could not be sent to MLflow; kept in "
                f"{self.spill_file}, they are sent when this run resumes",
                file=sys.stderr,
            )

    def close(self) -> None:
        self._flush()

    def _flush(self) -> bool:
        """Sends the buffered points; those the store refused are spilled to ``spill_file`` (a crash or an
        outage that outlasts the run loses none: reliability notes, L12), and the file goes once all are sent."""
        sent = self.client.flush()
        if self.spill_file is not None:
            try:
                self.client.spill(self.spill_file)
            except OSError as error:
                print(f"raycomp: could not keep unsent metrics in {self.spill_file}: {error}", file=sys.stderr)
        return sent

    # -- checkpoints -----------------------------------------------------------------------------------

    def _log_checkpoint(self, path: Path, step: int, value: Any) -> None:
        folder = f"{CHECKPOINTS}/step_{step:08d}"
        if not self.client.log_artifact(path, folder):
            return
        artifact = f"{folder}/{keys.CHECKPOINT_FILE}"
        tags = {keys.LATEST_TAG: artifact}
        if isinstance(value, int | float) and (self.best is None or _better(value, self.best, self.mode)):
            self.best, self.best_folder = float(value), folder
            tags.update({keys.BEST_TAG: artifact, keys.BEST_VALUE_TAG: repr(float(value))})
        if not self.client.set_tags(tags):
            return  # the pointers still name the previous checkpoints: keep their folders
        if folder not in self.kept:
            self.kept.append(folder)
        if self.num_to_keep:
            stale = [f for f in self.kept[: -self.num_to_keep] if f != self.best_folder]
            for old in stale:
                if self.client.delete_artifacts(old):
                    self.kept.remove(old)

    def _restore(self) -> None:
        """A restarted worker continues the run's checkpoint bookkeeping (best value, kept folders) and its
        metric history (the steps it logged are not logged twice when training resumes from an older checkpoint)."""
        run_id = self.client.ref.run_id
        try:
            run = self.client.client.get_run(run_id)
            listed = self.client.client.list_artifacts(run_id, CHECKPOINTS)
            started = _EVERY_STEP in run.data.metrics
            logged = self.client.client.get_metric_history(run_id, _EVERY_STEP) if started else []
        except Exception:  # an unreachable store is reported by the first send, not here
            return
        self.logged_through = max((point.step for point in logged), default=-1)
        self.logged_params = set(run.data.params)
        tags = run.data.tags
        best_value, best = checkpoint_tag(tags, keys.BEST_VALUE_TAG), checkpoint_tag(tags, keys.BEST_TAG)
        if best_value is not None and best is not None:
            self.best, self.best_folder = float(best_value), str(Path(best).parent)
        self.kept = sorted(entry.path for entry in listed if entry.is_dir)


def trace_metrics(rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """``trace/<Algorithm>/<event>/{count,total_s,mean_s}``: what each algorithm cost where it ran."""
    metrics: dict[str, float] = {}
    for row in rows:
        prefix = f"trace/{row['algorithm']}/{row['event']}"
        metrics.update({f"{prefix}/{field}": row[field] for field in ("count", "total_s", "mean_s")})
    return metrics


def trace_rows(rows: Sequence[Mapping[str, Any]]) -> list[list[Any]]:
    return [[row.get(column) for column in TRACE_COLUMNS] for row in rows]


def _renamed(key: str) -> str:
    return "train/loss_mean" if key == keys.TRAIN_LOSS else key


def _better(value: float, best: float, mode: str) -> bool:
    return value > best if mode == "max" else value < best
