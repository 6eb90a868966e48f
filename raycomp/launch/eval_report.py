"""The Trainer callback that turns each evaluation into one result for the sinks, with a checkpoint when due.

Every rank evaluates at the same points (evaluation is collective), so every rank reports the same
number of times, which Ray Train requires; only rank 0 writes and attaches the checkpoint. Nothing
here imports Ray: where results go is the sinks' business (``raycomp.launch.sinks``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from raycomp.base import keys
from raycomp.base.scratch import scratch_folder
from raycomp.core import Callback, Logger, State, Time, Timestamp, TimeUnit
from raycomp.launch.hardware import machine
from raycomp.launch.sinks import ResultSink
from raycomp.launch.step_clock import StepClock
from raycomp.loop.checkpoint import save_to_folder


class EvalReportCallback(Callback):
    """After every evaluation, one result: eval metrics, train loss (mean over ranks and batches since the
    last result), throughput, lr, wall and CPU time, progress, the Engine's traces.

    A checkpoint rides along with the first result at or past each ``checkpoint_interval`` boundary
    (epochs or batches) and with the last result of the run.
    """

    def __init__(
        self,
        sinks: Sequence[ResultSink],
        checkpoint_interval: str | Time = "1ep",
        fixed_metrics: Mapping[str, Any] | None = None,
    ):
        self.sinks = list(sinks)
        self.interval = Time.from_input(checkpoint_interval)
        if self.interval.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH) or self.interval.value < 1:
            raise ValueError(f"checkpoint interval must be >= 1 epoch or batch, got {self.interval}")
        self.fixed_metrics = dict(fixed_metrics or {})  # sent with every result (e.g. the trial's arm)
        self.wall_before = 0.0  # training seconds of earlier attempts, restored from the checkpoint
        self.cpu_before = 0.0  # and this process's CPU seconds in them
        self.step_clock = StepClock()  # the training steps' own time: what verdicts compare
        self.first_step_unix: float | None = None
        self._fit_start = 0.0
        self._cpu_start = 0.0
        self._loss_sum: torch.Tensor | None = None  # on the loss's device: adding to it waits for nothing
        self._loss_count = 0
        self._window_start = 0.0
        self._window_samples = 0
        self._last_period = 0
        self.sending_s = 0.0  # time spent writing checkpoints and handing results to the sinks

    # Only the clocks need to survive a restart: the rest describes the current window.
    def state_dict(self) -> dict[str, Any]:
        cpu = time.process_time() - self._cpu_start if self._fit_start else 0.0
        return {
            "wall_s": self.wall_before + self._elapsed(),
            "cpu_s": self.cpu_before + cpu,
            "period": self._last_period,
            "steps_s": self.step_clock.total_s,
            "steps_cpu_s": self.step_clock.cpu_s,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.wall_before, self.cpu_before = float(state["wall_s"]), float(state["cpu_s"])
        self._last_period = int(state["period"])
        self.step_clock.total_s, self.step_clock.cpu_s = float(state["steps_s"]), float(state["steps_cpu_s"])

    def before_dataloader(self, state: State, logger: Logger) -> None:
        self.step_clock.start(state.device)

    def fit_start(self, state: State, logger: Logger) -> None:
        self._fit_start = self._window_start = time.perf_counter()
        self._cpu_start = time.process_time()
        self._window_samples = state.timestamp.sample

    def batch_start(self, state: State, logger: Logger) -> None:
        if self.first_step_unix is None:
            self.first_step_unix = time.time()

    def batch_end(self, state: State, logger: Logger) -> None:
        # Summed where it is: reading each step's loss on the host would make every GPU step wait for its kernels
        # (issue 58); the sum is read once a result is due.
        loss = torch.as_tensor(state.loss).detach().to(torch.float64)
        self._loss_sum = loss if self._loss_sum is None else self._loss_sum + loss
        self._loss_count += 1
        self.step_clock.stop()

    def eval_after_all(self, state: State, logger: Logger) -> None:
        if not self._fit_start:  # an evaluation outside fit (a run resumed after its end): clocks start now
            self.fit_start(state, logger)
        timestamp = state.timestamp
        if timestamp.batch_in_epoch >= state.steps_per_epoch:  # evaluated on an epoch's last batch, before
            timestamp = timestamp.to_next_epoch()  # the Trainer moves to the next epoch: count it as done
        final = state.stop_requested or timestamp.reached(state.max_duration)
        metrics = self._metrics(state, final)
        with_checkpoint = self._checkpoint_due(timestamp, final)
        if not with_checkpoint or state.rank != 0:
            self._send(metrics, None)
        else:
            with scratch_folder("raycomp-ckpt-") as folder:
                began = time.perf_counter()
                save_to_folder(state, folder)
                self.sending_s += time.perf_counter() - began
                self._send(metrics, folder)
        self._window_start, self._window_samples = time.perf_counter(), state.timestamp.sample

    def _metrics(self, state: State, final: bool) -> dict[str, Any]:
        now = time.perf_counter()
        seconds = now - self._window_start
        samples = state.timestamp.sample - self._window_samples
        metrics: dict[str, Any] = {
            **self.fixed_metrics,
            **state.eval_metrics,
            keys.WALL: self.wall_before + now - self._fit_start,
            keys.CPU: self.cpu_before + time.process_time() - self._cpu_start,  # this process only
            keys.STEPS: self.step_clock.total_s,
            keys.STEPS_CPU: self.step_clock.cpu_s,
            "time/first_step_unix": self.first_step_unix,
            keys.EPOCH: state.timestamp.epoch,
            keys.STEP: state.timestamp.batch,
            "samples": state.timestamp.sample,
            "throughput/samples_per_s": samples / seconds if seconds else 0.0,
            keys.LR_METRIC: state.optimizers[0].param_groups[0]["lr"] if state.optimizers else None,
            keys.FINISHED: final,
            keys.MACHINE: machine(state.device),  # where these times were measured, for the speed-up report
            keys.HOST_LOAD: os.getloadavg()[0],  # how busy the machine was: the noise behind these times
            # Whole-run totals so far. A tuple: Tune's TensorBoard logger tries to draw lists as histograms.
            keys.TRACES: tuple(state.trace_summary.rows()),
        }
        train_loss = self._mean_train_loss(state)
        if train_loss is not None:
            metrics[keys.TRAIN_LOSS] = train_loss
        return metrics

    def _mean_train_loss(self, state: State) -> float | None:
        """The mean train loss since the last result, over all ranks (every rank is here: eval is collective)."""
        loss_sum, loss_count = float(self._loss_sum) if self._loss_sum is not None else 0.0, self._loss_count
        self._loss_sum, self._loss_count = None, 0
        if state.world_size > 1:
            totals = torch.tensor([loss_sum, loss_count], dtype=torch.float64, device=state.device)
            dist.all_reduce(totals)
            loss_sum, loss_count = totals.tolist()
        return loss_sum / loss_count if loss_count else None

    def _checkpoint_due(self, timestamp: Timestamp, final: bool) -> bool:
        count = timestamp.epoch if self.interval.unit is TimeUnit.EPOCH else timestamp.batch
        period = count // self.interval.value
        due = final or period > self._last_period
        if due:
            self._last_period = period
        return due

    def _send(self, metrics: dict[str, Any], folder: Path | None) -> None:
        metrics["time/report_s"] = self.sending_s  # time spent in earlier results (and checkpoint writes)
        began = time.perf_counter()
        for sink in self.sinks:
            sink.report(metrics, folder)
        self.sending_s += time.perf_counter() - began

    def _elapsed(self) -> float:
        return time.perf_counter() - self._fit_start if self._fit_start else 0.0
