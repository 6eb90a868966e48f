"""LayerFreezing (FreezeOut, Brock et al. 2017; Freeze Training, Raghu et al. 2017): stop training the early
layers once they have settled, which saves their backward pass and optimizer update late in training.

Early layers converge first. From ``freeze_start`` (a fraction of training) on, after every batch, the first
``int(fraction * (L - 1))`` of the model's ``L`` parameterised leaf layers are frozen, the fraction growing
linearly to ``freeze_level`` at the end of training; the last layer (the head) never freezes. Composer freezes
on epoch ends only, so its layers freeze at the first epoch boundary past their point of the schedule (and a
run of one epoch never freezes); here a layer freezes after the batch at which the schedule reaches it. A frozen
parameter gets ``requires_grad=False`` and leaves its optimizers' param groups, as in Composer, so no
momentum or weight decay moves it either. Layers only ever freeze; none thaws.

Differences from Composer, which warns that its checkpoints cannot resume (composer issue 1002):
- The optimizer's state for a frozen parameter (its momentum) is dropped with it. Composer left it, and
  ``optimizer.state_dict()`` then fails with a KeyError, as the state names a parameter no group holds.
- The number of frozen layers is checkpointed. A fit resumed from a checkpoint freezes the same layers again
  on BEFORE_LOAD, before the optimizers' saved state (which lacks those parameters) is loaded into them.
  Since such a checkpoint cannot be loaded without it, ``required_on_load()`` is True.

Frozen parameters stop receiving gradients after DDP has been built, so ``find_unused_parameters`` is True.
BatchNorm layers that freeze keep updating their running statistics, as in Composer. That is not a bias: their
inputs come from layers that no longer change, every training batch is a full unpruned one, so the running
statistics keep tracking exactly what evaluation feeds them (measured in docs/methods/layer_freezing.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field
from torch import nn

from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def freeze_layers(
    model: nn.Module,
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer],
    current_duration: float,
    freeze_start: float = 0.5,
    freeze_level: float = 1.0,
) -> tuple[int, float]:
    """Freeze the first layers of ``model`` for ``current_duration`` (the fraction of training done).

    Returns the number of layers frozen and the fraction of freezable layers (all but the last) this is.
    Layers already frozen stay frozen.
    """
    fraction = _freeze_schedule(current_duration, freeze_start, freeze_level)
    layers = freezable_layers(model)
    depth = int(fraction * len(layers))
    freeze_first_layers(model, optimizers, depth)
    return depth, fraction


def freezable_layers(model: nn.Module) -> list[nn.Module]:
    """The leaf modules that hold parameters, depth-first in definition order, without the last one."""
    layers = [m for m in model.modules() if next(m.children(), None) is None and next(m.parameters(), None) is not None]
    return layers[:-1]


def freeze_first_layers(
    model: nn.Module, optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer], num_layers: int
) -> None:
    """Freeze the first ``num_layers`` freezable layers: no gradients, out of the optimizers, state dropped."""
    frozen = {id(p): p for layer in freezable_layers(model)[:num_layers] for p in layer.parameters()}
    for param in frozen.values():
        param.requires_grad_(False)
        param.grad = None
    for optimizer in [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else optimizers:
        for group in optimizer.param_groups:
            group["params"] = [p for p in group["params"] if id(p) not in frozen]
        for param in frozen.values():
            optimizer.state.pop(param, None)  # else optimizer.state_dict() fails on a param no group holds


def _freeze_schedule(current_duration: float, freeze_start: float, freeze_level: float) -> float:
    """0 until ``freeze_start``, then linear, reaching ``freeze_level`` at the end of training."""
    if current_duration <= freeze_start:
        return 0.0
    return freeze_level * (current_duration - freeze_start) / (1.0 - freeze_start)


class LayerFreezing(Algorithm):
    """Freezes the model's first layers progressively on BATCH_END, and again on BEFORE_LOAD when resuming.

    ``num_frozen_layers`` is how many layers are frozen; it is the state a checkpoint keeps. The layers are
    frozen, and the metrics logged, only on the batches where that number grows.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"freeze_start": (0.5, 0.7), "freeze_level": (0.5, 1.0)}

    @checked_arguments
    def __init__(
        self,
        freeze_start: Annotated[float, Field(ge=0, lt=1)] = 0.5,
        freeze_level: Annotated[float, Field(ge=0, le=1)] = 1.0,
    ) -> None:
        self.freeze_start = freeze_start
        self.freeze_level = freeze_level
        self.num_frozen_layers = 0

    @property
    def find_unused_parameters(self) -> bool:
        return True

    @staticmethod
    def required_on_load() -> bool:
        return True

    def match(self, event: Event, state: State) -> bool:
        return event is Event.BATCH_END or (event is Event.BEFORE_LOAD and self.num_frozen_layers > 0)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        if event is Event.BEFORE_LOAD:  # resuming: the checkpoint's optimizers were saved without these params
            freeze_first_layers(state.model, state.optimizers, self.num_frozen_layers)
            return
        fraction = _freeze_schedule(state.get_elapsed_duration().value, self.freeze_start, self.freeze_level)
        depth = int(fraction * len(freezable_layers(state.model))) if fraction else 0
        if depth <= self.num_frozen_layers:  # most batches: nothing new to freeze
            return
        freeze_first_layers(state.model, state.optimizers, depth)
        self.num_frozen_layers = depth
        logger.log_metrics(
            {"layer_freezing/layers_frozen": self.num_frozen_layers, "layer_freezing/percentage_frozen": fraction},
            state.step,
        )

    def state_dict(self) -> dict[str, Any]:
        return {"num_frozen_layers": self.num_frozen_layers}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.num_frozen_layers = int(state["num_frozen_layers"])
