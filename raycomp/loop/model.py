"""The model interface the Trainer drives, after Composer's ``ComposerModel``: it belongs to the loop, which calls it.

A model takes the whole batch in ``forward`` and computes its own loss, so the Trainer (and algorithms such as
SelectiveBackprop, which needs per-sample losses) never has to know what a batch looks like. A plain
``nn.Module`` that maps inputs to logits is a classifier (``as_raycomp_model``): the Trainer and the recipe wrap it
the same way. The built-in networks and a user's models (``raycomp.models``, a layer above) implement this
interface; ``raycomp.models`` re-exports it under Composer's path, ``raycomp.models.base``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from raycomp.core.evaluator import named_metrics

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
    as a tensor or in a dict or object as ``logits`` (``logits_of``).

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


def as_raycomp_model(module: object, source: str) -> RaycompModel:
    """``module`` ready to train: a ``RaycompModel`` as it is, any other ``nn.Module`` as a cross-entropy classifier of
    its logits (``ClassifierModel``). Anything else is a ``TypeError`` that begins with ``source``, which says where
    it came from: ``"my_project.build returned"`` gives "my_project.build returned a dict, not a torch nn.Module"."""
    if isinstance(module, RaycompModel):
        return module
    if isinstance(module, nn.Module):
        return ClassifierModel(module)
    raise TypeError(f"{source} a {type(module).__name__}, not a torch nn.Module")


def logits_of(outputs: Any) -> torch.Tensor:
    """The logits in a classifier's ``outputs``: the tensor itself, ``outputs["logits"]`` or ``outputs.logits``."""
    if isinstance(outputs, torch.Tensor):
        return outputs
    logits = outputs.get("logits") if isinstance(outputs, Mapping) else getattr(outputs, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    raise TypeError(
        f"the model returned {described(outputs)}; a classifier returns a (batch, classes) tensor of logits, or a "
        "dict or object holding one as 'logits' (for other outputs, subclass raycomp.models.RaycompModel with a loss)"
    )


def described(value: Any) -> str:
    """``a 2-D float32 tensor of shape (2, 3)``, ``a dict with keys 'loss', 'x'``, ``a tuple of 2``: for messages."""
    if isinstance(value, torch.Tensor):
        dtype = str(value.dtype).removeprefix("torch.")
        return f"a {value.dim()}-D {dtype} tensor of shape {tuple(value.shape)}"
    if isinstance(value, Mapping):
        return f"a {type(value).__name__} with keys {', '.join(repr(key) for key in list(value)[:5])}"
    if isinstance(value, tuple | list):
        return f"a {type(value).__name__} of {len(value)}"
    return f"a {type(value).__name__}"
