"""The model interface the Trainer drives, after Composer's ``ComposerModel``.

A model takes the whole batch in ``forward`` and computes its own loss, so the
Trainer (and algorithms such as SelectiveBackprop, which needs per-sample
losses) never has to know what a batch looks like.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from raycomp.core.evaluator import named_metrics
from raycomp.models.outputs import logits_of

if TYPE_CHECKING:
    from torchmetrics import Metric

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

    def get_metrics(self, is_train: bool = False) -> dict[str, Metric]:
        """The torchmetrics an ``Evaluator`` picks from by ``metric_names`` (Composer's ``get_metrics``).

        None by default: loss and accuracy are always computed without torchmetrics. raycomp computes no
        metrics during training, so ``is_train=True`` is never asked for.
        """
        return {}

    def update_metric(self, batch: Batch, outputs: torch.Tensor, metric: Metric) -> None:
        """Feeds one eval batch to ``metric``, as Composer's ``update_metric``; override for other batch shapes."""
        _, targets = batch
        metric.update(outputs, targets)


class ClassifierModel(RaycompModel):
    """Wraps a plain ``nn.Module`` that maps inputs to logits, for ``(input, target)`` batches. The logits may come
    as a tensor or in a dict or object as ``logits`` (``raycomp.models.outputs.logits_of``).

    ``val_metrics`` (as in Composer's ``ComposerClassifier``) are what ``get_metrics`` offers evaluators.
    """

    def __init__(
        self,
        module: nn.Module,
        loss_fn: Callable[..., torch.Tensor] = nn.functional.cross_entropy,
        val_metrics: Metric | Sequence[Metric] | Mapping[str, Metric] | None = None,
    ) -> None:
        super().__init__()
        self.module = module
        self.loss_fn = loss_fn
        self.val_metrics = named_metrics(val_metrics)  # a plain dict: not submodules, so never in a state_dict

    def get_metrics(self, is_train: bool = False) -> dict[str, Metric]:
        return {} if is_train else dict(self.val_metrics)

    def forward(self, batch: Batch) -> torch.Tensor:
        inputs, _ = batch
        # A Hugging Face model returns an output object, others a dict: their logits are what the loss reads.
        return logits_of(self.module(inputs))

    def loss(self, outputs: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        _, targets = batch
        return self.loss_fn(outputs, targets, reduction=reduction)
