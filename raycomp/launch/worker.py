"""What one training process runs: config -> Trainer with a ReportCallback -> fit.

``train_worker`` is the Ray Train per-worker function (the TorchTrainer's ``train_loop_per_worker``);
``run_experiment`` is the same recipe for any process (a local-mode Tune trial, a local run), given
where to report and what to resume from. Ray has set up the process group before ``train_worker``
runs; raycomp's Trainer wraps the model in DDP itself, after INIT, so model surgery precedes DDP.
"""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

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
    tracking: Mapping[str, str] | None = None,
    recreate_required: bool = False,
) -> ReportCallback:
    """Trains ``config`` to its max_duration (resuming from ``load_path``), reporting after each evaluation.

    With ``tracking`` (a ``RunRef`` as a dict), rank 0 also logs every step's metrics, each report, the
    Engine's traces and the checkpoints to that MLflow run. ``recreate_required`` re-creates the
    ``required_on_load`` algorithms a checkpoint needs and the config lacks, instead of refusing it.
    """
    loggers: list[Any] = []
    tracked = None
    if tracking is not None and not (dist.is_available() and dist.is_initialized() and dist.get_rank() != 0):
        from raycomp.tracking import MlflowLogger, RunRef, TrackedReporter

        mlflow_logger = MlflowLogger(RunRef(**tracking))
        sweep = config.sweep
        metric, mode = (sweep.metric, sweep.mode) if sweep else ("eval/accuracy", "max")
        reporter = tracked = TrackedReporter(
            reporter, mlflow_logger, metric=metric, mode=mode, num_to_keep=config.checkpoint.num_to_keep
        )
        loggers.append(mlflow_logger)
    report = ReportCallback(reporter, config.checkpoint.interval, extra=extra_metrics)
    trainer = build_trainer(
        config,
        callbacks=[*callbacks, report],
        loggers=loggers,
        load_path=load_path,
        device=device,
        load_recreate_required_algorithms=recreate_required,
    )
    if tracked is not None:
        tracked.traces = trainer.engine.trace_summary
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
    tracking: Mapping[str, str] | None = None,
    resume_from: Mapping[str, str] | None = None,
    recreate_required: bool = False,
) -> ReportCallback:
    """``run_experiment`` resumed from a Ray checkpoint (Train's or Tune's), or from scratch without one.

    Without a Ray checkpoint, ``resume_from`` (``{"tracking_uri", "reference"}``: an MLflow run's
    checkpoint) is downloaded and trained on from. On the CPU, torch gets as many threads as the
    config gives the process CPUs, not one per core.
    """
    if not config.scaling.use_gpu:
        torch.set_num_threads(max(1, int(config.scaling.cpus_per_worker)))
    run = functools.partial(
        run_experiment,
        config,
        reporter,
        device=device,
        extra_metrics=extra_metrics,
        callbacks=callbacks,
        tracking=tracking,
        recreate_required=recreate_required,
    )
    if checkpoint is not None:
        with checkpoint.as_directory() as folder:
            return run(load_path=os.path.join(folder, CHECKPOINT_FILE))
    if resume_from is not None:
        from raycomp.tracking import download_checkpoint

        with tempfile.TemporaryDirectory(prefix="raycomp-resume-") as folder:
            return run(load_path=download_checkpoint(resume_from["tracking_uri"], resume_from["reference"], folder))
    return run()


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
        tracking=loop_config.get("tracking"),
        resume_from=loop_config.get("resume_from"),
        recreate_required=loop_config.get("recreate_required", False),
    )
