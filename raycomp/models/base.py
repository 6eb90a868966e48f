"""The model interface the Trainer drives, after Composer's ``ComposerModel``.

A model takes the whole batch in ``forward`` and computes its own loss, so the
Trainer (and algorithms such as SelectiveBackprop, which needs per-sample
losses) never has to know what a batch looks like.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

Batch = Any


class RaycompModel(nn.Module, ABC):
    """``forward(batch)`` and ``loss(outputs, batch, reduction)``; override ``num_correct`` for non-classifiers."""

    @abstractmethod
    def forward(self, batch: Batch) -> torch.Tensor: ...

    @abstractmethod
    def loss(self, outputs: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        """The training loss; ``reduction='none'`` must give one loss per sample."""

    def num_correct(self, outputs: torch.Tensor, batch: Batch) -> torch.Tensor:
        """How many samples of the batch the outputs classify correctly (for eval accuracy)."""
        _, targets = batch
        return (outputs.argmax(dim=-1) == targets).sum()


class ClassifierModel(RaycompModel):
    """Wraps a plain ``nn.Module`` that maps inputs to logits, for ``(input, target)`` batches."""

    def __init__(
        self,
        module: nn.Module,
        loss_fn: Callable[..., torch.Tensor] = nn.functional.cross_entropy,
    ) -> None:
        super().__init__()
        self.module = module
        self.loss_fn = loss_fn

    def forward(self, batch: Batch) -> torch.Tensor:
        inputs, _ = batch
        return self.module(inputs)

    def loss(self, outputs: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        _, targets = batch
        return self.loss_fn(outputs, targets, reduction=reduction)
