"""LabelSmoothing (Szegedy et al. 2016): train on targets that keep some probability off the true class.

A one-hot target pushes the true logit towards infinity; mixing it with the uniform distribution,
``(1 - smoothing) * one_hot + smoothing / num_classes``, bounds the logits the loss asks for, which
regularises the network and keeps its confidence calibrated.

The targets are smoothed on BEFORE_LOSS and the originals put back on AFTER_LOSS, so nothing after the
loss (metrics, callbacks, the next microbatch) sees smoothed targets. The FILO pass makes nested target
changes unwind in order: with ``[LabelSmoothing, MixUp]`` MixUp mixes the smoothed targets and restores
them before LabelSmoothing restores the originals.

The loss must accept class probabilities as targets: ``F.cross_entropy`` (every ``ClassifierModel``'s
default) does. ``ensure_targets_one_hot`` (``raycomp.algorithms._targets``) is shared with MixUp and CutMix.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from raycomp.algorithms._targets import ensure_targets_one_hot
from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def smooth_labels(logits: torch.Tensor, target: torch.Tensor, smoothing: float = 0.1) -> torch.Tensor:
    """``(1 - smoothing) * one_hot(target) + smoothing / num_classes``, with classes on ``logits``' dim 1.

    ``target`` may be class indices or already probabilities (then they are smoothed further).
    """
    if not 0 <= smoothing < 1:
        raise ValueError(f"smoothing must be in [0, 1), got {smoothing}")
    return ensure_targets_one_hot(logits, target) * (1.0 - smoothing) + smoothing / logits.shape[1]


class LabelSmoothing(Algorithm):
    """Smooths the targets on BEFORE_LOSS and restores the originals on AFTER_LOSS.

    ``smoothing`` is the probability mass spread uniformly over all classes (0 turns it off).
    The batch must be an ``(input, target)`` pair and ``state.outputs`` the logits.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"smoothing": (0.05, 0.1, 0.2)}

    @checked_arguments
    def __init__(self, smoothing: Annotated[float, Field(ge=0, lt=1)] = 0.1) -> None:
        self.smoothing = smoothing
        self._original_target: torch.Tensor | None = None

    def match(self, event: Event, state: State) -> bool:
        return event in (Event.BEFORE_LOSS, Event.AFTER_LOSS)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        input, target = state.batch_pair
        if event is Event.BEFORE_LOSS:
            if not isinstance(state.outputs, torch.Tensor):
                raise TypeError(f"LabelSmoothing needs the logits in state.outputs, got {type(state.outputs).__name__}")
            self._original_target = target
            state.batch = type(state.batch)((input, smooth_labels(state.outputs, target, self.smoothing)))
        elif self._original_target is not None:
            state.batch = type(state.batch)((input, self._original_target))
            self._original_target = None
