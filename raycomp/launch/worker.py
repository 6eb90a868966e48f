"""What one training process runs: config -> Trainer with a ReportCallback -> fit.

``train_worker`` is the Ray Train per-worker function (the TorchTrainer's ``train_loop_per_worker``);
``run_experiment`` is the same recipe for any process (a local-mode Tune trial, a local run), given
where to report and what to resume from. Ray has set up the process group before ``train_worker``
runs; raycomp's Trainer wraps the model in DDP itself, after INIT, so model surgery precedes DDP.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from raycomp.build import build_trainer
from raycomp.config import ExperimentConfig
from raycomp.core import Callback
from raycomp.launch.reporting import CHECKPOINT_FILE, ReportCallback, Reporter


def run_experiment(
    config: ExperimentConfig,
    reporter: Reporter,
    *,
    load_path: str | Path | None = None,
    device: str | torch.device = "auto",
    extra_metrics: dict[str, Any] | None = None,
    callbacks: list[Callback] | tuple[Callback, ...] = (),
) -> ReportCallback:
    """Trains ``config`` to its max_duration (resuming from ``load_path``), reporting after each evaluation."""
    report = ReportCallback(reporter, config.checkpoint.interval, extra=extra_metrics)
    trainer = build_trainer(config, callbacks=[*callbacks, report], load_path=load_path, device=device)
    if load_path is not None:
        report.extra["resumed_from_step"] = trainer.state.timestamp.batch
    if trainer.state.timestamp.reached(trainer.state.max_duration):
        trainer.evaluate()  # resumed after the end: report once more, so the caller always gets a final report
    else:
        trainer.fit()
    return report


class TrainReporter:
    """Reports through ``ray.train.report``; Ray copies the checkpoint folder before it returns."""

    def report(self, metrics: dict[str, Any], checkpoint_dir: Path | None) -> None:
        import ray.train

        checkpoint = ray.train.Checkpoint.from_directory(str(checkpoint_dir)) if checkpoint_dir else None
        ray.train.report(metrics, checkpoint=checkpoint)


def run_from_checkpoint(
    config: ExperimentConfig,
    reporter: Reporter,
    checkpoint: Any,
    *,
    device: str | torch.device,
    extra_metrics: dict[str, Any],
    callbacks: list[Callback] | tuple[Callback, ...] = (),
) -> ReportCallback:
    """``run_experiment`` resumed from a Ray checkpoint (Train's or Tune's), or from scratch without one.

    On the CPU, torch gets as many threads as the config gives the process CPUs, not one per core.
    """
    if not config.scaling.use_gpu:
        torch.set_num_threads(max(1, int(config.scaling.cpus_per_worker)))
    if checkpoint is None:
        return run_experiment(config, reporter, device=device, extra_metrics=extra_metrics, callbacks=callbacks)
    with checkpoint.as_directory() as folder:
        load_path = os.path.join(folder, CHECKPOINT_FILE)
        return run_experiment(
            config, reporter, load_path=load_path, device=device, extra_metrics=extra_metrics, callbacks=callbacks
        )


def train_worker(loop_config: dict[str, Any]) -> None:
    """The Ray Train per-worker function; ``loop_config`` holds the experiment and the extra callbacks."""
    import ray.train
    import ray.train.torch

    config = ExperimentConfig.from_dict(loop_config["experiment"], source="<trial config>")
    device = ray.train.torch.get_device() if config.scaling.use_gpu else "cpu"  # this worker's GPU, set by Ray
    extra = {**loop_config.get("extra_metrics", {}), "workers": ray.train.get_context().get_world_size()}
    run_from_checkpoint(
        config,
        TrainReporter(),
        ray.train.get_checkpoint(),
        device=device,
        extra_metrics=extra,
        callbacks=loop_config.get("callbacks", ()),
    )
