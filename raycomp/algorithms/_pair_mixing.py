"""The target and loss handling MixUp and CutMix share; they differ only in how they mix the inputs.

BEFORE_FORWARD mixes each example with ``input[indices]``. Then either BEFORE_LOSS replaces the targets with
soft targets weighted like the mix and AFTER_LOSS restores them, or (``interpolate_loss``) AFTER_LOSS replaces
the loss by ``(1 - weight) * loss + weight * loss(outputs, target[indices])``. The permuted targets are taken
from the batch when needed, so targets LabelSmoothing smoothed are permuted smoothed.
"""

from __future__ import annotations

from abc import abstractmethod

import torch

from raycomp.algorithms._targets import ensure_targets_one_hot
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.precision import autocast
from raycomp.core.state import State


class _PairMixing(Algorithm):
    """Mixes each example with ``input[indices]`` on BEFORE_FORWARD, then makes the loss credit both targets.

    Subclasses implement ``mix`` and set ``interpolate_loss``; the base keeps ``indices`` and
    ``permuted_weight`` (the weight of the permuted example) from BEFORE_FORWARD for the loss events.
    """

    interpolate_loss: bool

    def _init_mixing(self, interpolate_loss: bool) -> None:
        self.interpolate_loss = interpolate_loss
        self.indices: torch.Tensor | None = None
        self.permuted_weight = 0.0
        self._original_target: torch.Tensor | None = None

    @abstractmethod
    def mix(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        """The mixed input, the permutation used, and the weight of the permuted example in the mix."""

    def match(self, event: Event, state: State) -> bool:
        if event is Event.BEFORE_LOSS:
            return not self.interpolate_loss
        return event in (Event.BEFORE_FORWARD, Event.AFTER_LOSS)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        input, target = state.batch_pair
        if event is Event.BEFORE_FORWARD:
            mixed, self.indices, self.permuted_weight = self.mix(input, target)
            state.batch = type(state.batch)((mixed, target))
            return
        if self.indices is None:
            raise RuntimeError(f"{type(self).__name__} ran at {event.value} without mixing on before_forward first")
        permuted = target[self.indices.to(target.device)]
        weight = self.permuted_weight
        if event is Event.BEFORE_LOSS:
            logits = state.outputs
            if not isinstance(logits, torch.Tensor):
                raise TypeError(f"{type(self).__name__} needs the logits in state.outputs, got {type(logits).__name__}")
            self._original_target = target
            soft = (1 - weight) * ensure_targets_one_hot(logits, target) + weight * ensure_targets_one_hot(
                logits, permuted
            )
            state.batch = type(state.batch)((input, soft))
        elif self.interpolate_loss:
            with autocast(state.precision, state.device):
                permuted_loss = state.model.loss(state.outputs, type(state.batch)((input, permuted)))
            state.loss = (1 - weight) * state.loss + weight * permuted_loss
        elif self._original_target is not None:
            state.batch = type(state.batch)((input, self._original_target))
            self._original_target = None
