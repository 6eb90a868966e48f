"""ChannelsLast: store the model's 4-D weights in NHWC order, which fast GPU convolution kernels want.

cuDNN's Tensor Core convolutions run in NHWC; given NCHW tensors, every convolution pays for a
transpose on the way in and out. Converting the weights once is enough: a convolution whose weight is
channels-last returns a channels-last output, so the layout propagates through the network from the
first layer on (inputs may stay NCHW). Only 4-D tensors change; the values do not, so the model computes
the same function, and the Parameters keep their identity, so optimizers built before the change stay
valid. On the CPU it can matter too: torch's CPU max-pooling and BatchNorm kernels are faster on it, and the
built-in SmallCNN trains faster per epoch (docs/methods/channels_last.md has the figures).

Runs on INIT, before the Trainer moves the model to its device (``.to(device)`` keeps the layout).
"""

from __future__ import annotations

from typing import Any, ClassVar

import torch
from torch import nn

from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def apply_channels_last(model: nn.Module) -> nn.Module:
    """Convert ``model``'s 4-D parameters and buffers to ``torch.channels_last`` in place; returns ``model``."""
    return model.to(memory_format=torch.channels_last)


class ChannelsLast(Algorithm):
    """Converts the model to the channels-last memory format on INIT."""

    workload_arguments: ClassVar[frozenset[str] | None] = frozenset()

    def __init__(self) -> None:
        pass

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """Only 4-D weights change: a model without convolutions would train exactly as without it."""
        if any(parameter.dim() == 4 for parameter in model.parameters()):
            return None
        return Inapplicable("the model has no 4-D weights (convolutions) to store channels-last")

    def match(self, event: Event, state: State) -> bool:
        return event is Event.INIT

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        apply_channels_last(state.model)
