"""What one training process runs: a ``TrialSpec`` -> Trainer with an ``EvalReportCallback`` -> fit.

``train_loop_per_worker`` is the Ray Train per-worker function (the lines that touch Ray are marked
[1]-[4], as in Ray's own examples); ``run_in_process`` is the same recipe in any process (a local-mode
Tune trial, a local run). Both go through ``_run``. Ray has set up the process group before
``train_loop_per_worker`` runs; raycomp's Trainer wraps the model in DDP itself, after INIT, so model
surgery precedes DDP.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from raycomp.base import keys
from raycomp.base.collector import collector_paused, resume_collector
from raycomp.base.layout import is_uri
from raycomp.base.scratch import scratch_folder
from raycomp.config.recipe import build_trainer
from raycomp.launch.checkpoint_fit import check_fits
from raycomp.launch.eval_report import EvalReportCallback
from raycomp.launch.sinks import FolderSink, HistorySink, ResultSink, StoredHistorySink, TrainSink
from raycomp.launch.spec import TrialSpec
from raycomp.loop import checkpoint
from raycomp.loop.batching import stop_workers

SPEC = "spec"  # the one key of the TorchTrainer's train_loop_config


def train_loop_per_worker(loop_config: dict[str, TrialSpec]) -> None:
    """The Ray Train per-worker function: one raycomp Trainer on this worker's shard, DDP across workers."""
    import ray.train
    import ray.train.torch

    with collector_paused():  # the worker group's process: resumed once its Trainer is built (base/collector.py)
        spec = loop_config[SPEC]
        world_size = ray.train.get_context().get_world_size()  # [1] this worker's group
        device = ray.train.torch.get_device() if spec.config.scaling.use_gpu else torch.device("cpu")  # [2] its GPU
        with _ray_checkpoint(ray.train.get_checkpoint()) as restored:  # [3] a restarted group's checkpoint
            _run(spec.with_metrics(workers=world_size), TrainSink(), restored, device)  # [4] results: ray.train.report


def run_in_process(
    spec: TrialSpec, sink: ResultSink, ray_checkpoint: Any = None, *, load_path: Path | None = None
) -> EvalReportCallback:
    """The recipe in this process (no worker group): a local-mode Tune trial or a local run.

    ``ray_checkpoint`` is Tune's checkpoint of a restored trial; ``load_path`` a local checkpoint file.
    """
    device = torch.device("cuda" if spec.config.scaling.use_gpu else "cpu")
    with _ray_checkpoint(ray_checkpoint) as restored:
        return _run(spec.with_metrics(workers=0), sink, restored or load_path, device)


def run_locally(spec: TrialSpec, local_copy: Path | None = None) -> dict[str, Any]:
    """A run with no Ray at all (``raycomp.train``, ``num_workers: 0``), its checkpoints kept in its folder.

    Resumes from the newest kept checkpoint that loads and fits the config (a damaged newer one is
    skipped with a warning naming it), else from ``local_copy`` (``--resume-from``'s download), else
    from scratch. Returns the last result's metrics.
    """
    config = spec.config
    sink = FolderSink(checkpoint.KeptCheckpoints(config.layout.run_dir, config.checkpoint.num_to_keep))
    load_path = sink.checkpoints.newest_loadable(lambda path: check_fits(config, path, spec.recreate_required))
    if load_path is not None:
        print(f"resuming from {load_path}", flush=True)
    elif local_copy is not None:
        load_path = local_copy
        print(f"starting from {spec.resume_from.reference if spec.resume_from else local_copy}", flush=True)
    run_in_process(spec, sink, load_path=load_path)
    return sink.history[-1]


def _run(spec: TrialSpec, sink: ResultSink, restored: Path | None, device: torch.device) -> EvalReportCallback:
    """Trains ``spec`` to its max_duration from ``restored`` (else ``spec.resume_from``, else scratch)."""
    config = spec.config
    if device.type == "cpu":  # as many torch threads as the config gives the process CPUs, not one per core
        torch.set_num_threads(max(1, int(config.scaling.cpus_per_worker)))
    sinks: list[ResultSink] = []
    loggers: list[Any] = []
    metrics = dict(spec.fixed_metrics)
    if spec.run is not None and _is_rank_zero():
        from raycomp.tracking import MlflowCallback

        spill = None if is_uri(config.layout.storage) else config.layout.unsent_metrics(spec.run.run_id)
        tracking = MlflowCallback(
            spec.run, metric=spec.metric, mode=spec.mode, num_to_keep=config.checkpoint.num_to_keep, spill_file=spill
        )
        sinks.append(tracking)  # first: a trial Tune stops at a result has logged it already
        loggers.append(tracking)  # every step's metrics; as a callback it flushes at the end of fit
        metrics[keys.MLFLOW_RUN_ID] = spec.run.run_id
    if spec.history is not None and _is_rank_zero():  # before Ray's sink: kept before the driver hears of it
        sinks.append(HistorySink(spec.history) if isinstance(spec.history, Path) else StoredHistorySink(spec.history))
    results = EvalReportCallback([*sinks, sink], config.checkpoint.interval, metrics)
    with _load_path(spec, restored) as load_path:
        trainer = build_trainer(
            config,
            callbacks=[*spec.callbacks, *loggers, results],
            loggers=loggers,
            load_path=load_path,
            device=device,
            recreate_required=spec.recreate_required,
            budget=spec.budget,
        )
    if load_path is not None:
        results.fixed_metrics[keys.RESUMED_FROM_STEP] = trainer.state.timestamp.batch
    resume_collector()  # start-up is over: what it made stays as long as the process (base/collector.py)
    try:
        if trainer.state.timestamp.reached(trainer.state.max_duration):
            trainer.evaluate()  # resumed after the end: report once more, so the caller always gets a final result
        else:
            trainer.fit()
    finally:  # a reused Tune actor must not carry this run's DataLoader workers into the next trial
        stop_workers([trainer.state.train_dataloader, *(e.dataloader for e in trainer.state.evaluators)])
    return results


@contextlib.contextmanager
def _ray_checkpoint(ray_checkpoint: Any) -> Iterator[Path | None]:
    """The checkpoint file of a Ray Train or Tune checkpoint (restored trial or restarted worker group)."""
    if ray_checkpoint is None:
        yield None
        return
    with ray_checkpoint.as_directory() as folder:
        yield checkpoint.file_in(folder)


@contextlib.contextmanager
def _load_path(spec: TrialSpec, restored: Path | None) -> Iterator[Path | None]:
    """What to load: the run's own checkpoint, else ``--resume-from``'s (downloaded here), else nothing."""
    if restored is not None or spec.resume_from is None:
        yield restored
        return
    from raycomp.tracking import download_checkpoint

    with scratch_folder("raycomp-resume-") as folder:
        source = spec.resume_from
        yield download_checkpoint(source.tracking_uri, source.reference, folder)


def _is_rank_zero() -> bool:
    return not (dist.is_available() and dist.is_initialized() and dist.get_rank() != 0)
