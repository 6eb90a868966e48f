"""GradientClipping: bound the gradients before each optimizer step, so one bad batch cannot throw the
weights far (loss spikes, divergence at high learning rates).

Three kinds, as in Composer:
- ``'norm'``: scale all gradients together so that their global L2 norm is at most the threshold
  (``torch.nn.utils.clip_grad_norm_``); the direction of the update is kept.
- ``'value'``: clamp each gradient element to ``[-threshold, threshold]`` (``clip_grad_value_``).
- ``'adaptive'`` (AGC, Brock et al. 2021): scale each unit's gradient (a row of a weight: one output
  neuron or filter) so that its norm is at most ``threshold`` times that unit's weight norm; small
  weights get small updates, whatever the scale of the layer. Weight norms are floored at 1e-3, as in
  the paper; Composer has no floor, so a zero-initialised bias gets its gradient zeroed and never trains.

Runs on AFTER_TRAIN_BATCH: after every microbatch's backward (so it clips the accumulated, DDP-averaged
gradient, identical on every rank) and before the optimizer step. Under fp16 AMP the Trainer unscales the
gradients before AFTER_TRAIN_BATCH, so the threshold applies to the true gradients, not the scaled ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, get_args

import torch
from pydantic import Field
from torch import nn

from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

ClippingType = Literal["norm", "value", "adaptive"]
CLIPPING_TYPES: tuple[str, ...] = get_args(ClippingType)
AGC_EPS = 1e-3  # the floor on a unit's weight norm (Brock et al. 2021)


def apply_gradient_clipping(model: nn.Module, clipping_type: str, clipping_threshold: float) -> None:
    """Clip the gradients of ``model``'s parameters in place (see the module docstring for the kinds)."""
    parameters = [p for p in model.parameters() if p.grad is not None]
    if clipping_type == "norm":
        torch.nn.utils.clip_grad_norm_(parameters, max_norm=clipping_threshold)
    elif clipping_type == "value":
        torch.nn.utils.clip_grad_value_(parameters, clip_value=clipping_threshold)
    elif clipping_type == "adaptive":
        _apply_agc(parameters, clipping_threshold)
    else:
        raise ValueError(f"clipping_type must be one of {', '.join(map(repr, CLIPPING_TYPES))}, got {clipping_type!r}")


def _apply_agc(parameters: list[nn.Parameter], clipping_threshold: float) -> None:
    """Scale each unit's gradient down to ``clipping_threshold * max(||unit weights||, AGC_EPS)`` where larger."""
    for param in parameters:
        weights, grad = param.detach(), param.grad.detach()
        max_norm = _unitwise_norm(weights).clamp_(min=AGC_EPS).mul_(clipping_threshold)
        coefficient = max_norm.div_(_unitwise_norm(grad)).nan_to_num_(nan=1.0).clamp_(max=1.0)
        grad.mul_(coefficient)


def _unitwise_norm(tensor: torch.Tensor) -> torch.Tensor:
    """L2 norm per output unit: over everything for scalars and biases, over all but dim 0 otherwise."""
    if tensor.dim() <= 1:
        return torch.linalg.vector_norm(tensor, 2)
    return torch.linalg.vector_norm(tensor, 2, dim=tuple(range(1, tensor.dim())), keepdim=True)


class GradientClipping(Algorithm):
    """Clips the gradients on AFTER_TRAIN_BATCH, between the last backward pass and the optimizer step."""

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"clipping_threshold": (0.5, 1.0, 2.0)}

    @checked_arguments
    def __init__(
        self,
        clipping_type: ClippingType = "norm",
        clipping_threshold: Annotated[float, Field(gt=0, allow_inf_nan=False)] = 1.0,
    ) -> None:
        self.clipping_type = clipping_type
        self.clipping_threshold = clipping_threshold

    def match(self, event: Event, state: State) -> bool:
        return event is Event.AFTER_TRAIN_BATCH

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        apply_gradient_clipping(state.model, self.clipping_type, self.clipping_threshold)
