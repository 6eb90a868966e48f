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
    """``forward(batch)`` and ``loss(outputs, batch, reduction)``; ``num_correct`` counts a classifier's hits (None:
    the model has no accuracy) and ``get_metrics`` offers its own torchmetrics, logged as ``eval/<name>``."""

    @abstractmethod
    def forward(self, batch: Batch) -> torch.Tensor: ...

    @abstractmethod
    def loss(self, outputs: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        """The training loss; ``reduction='none'`` must give one loss per sample."""

    def num_correct(self, outputs: torch.Tensor, batch: Batch) -> torch.Tensor | None:
        """How many samples of the batch the outputs classify correctly, for ``eval/accuracy``; None: the model has
        no accuracy, and none is logged (a regression's ``eval/accuracy`` would be a meaningless 0).

        By default the argmax of ``(batch, classes)`` outputs against the integer labels of an ``(inputs, labels)``
        batch, and None for anything else (float targets, a batch of another shape). Override it to count otherwise,
        or to return None for a model that is no classifier whatever its data.
        """
        labels = class_labels(outputs, batch)
        return None if labels is None else (outputs.argmax(dim=-1) == labels).sum()

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


def class_labels(outputs: Any, batch: Batch) -> torch.Tensor | None:
    """The batch's class labels when ``outputs`` score each class: ``(batch, classes)`` outputs against an
    ``(inputs, labels)`` batch whose labels are one integer a sample; None otherwise (no class labels)."""
    if not isinstance(batch, list | tuple) or len(batch) != 2:
        return None
    labels = batch[1]
    if not isinstance(outputs, torch.Tensor) or not isinstance(labels, torch.Tensor):
        return None
    integer = not (labels.is_floating_point() or labels.is_complex() or labels.dtype == torch.bool)
    if not integer or labels.dim() != 1 or outputs.dim() != 2 or outputs.shape[0] != labels.shape[0]:
        return None
    return labels


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
