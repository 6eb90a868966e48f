"""The optimizer and learning-rate schedule sections: by name, or any class by ``class_path``/``init_args``.

``optimizer.name`` is one of the common torch optimizers (``OPTIMIZERS``), set by ``lr`` and ``weight_decay``
(and ``momentum``, ``nesterov`` for SGD). ``optimizer.class_path`` names any ``torch.optim`` class or the user's
own, called with the model's parameters and ``init_args`` (LightningCLI's convention); ``lr``, ``momentum``,
``weight_decay`` and ``nesterov`` given beside it are its ``init_args`` of those names, so ``--set optimizer.lr=``
and a sweep of ``optimizer.lr`` mean the same in both forms. A schedule is one of raycomp's by ``name``, or by
``class_path`` a torch ``LRScheduler`` class (called with the optimizer; stepped once per epoch, Composer's rule
for torch schedulers) or a schedule of ``raycomp.core.schedulers`` or the user's (a function of the State that
gives the lr multiplier, stepped every batch).

Each class is imported and its signature checked against ``init_args`` whenever a config is validated, each
problem at its key; the preflight builds both on the model before Ray starts (``config.preflight``). Only the
form in use is written back by ``to_dict``, so a config round-trips and a run's params show what applied.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pydantic import Field, SerializerFunctionWrapHandler, field_validator, model_serializer, model_validator

from raycomp.base.import_path import import_callable
from raycomp.config.messages import Invalid, Problem, one_of
from raycomp.config.sections import Fraction, InitArgs, ProperFraction, Section, TrainTime
from raycomp.config.user_code import argument_problems

# optimizer.name -> the torch.optim class it builds; each takes lr and weight_decay (LBFGS needs a closure, Rprop
# takes no weight decay: name them by class_path)
OPTIMIZERS: dict[str, str] = {
    "sgd": "SGD",
    "adam": "Adam",
    "adamw": "AdamW",
    "rmsprop": "RMSprop",
    "adagrad": "Adagrad",
    "adadelta": "Adadelta",
    "adamax": "Adamax",
    "nadam": "NAdam",
    "radam": "RAdam",
    "asgd": "ASGD",
}
# The named optimizers with a fused CUDA kernel (their ``fused`` argument), which the recipe uses on a GPU
FUSED_OPTIMIZERS = frozenset({"sgd", "adam", "adamw"})
# What torch.optim's own signatures default lr and weight_decay to, for a named optimizer other than the built-in
# recipe's SGD: `optimizer: {name: adam, lr: 0.003}` trains with Adam's weight_decay of 0, as torch would, not with
# the SGD recipe's 5e-4 (tests/config/test_optimizers.py checks the table against torch's signatures).
TORCH_DEFAULTS: dict[str, dict[str, float]] = {
    "adam": {"lr": 1e-3, "weight_decay": 0.0},
    "adamw": {"lr": 1e-3, "weight_decay": 1e-2},
    "rmsprop": {"lr": 1e-2, "weight_decay": 0.0},
    "adagrad": {"lr": 1e-2, "weight_decay": 0.0},
    "adadelta": {"lr": 1.0, "weight_decay": 0.0},
    "adamax": {"lr": 2e-3, "weight_decay": 0.0},
    "nadam": {"lr": 2e-3, "weight_decay": 0.0},
    "radam": {"lr": 1e-3, "weight_decay": 0.0},
    "asgd": {"lr": 1e-2, "weight_decay": 0.0},
}
# The name form's settings: beside a class_path, the class's init_args of the same names.
OPTIMIZER_SHORTHANDS = ("lr", "momentum", "weight_decay", "nesterov")
SCHEDULE_SETTINGS = ("name", "warmup_fraction", "step_size", "gamma")  # the named schedules' only


class OptimizerConfig(Section):
    """The optimizer: ``name`` (``OPTIMIZERS``) with ``lr`` and ``weight_decay``, and ``momentum`` and
    ``nesterov`` for SGD only; or ``class_path``, any ``torch.optim.Optimizer`` class (or a function returning
    one), called with the model's parameters and ``init_args``. The defaults are the built-in recipe's SGD
    (lr 0.05, momentum 0.9, weight_decay 5e-4); another name takes torch's own for what is not set
    (``TORCH_DEFAULTS``)."""

    name: str = "sgd"
    class_path: str | None = Field(None, min_length=1)
    init_args: InitArgs = Field(default_factory=dict)
    lr: float = Field(0.05, gt=0)
    momentum: ProperFraction = 0.9
    weight_decay: float = Field(5e-4, ge=0)
    nesterov: bool = False

    @model_validator(mode="before")
    @classmethod
    def _shorthands_are_init_args(cls, data: Any) -> Any:
        """Beside a ``class_path``, ``lr`` (and the other settings of the name form) go to ``init_args``."""
        if not isinstance(data, Mapping) or data.get("class_path") is None:
            return data
        if "name" in data:
            raise Invalid([(("name",), "give optimizer.name or optimizer.class_path, not both")])
        init_args = data.get("init_args")
        if init_args is not None and not isinstance(init_args, Mapping):
            return data  # reported at init_args by its own check
        given = {key: data[key] for key in OPTIMIZER_SHORTHANDS if key in data}
        rest = {key: value for key, value in data.items() if key not in given}
        return {**rest, "init_args": {**(init_args or {}), **given}} if given else data

    @model_validator(mode="before")
    @classmethod
    def _torch_defaults(cls, data: Any) -> Any:
        """A named optimizer other than SGD starts from torch's defaults, not from the SGD recipe's."""
        if not isinstance(data, Mapping) or data.get("class_path") is not None:
            return data
        return {**TORCH_DEFAULTS.get(data.get("name"), {}), **data}  # type: ignore[arg-type]

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        return one_of(name, tuple(OPTIMIZERS), "optimizer")

    @model_validator(mode="after")
    def _class_imports(self) -> OptimizerConfig:
        if self.class_path is None:
            if self.init_args:
                raise Invalid([(("init_args",), "needs class_path (init_args are the arguments of its class)")])
            return self
        problems = class_problems(self.class_path, self.init_args, "optimizer")
        if problems:
            raise Invalid(problems)
        return self

    @model_validator(mode="after")
    def _nesterov_needs_momentum(self) -> OptimizerConfig:
        if self.class_path is None and self.name == "sgd" and self.nesterov and self.momentum == 0:
            raise Invalid([(("nesterov",), "needs momentum > 0 (set optimizer.momentum, or nesterov: false)")])
        return self

    @model_serializer(mode="wrap")
    def _form_in_use(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _form_in_use(handler(self), self.class_path, ("name", *OPTIMIZER_SHORTHANDS))


class ScheduleConfig(Section):
    """The learning-rate schedule over elapsed training (``raycomp.core.schedulers``), stepped per batch.
    ``warmup_fraction`` is for cosine and linear; ``step_size``, ``gamma`` for step (``step_size`` null: a
    third of the run). Or ``class_path``: a torch ``LRScheduler`` class, called with the optimizer and
    ``init_args`` and stepped once per epoch, or a schedule (``raycomp.core.schedulers.StepScheduler``, or your
    own function of the State), called with ``init_args`` and stepped per batch."""

    name: Literal["constant", "cosine", "linear", "onecycle", "step"] = "onecycle"
    class_path: str | None = Field(None, min_length=1)
    init_args: InitArgs = Field(default_factory=dict)
    warmup_fraction: ProperFraction = 0.0
    step_size: TrainTime | None = None
    gamma: Fraction = 0.1

    @model_validator(mode="before")
    @classmethod
    def _one_form(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and data.get("class_path") is not None:
            given = [key for key in SCHEDULE_SETTINGS if key in data]
            message = "is a setting of the named schedules: give the class's arguments under schedule.init_args"
            if given:
                raise Invalid([((key,), message) for key in given])
        return data

    @model_validator(mode="after")
    def _class_imports(self) -> ScheduleConfig:
        if self.class_path is None:
            if self.init_args:
                raise Invalid([(("init_args",), "needs class_path (init_args are the arguments of its class)")])
            return self
        problems = class_problems(self.class_path, self.init_args, "schedule")
        if problems:
            raise Invalid(problems)
        return self

    @model_serializer(mode="wrap")
    def _form_in_use(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        return _form_in_use(handler(self), self.class_path, SCHEDULE_SETTINGS)


def _form_in_use(data: dict[str, Any], class_path: str | None, name_form: tuple[str, ...]) -> dict[str, Any]:
    """The name form's keys, or ``class_path`` and ``init_args``: never settings that do not apply."""
    dropped = name_form if class_path is not None else ("class_path", "init_args")
    return {key: value for key, value in data.items() if key not in dropped}


def is_torch_scheduler(target: Any) -> bool:
    """A torch ``LRScheduler`` class: built with the optimizer, unlike raycomp's schedules."""
    from torch.optim.lr_scheduler import LRScheduler

    return isinstance(target, type) and issubclass(target, LRScheduler)


def class_problems(
    class_path: str, init_args: Mapping[str, Any], section: Literal["optimizer", "schedule"]
) -> list[Problem]:
    """What is wrong with an optimizer's or a schedule's ``class_path`` and ``init_args`` without calling it: the
    import, a class of another kind, a ``step()`` raycomp cannot call, an argument its signature lacks."""
    try:
        target = import_callable(class_path)
    except ValueError as exc:
        return [(("class_path",), str(exc))]
    import torch

    supplied = None
    if section == "optimizer":
        if isinstance(target, type) and not issubclass(target, torch.optim.Optimizer):
            return [(("class_path",), f"{class_path} is not a torch.optim.Optimizer class")]
        supplied = "the model's parameters"
    elif is_torch_scheduler(target):
        supplied = "the optimizer"
    elif isinstance(target, type) and issubclass(target, torch.optim.Optimizer | torch.nn.Module):
        return [(("class_path",), f"{class_path} is not a learning-rate scheduler")]
    if isinstance(target, type):
        needed = _step_argument(getattr(target, "step", None))
        if needed is not None:
            message = (
                f"{class_path}.step() needs {needed!r}, which raycomp's Trainer does not pass (it steps optimizers "
                "and schedulers without arguments): choose another class"
            )
            return [(("class_path",), message)]
    return argument_problems(target, init_args, section, supplied)


def _step_argument(step: Callable[..., Any] | None) -> str | None:
    """The first argument ``step`` requires beside ``self`` (LBFGS's ``closure``, ReduceLROnPlateau's ``metrics``)."""
    if step is None:
        return None
    try:
        parameters = list(inspect.signature(step).parameters.values())[1:]
    except (TypeError, ValueError):
        return None
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return next((p.name for p in parameters if p.kind in kinds and p.default is inspect.Parameter.empty), None)
