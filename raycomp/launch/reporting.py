"""The Trainer callback that turns each evaluation into one report to Ray, with a checkpoint when due.

Every rank evaluates at the same points (evaluation is collective), so every rank reports the same
number of times, which Ray Train requires; only rank 0 writes and attaches the checkpoint. Where
the report goes is a ``Reporter``: Ray Train inside a Train worker, Ray Tune inside a local-mode
trial, a plain folder for a local ``python -m raycomp.train`` run. Nothing here imports Ray.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any, Protocol

import torch
import torch.distributed as dist

from raycomp.checkpoint import atomic_save, checkpoint_payload
from raycomp.core import Callback, Logger, State, Time, Timestamp, TimeUnit
from raycomp.results import WALL  # training wall time since FIT_START, carried across resumes

CHECKPOINT_FILE = "checkpoint.pt"


class Reporter(Protocol):
    """Where reports go. ``checkpoint_dir`` holds ``checkpoint.pt`` (rank 0 only) and may be deleted after."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None: ...


class ReportCallback(Callback):
    """Reports after every evaluation: eval metrics, train loss (mean over ranks and batches since the last
    report), throughput, lr, wall time, progress.

    A checkpoint rides along with the first report at or past each ``checkpoint_interval`` boundary
    (epochs or batches) and with the last report of the run.
    """

    def __init__(
        self, reporter: Reporter, checkpoint_interval: str | Time = "1ep", extra: dict[str, Any] | None = None
    ):
        self.reporter = reporter
        self.interval = Time.from_input(checkpoint_interval)
        if self.interval.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH) or self.interval.value < 1:
            raise ValueError(f"checkpoint interval must be >= 1 epoch or batch, got {self.interval}")
        self.extra = dict(extra or {})  # constant metrics sent with every report (e.g. the trial's arm)
        self.wall_before = 0.0  # training seconds of earlier attempts, restored from the checkpoint
        self.cpu_before = 0.0  # and this process's CPU seconds in them
        self.first_step_unix: float | None = None
        self._fit_start = 0.0
        self._cpu_start = 0.0
        self._loss_sum = 0.0
        self._loss_count = 0
        self._window_start = 0.0
        self._window_samples = 0
        self._last_period = 0
        self.reports = 0
        self.report_s = 0.0

    # Only the clocks need to survive a restart: the rest describes the current window.
    def state_dict(self) -> dict[str, Any]:
        cpu = time.process_time() - self._cpu_start if self._fit_start else 0.0
        return {
            "wall_s": self.wall_before + self._elapsed(),
            "cpu_s": self.cpu_before + cpu,
            "period": self._last_period,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.wall_before, self.cpu_before = float(state["wall_s"]), float(state["cpu_s"])
        self._last_period = int(state["period"])

    def fit_start(self, state: State, logger: Logger) -> None:
        self._fit_start = self._window_start = time.perf_counter()
        self._cpu_start = time.process_time()
        self._window_samples = state.timestamp.sample

    def batch_start(self, state: State, logger: Logger) -> None:
        if self.first_step_unix is None:
            self.first_step_unix = time.time()

    def batch_end(self, state: State, logger: Logger) -> None:
        self._loss_sum += float(state.loss)
        self._loss_count += 1

    def eval_after_all(self, state: State, logger: Logger) -> None:
        if not self._fit_start:  # an evaluation outside fit (a run resumed after its end): clocks start now
            self.fit_start(state, logger)
        now = time.perf_counter()
        timestamp = state.timestamp
        if timestamp.batch_in_epoch >= state.steps_per_epoch:  # evaluated on an epoch's last batch, before
            timestamp = timestamp.to_next_epoch()  # the Trainer moves to the next epoch: count it as done
        final = state.stop_requested or timestamp.reached(state.max_duration)
        period = self._period(timestamp)
        with_checkpoint = final or period > self._last_period
        if with_checkpoint:
            self._last_period = period
        seconds = now - self._window_start
        metrics: dict[str, Any] = {
            **self.extra,
            **state.eval_metrics,
            WALL: self.wall_before + now - self._fit_start,
            "time/train_cpu_s": self.cpu_before + time.process_time() - self._cpu_start,  # this process only
            "time/first_step_unix": self.first_step_unix,
            "epoch": state.timestamp.epoch,
            "step": state.timestamp.batch,
            "samples": state.timestamp.sample,
            "throughput/samples_per_s": (state.timestamp.sample - self._window_samples) / seconds if seconds else 0.0,
            "trainer/lr": state.optimizers[0].param_groups[0]["lr"] if state.optimizers else None,
            "finished": final,
            "machine": machine(state.device),  # where these times were measured, for the speed-up report
        }
        loss_sum, loss_count = self._loss_sum, self._loss_count
        if state.world_size > 1:  # every rank is here (evaluation is collective): the mean over all ranks
            totals = torch.tensor([loss_sum, loss_count], dtype=torch.float64, device=state.device)
            dist.all_reduce(totals)
            loss_sum, loss_count = totals.tolist()
        if loss_count:
            metrics["train/loss"] = loss_sum / loss_count
        self._loss_sum, self._loss_count = 0.0, 0
        if not with_checkpoint or state.rank != 0:
            self._send(metrics, None)
        else:
            folder = Path(tempfile.mkdtemp(prefix="raycomp-ckpt-"))
            try:
                began = time.perf_counter()
                atomic_save(checkpoint_payload(state), folder / CHECKPOINT_FILE)
                self.report_s += time.perf_counter() - began
                self._send(metrics, folder)
            finally:
                shutil.rmtree(folder, ignore_errors=True)
        self._window_start, self._window_samples = time.perf_counter(), state.timestamp.sample

    def _send(self, metrics: dict[str, Any], folder: Path | None) -> None:
        metrics["time/report_s"] = self.report_s  # time spent in earlier reports (and checkpoint writes)
        began = time.perf_counter()
        self.reporter.report(metrics, folder)
        self.report_s += time.perf_counter() - began
        self.reports += 1

    def _period(self, timestamp: Timestamp) -> int:
        count = timestamp.epoch if self.interval.unit is TimeUnit.EPOCH else timestamp.batch
        return count // self.interval.value

    def _elapsed(self) -> float:
        return time.perf_counter() - self._fit_start if self._fit_start else 0.0


def machine(device: torch.device) -> str:
    """The hardware a trial measures its times on: CPU model, cores, torch threads, and the GPU if any."""
    text = f"{cpu_model()}, {os.cpu_count()} cores, torch threads: {torch.get_num_threads()}"
    if device.type == "cuda":
        text += f"; GPU {torch.cuda.get_device_name(device)}"
    return text


@functools.cache
def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as info:
            return next(line.split(":", 1)[1].strip() for line in info if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or "unknown CPU"


class FolderReporter:
    """Keeps reports in memory and checkpoints under ``folder`` (``checkpoint_<n>``, newest ``num_to_keep``).

    Used when a run has no Ray Train worker group to persist its checkpoints (local runs of ``raycomp.train``).
    """

    def __init__(self, folder: str | Path, num_to_keep: int | None = None):
        self.folder = Path(folder)
        self.num_to_keep = num_to_keep
        self.history: list[dict[str, Any]] = []

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        self.history.append(dict(metrics))
        if checkpoint_dir is None:
            return
        saved = self.checkpoints()
        index = int(saved[-1].name.split("_")[-1]) + 1 if saved else 0
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"checkpoint_{index:06d}"
        staging = self.folder / f".{target.name}.tmp"
        shutil.rmtree(staging, ignore_errors=True)
        shutil.copytree(checkpoint_dir, staging)
        staging.rename(target)  # a checkpoint folder is either whole or absent
        if self.num_to_keep:
            for old in self.checkpoints()[: -self.num_to_keep]:
                shutil.rmtree(old, ignore_errors=True)

    def checkpoints(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("checkpoint_*") if p.is_dir())

    def latest_checkpoint(self) -> Path | None:
        saved = self.checkpoints()
        return saved[-1] / CHECKPOINT_FILE if saved else None
