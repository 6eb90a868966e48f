"""What a plain module must return to be trained as a classifier, and why a given output cannot be.

A plain ``nn.Module`` is trained by cross-entropy on its logits: a ``(batch, classes)`` float tensor, or a dict or
object holding one as ``logits`` (Hugging Face models return such an object; many others a dict). The preflight
checks one real batch's output with ``classifier_output_problem`` before any run, so a wrong class count or shape
is one config line rather than every trial's traceback. ``logits_of`` and ``described`` are the loop's
(``raycomp.loop.model``: ``ClassifierModel`` reads its logits with them), kept importable here.
"""

from __future__ import annotations

from typing import Any

import torch

from raycomp.loop.model import described, logits_of

__all__ = ["classifier_output_problem", "described", "logits_of"]


def classifier_output_problem(logits: torch.Tensor, targets: Any, num_classes: int | None = None) -> str | None:
    """Why ``logits`` cannot be trained by cross-entropy against ``targets`` (None: they can).

    ``targets`` are class indices of shape ``(batch,)``, or class probabilities shaped as the logits;
    ``num_classes`` is how many classes the data says it has, when it says (the batch shows only two labels).
    """
    if not isinstance(targets, torch.Tensor):
        return f"the targets are {described(targets)}; a classifier's targets are a tensor of class indices"
    rows = targets.shape[0] if targets.dim() else 1
    if not logits.is_floating_point() or logits.dim() != 2 or logits.shape[0] != rows:
        return (
            f"the model returned {described(logits)} for a batch of {rows}; a classifier returns float logits of "
            f"shape (batch, classes), here ({rows}, C)"
        )
    if targets.is_floating_point():
        if targets.shape == logits.shape:
            return None
        return (
            f"the targets are {described(targets)}; a plain module is trained as a classifier on class indices "
            "(for regression or other targets, subclass raycomp.models.RaycompModel with its own loss)"
        )
    if targets.dim() != 1:
        return f"the targets are {described(targets)}; a classifier's class indices are of shape (batch,)"
    needed = max(int(targets.max()) + 1, num_classes or 0)
    if logits.shape[1] < needed:
        return (
            f"the model outputs {logits.shape[1]} logits per sample but the data has labels up to {needed - 1}: "
            f"it needs at least {needed} classes"
        )
    return None
