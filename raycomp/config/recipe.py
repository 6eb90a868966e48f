"""The recipe: from a validated experiment config to a ready Trainer (data, model, optimizer, schedule, algorithms).

Used by every Ray worker and by anyone who wants a config's run in their own process. It imports neither
Ray nor MLflow: what a run reports to is passed in as callbacks and loggers, so the recipe a trial runs
can be built and tested on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import DataLoader

from raycomp.algorithms.registry import build_algorithm
from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.config.optimization_recipe import build_optimizer, build_scheduler
from raycomp.config.trial import budget_duration
from raycomp.core import Algorithm, Callback, Evaluator, LoggerDestination, Time
from raycomp.data import build_dataloader, build_datasets
from raycomp.data.loaders import train_share, world_and_rank
from raycomp.loop.distributed import resolve_device
from raycomp.loop.trainer import Trainer
from raycomp.models import LANGUAGE_MODEL_NAMES, GPTConfig, RaycompModel, build_model, build_user_model


def build_algorithms(config: ExperimentConfig) -> list[Algorithm]:
    """The config's algorithms, in its order, each built once from its validated arguments."""
    return [build_algorithm(name, arguments) for name, arguments in config.algorithms.items()]


def data_seed(config: ExperimentConfig) -> int:
    """The synthetic data's seed: its own, else the experiment's (a sweep's repeats share one data set)."""
    return config.seed if config.data.seed is None else config.data.seed


def build_loaders(config: ExperimentConfig, pin_memory: bool = False) -> tuple[DataLoader, DataLoader]:
    """``(train, eval)`` loaders of this rank: a built-in dataset or the user's (``data.class_path``).

    Datasets, built-in or the user's, go through ``build_dataloader`` (seeded order, sharded across DDP
    workers; ``pin_memory`` for a CUDA run); a user's data module's loaders are used as they are, sharded under
    DDP (``raycomp.data.user_data``).
    """
    data = config.data
    if data.class_path is not None:
        from raycomp.data.user_data import call_user_data, module_loaders

        user = call_user_data(data.class_path, data.init_args)
        if user.datasets is None:
            if data.train_fraction != 1:  # its loaders are used as they are (find.proxy's check refuses it first)
                raise ValueError(f"data.train_fraction needs datasets; {data.class_path} gives a data module")
            world, rank = world_and_rank()
            return module_loaders(user.module, world, rank, config.seed)
        train_set, test_set = user.datasets
    elif data.name == "hf_dataset":
        from raycomp.data.hf_dataset import hf_datasets

        train_set, test_set = hf_datasets(
            str(data.root), data.train_split, data.eval_split, data.input_column, data.label_column,
            data.image_size, data.seq_len,
        )  # fmt: skip
    else:
        train_set, test_set = build_datasets(
            data.name, root=data.root, num_train=data.num_train, num_test=data.num_test, seed=data_seed(config),
            seq_len=data.seq_len, max_bytes=data.max_bytes, image_size=data.image_size,
        )  # fmt: skip
    if data.train_fraction != 1:
        train_set = train_share(train_set, data.train_fraction, data_seed(config))
    train_loader = build_dataloader(
        train_set,
        data.batch_size,
        seed=config.seed,
        num_workers=data.num_workers,
        drop_last=config.compile is not False,  # compiled with static shapes: every training batch full
        pin_memory=pin_memory,
    )
    eval_loader = build_dataloader(
        test_set, data.eval_batch_size, shuffle=False, num_workers=data.num_workers, pin_memory=pin_memory
    )
    return train_loader, eval_loader


def build_trainer(
    config: ExperimentConfig,
    *,
    callbacks: Sequence[Callback] = (),
    loggers: Sequence[LoggerDestination] = (),
    load_path: str | Path | None = None,
    device: str | torch.device = "auto",
    recreate_required: bool = False,
    progress_bar: bool | None = False,
    save_folder: str | Path | None = None,
    budget: float | None = None,
) -> Trainer:
    """The Trainer a config describes; under a process group each rank gets its shard of the data.

    ``recreate_required`` re-creates the ``required_on_load`` algorithms a checkpoint at ``load_path`` was
    trained with but the config lacks (the Trainer's ``load_recreate_required_algorithms``).
    ``progress_bar=None`` shows one on a terminal; ``save_folder`` adds the Trainer's own CheckpointSaver.
    ``budget`` (a frontier trial's ``config.trial.worker_budget``) trains that fraction of ``max_duration`` in the
    steps this rank's train loader really takes, which only this process can count.
    """
    on_gpu = resolve_device(device).type == "cuda"  # batches in pinned memory, a fused optimizer step
    train_loader, eval_loader = build_loaders(config, pin_memory=on_gpu)
    max_duration = config.max_duration if budget is None else budget_steps(config.max_duration, budget, train_loader)
    torch.manual_seed(config.seed)  # the same initial weights on every rank and every retry
    model = build_model_for(config)
    optimizer = build_optimizer(config, model, fused=on_gpu)
    scheduler = build_scheduler(config, optimizer)
    if config.profile is not None:  # first, so that at FIT_END its trace is written before others read it
        from raycomp.loop.profiling import TorchProfiler

        folder = Path(save_folder or config.layout.run_dir) / "profile"
        profile = config.profile
        callbacks = [TorchProfiler(folder, wait=profile.wait, warmup=profile.warmup, active=profile.active), *callbacks]
    return Trainer(
        model,
        train_loader,
        max_duration,
        eval_dataloader=Evaluator(keys.EVAL_LABEL, eval_loader, metrics=config.build_eval_metrics()),
        algorithms=build_algorithms(config),
        callbacks=callbacks,
        optimizers=optimizer,
        schedulers=scheduler,
        precision=config.precision,
        grad_accum=config.grad_accum,
        device=device,
        seed=config.seed,
        eval_interval=config.eval.interval,
        recompute_batchnorm=config.eval.recompute_batchnorm,
        save_folder=save_folder,
        save_interval=config.checkpoint.interval,
        save_num_checkpoints_to_keep=config.checkpoint.num_to_keep or -1,
        load_path=load_path,
        load_recreate_required_algorithms=recreate_required,
        progress_bar=progress_bar,
        loggers=loggers,
        compile=config.compile,
    )


def budget_steps(duration: Time, budget: float, train_loader: Any) -> Time:
    """``budget`` of ``duration`` as ``budget_duration`` counts it with ``train_loader``'s length (its batches an
    epoch on this rank, as the baseline steps through them); every rank's loader has one length (DDP's sampler
    pads), so every rank stops at the same step."""
    try:
        steps_per_epoch = len(train_loader)
    except TypeError:
        steps_per_epoch = None
    resolved = budget_duration(duration, budget, steps_per_epoch)
    if resolved is None:
        raise ValueError(
            f"a frontier budget of {budget:g} x {duration} needs the number of batches in an epoch, and the train "
            "loader has no length: give max_duration in batches, or budgets that keep whole epochs"
        )
    return resolved


def build_model_for(config: ExperimentConfig) -> RaycompModel:
    """The model ``config`` describes: its ``model`` section, with ``data.seq_len`` for a language model."""
    model = config.model
    if model.class_path is not None:
        return build_user_model(model.class_path, model.init_args)
    if model.name not in LANGUAGE_MODEL_NAMES:
        return build_model(model.name, num_classes=model.num_classes)
    from raycomp.data import VOCAB_SIZE

    gpt = GPTConfig(
        vocab_size=VOCAB_SIZE,
        seq_len=config.data.seq_len,
        d_model=model.d_model,
        n_layers=model.n_layers,
        n_heads=model.n_heads,
        dropout=model.dropout,
    )
    return build_model(model.name, gpt=gpt)
