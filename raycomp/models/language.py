"""``LanguageModel``: a next-token predictor as a ``RaycompModel``, for ``(input ids, target ids)`` batches.

Losses are per token, but one value per *sequence* is what ``reduction="none"`` returns (the mean over its
tokens): SelectiveBackprop ranks and keeps whole sequences, and the evaluator, which sums ``reduction="sum"``
and divides by the number of sequences, gets the mean per-token loss (all sequences of a batch have one
length), so ``exp(eval/loss)`` is the perplexity. ``num_correct`` likewise sums per-sequence next-token
accuracies, so ``eval/accuracy`` is the fraction of tokens whose argmax is the next token. ``eval/perplexity``
is logged too, from torchmetrics' ``Perplexity`` (the model's own eval metric).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import nn
from torch.nn import functional as F

from raycomp.loop.model import Batch, RaycompModel

if TYPE_CHECKING:
    from torchmetrics import Metric


class LanguageModel(RaycompModel):
    """Wraps ``module``, which maps ids ``[B, T]`` to logits ``[B, T, V]`` (or an output with ``.logits``)."""

    def __init__(self, module: nn.Module) -> None:
        super().__init__()
        self.module = module

    def forward(self, batch: Batch) -> torch.Tensor:
        inputs, _ = batch
        outputs = self.module(inputs)
        return outputs.logits if hasattr(outputs, "logits") else outputs

    def loss(self, outputs: torch.Tensor, batch: Batch, reduction: str = "mean") -> torch.Tensor:
        _, targets = batch
        per_token = F.cross_entropy(outputs.flatten(0, -2), targets.flatten(), reduction="none")
        per_sequence = per_token.view(targets.shape[0], -1).mean(dim=1)
        if reduction == "none":
            return per_sequence
        if reduction == "sum":
            return per_sequence.sum()
        if reduction == "mean":
            return per_sequence.mean()
        raise ValueError(f"reduction must be 'none', 'mean' or 'sum', got {reduction!r}")

    def num_correct(self, outputs: torch.Tensor, batch: Batch) -> torch.Tensor:
        """The sum over sequences of their next-token accuracy: divided by the sequence count, token accuracy."""
        _, targets = batch
        hits = (outputs.argmax(dim=-1) == targets).float()
        return hits.view(targets.shape[0], -1).mean(dim=1).sum()

    def update_metric(self, batch: Batch, outputs: torch.Tensor, metric: Metric) -> None:
        """Perplexity takes ``[B, T, vocab]`` as it is; other metrics (accuracy, F1 over the vocabulary) see
        every token as one sample, ``[B*T, vocab]`` against ``[B*T]``: torchmetrics reads dim 1 as the classes."""
        from torchmetrics.text import Perplexity

        _, targets = batch
        if isinstance(metric, Perplexity):
            metric.update(outputs, targets)
        else:
            metric.update(outputs.reshape(-1, outputs.shape[-1]), targets.reshape(-1))

    def get_metrics(self, is_train: bool = False) -> dict[str, Metric]:
        if is_train:
            return {}
        from torchmetrics.text import Perplexity

        return {"perplexity": Perplexity()}
