"""The optimizer and learning-rate schedule a config's ``optimizer`` and ``schedule`` sections describe, built
(``raycomp.config.optimization`` declares and checks the sections; the recipe and the preflight build them here).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from raycomp.config import ExperimentConfig
from raycomp.config.optimization import FUSED_OPTIMIZERS, OPTIMIZERS, is_torch_scheduler
from raycomp.core import Time, TimeUnit
from raycomp.core.schedulers import (
    ComposerScheduler,
    CosineAnnealingWithWarmupScheduler,
    LinearWithWarmupScheduler,
    OneCycleScheduler,
    StepScheduler,
)


def build_optimizer(config: ExperimentConfig, model: torch.nn.Module, fused: bool = False) -> torch.optim.Optimizer:
    """The config's optimizer over ``model``'s parameters: a named torch optimizer, or ``class_path``'s.

    ``fused`` (a CUDA run): SGD, Adam and AdamW by name take torch's ``fused`` update, fewer kernels than its default
    (``foreach``) and by its docs the fastest; torchtitan made it its default. A ``class_path`` optimizer is built
    as its ``init_args`` say.
    """
    section = config.optimizer
    if section.class_path is not None:
        from raycomp.base.import_path import import_callable

        built = import_callable(section.class_path)(model.parameters(), **section.init_args)
        if not isinstance(built, torch.optim.Optimizer):
            raise TypeError(f"{section.class_path} returned a {type(built).__name__}, not a torch.optim.Optimizer")
        return built
    kernel = {"fused": True} if fused and section.name in FUSED_OPTIMIZERS else {}
    if section.name == "sgd":
        built = torch.optim.SGD(
            model.parameters(),
            lr=section.lr,
            momentum=section.momentum,
            weight_decay=section.weight_decay,
            nesterov=section.nesterov,
            **kernel,
        )
    else:
        optimizer_class = getattr(torch.optim, OPTIMIZERS[section.name])
        built = optimizer_class(model.parameters(), lr=section.lr, weight_decay=section.weight_decay, **kernel)
    built.register_load_state_dict_post_hook(_keeps_its_update)
    return built


def _keeps_its_update(optimizer: torch.optim.Optimizer) -> None:
    """After a checkpoint's state is loaded, the update kernel the optimizer was built with again. torch's
    ``load_state_dict`` takes the saved groups' ``fused`` and ``foreach`` for the optimizer's own: a run saved
    unfused (on a CPU, or before issue 58) and resumed on a GPU would lose its fused kernel, and under fp16's
    GradScaler fail at its first step (the foreach update refuses the scaler's inf check); one saved fused on a GPU
    and resumed on a CPU would go on fused there, unlike the CPU's recipe. The fused update counts steps on the
    parameter's device."""
    for group in optimizer.param_groups:
        for key in ("fused", "foreach"):
            if key in optimizer.defaults:
                group[key] = optimizer.defaults[key]
        if not group.get("fused"):
            continue
        for parameter in group["params"]:
            state = optimizer.state.get(parameter, {})
            if torch.is_tensor(state.get("step")):
                state["step"] = state["step"].to(parameter.device, torch.float32)


def build_scheduler(
    config: ExperimentConfig, optimizer: torch.optim.Optimizer | None = None
) -> ComposerScheduler | LRScheduler | None:
    """The config's schedule: one of raycomp's over elapsed training (``raycomp.core.schedulers``), stepped by the
    Trainer per batch, or ``class_path``'s: a torch scheduler of ``optimizer`` (stepped per epoch) or a schedule.

    Defined over fractions of ``max_duration``, raycomp's stay right when a resumed run is given a longer one.
    """
    schedule = config.schedule
    if schedule.class_path is not None:
        return _class_schedule(schedule.class_path, schedule.init_args, optimizer)
    if schedule.name == "constant":
        return None
    if schedule.name == "onecycle":
        return OneCycleScheduler()
    if schedule.name == "step":
        # No step_size: a third of the run, so gamma applies at one and two thirds of training, a classic
        # two-drop schedule fitted to any run length.
        return StepScheduler(schedule.step_size or Time(1 / 3, TimeUnit.DURATION), gamma=schedule.gamma)
    warmup = Time(schedule.warmup_fraction, TimeUnit.DURATION)
    if schedule.name == "linear":
        return LinearWithWarmupScheduler(warmup)
    return CosineAnnealingWithWarmupScheduler(warmup)


def _class_schedule(
    class_path: str, init_args: Mapping[str, Any], optimizer: torch.optim.Optimizer | None
) -> ComposerScheduler | LRScheduler:
    """A torch ``LRScheduler`` class called with ``optimizer``, or a schedule (a callable of the State)."""
    from raycomp.base.import_path import import_callable

    target = import_callable(class_path)
    if is_torch_scheduler(target):
        if optimizer is None:
            raise ValueError(f"{class_path} is a torch scheduler: it is built with the optimizer it drives")
        return target(optimizer, **init_args)
    built = target(**init_args)
    if isinstance(built, LRScheduler) or not callable(built):
        raise TypeError(
            f"{class_path} returned a {type(built).__name__}: a schedule class_path names a torch LRScheduler class, "
            "or a schedule, a callable of the State giving the lr multiplier (raycomp.core.schedulers)"
        )
    return built
