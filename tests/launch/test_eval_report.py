"""The result callback (raycomp.launch.eval_report.EvalReportCallback): its train loss, and its step clock on a GPU
(the clock's own tests: test_step_clock.py). The GPU tests skip without CUDA; bench/gpu_check.sh runs them (this
module imports no Ray)."""

from __future__ import annotations

import statistics
import time

import pytest
import torch
from helpers import NoSyncInSteps

from raycomp import Trainer
from raycomp.base import keys
from raycomp.core import Callback
from raycomp.launch.eval_report import EvalReportCallback


class Results:
    """A result sink that keeps the results."""

    def __init__(self) -> None:
        self.results: list[dict] = []

    def report(self, metrics, checkpoint_dir) -> None:
        self.results.append(dict(metrics))


class StepLosses(Callback):
    def __init__(self) -> None:
        self.losses: list[float] = []

    def batch_end(self, state, logger) -> None:
        self.losses.append(float(state.loss))


def test_each_result_carries_the_mean_train_loss_of_the_steps_since_the_one_before(model, loader):
    """The loss is summed where it is (on a GPU, on the device: no step waits to hand it to the host) and read once
    a result is due."""
    sink, seen = Results(), StepLosses()
    trainer = Trainer(model, loader, "2ep", eval_dataloader=loader, callbacks=[EvalReportCallback([sink]), seen])
    trainer.fit()
    steps = len(seen.losses) // 2  # one result an epoch
    means = [result[keys.TRAIN_LOSS] for result in sink.results]
    expected = [statistics.fmean(seen.losses[:steps]), statistics.fmean(seen.losses[steps:])]
    assert means == pytest.approx(expected, rel=1e-6)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_a_gpu_a_steps_time_includes_its_kernels_with_no_logger():
    """Issue 58: a step's time must hold its kernels, which run after the host has queued them. A step here is 1.6
    TFLOP of fp32 matrix products (tens of ms on a GPU) for a few ms of the host's work, so the clock must hold most
    of the fit's wall time; a host clock that waited for nothing would hold little more than the host's share."""
    from torch import nn
    from torch.utils.data import DataLoader, TensorDataset

    from raycomp.models import ClassifierModel

    torch.manual_seed(0)
    width = 4096
    data = TensorDataset(torch.randn(1024 * 4, width), torch.randint(0, width, (1024 * 4,)))

    def fit(batches: int) -> tuple[float, float]:
        report = EvalReportCallback([], "1ep")
        layers = [module for _ in range(16) for module in (nn.Linear(width, width), nn.ReLU())]
        trainer = Trainer(
            ClassifierModel(nn.Sequential(*layers)),
            DataLoader(data, batch_size=1024),
            f"{batches}ba",
            callbacks=[report],
            device="cuda",
            seed=0,
        )
        torch.cuda.synchronize()
        began = time.perf_counter()
        trainer.fit()
        torch.cuda.synchronize()
        return report.step_clock.total_s, time.perf_counter() - began

    fit(2)  # cuBLAS's handles and workspaces
    steps_s, wall_s = fit(12)
    assert 0.6 * wall_s < steps_s <= wall_s, (steps_s, wall_s)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("precision", ["amp_bf16", "fp32"])
def test_on_a_gpu_a_trials_steps_never_wait_for_the_device(precision):
    """Issue 58: a sweep's trial times each step and sums its loss without waiting for the GPU, so its steps overlap
    as bench_core's do, and the results still carry both. With tracking on, MLflow's callback takes each step's
    loss as a tensor and reads it at the report (a destination that reads later stands in for it: the card has no
    MLflow)."""
    from raycomp.config import ExperimentConfig
    from raycomp.config.recipe import build_trainer

    config = ExperimentConfig.from_dict(
        {"data": {"num_train": 64, "num_test": 32, "batch_size": 16}, "max_duration": "8ba", "precision": precision}
    )
    sink, guard, later = Results(), NoSyncInSteps(), ReadsLater()
    callbacks = [EvalReportCallback([sink]), guard]  # the result callback first: its BATCH_END is in the guard's window
    try:
        build_trainer(config, device="cuda", callbacks=callbacks, loggers=[later]).fit()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert guard.checked_steps == 6
    assert [result[keys.STEPS] > 0 and result[keys.TRAIN_LOSS] > 0 for result in sink.results] == [True, True]
    assert len(later.losses) == 8 and all(torch.isfinite(loss) for loss in later.losses)


class ReadsLater:
    """A logger destination that keeps each step's loss as the tensor it got (MLflow's callback reads it later)."""

    reads_tensors_later = True

    def __init__(self) -> None:
        self.losses: list[torch.Tensor] = []

    def log_metrics(self, metrics, step) -> None:
        if "train/loss" in metrics:
            self.losses.append(metrics["train/loss"])
