"""Soft targets shared by the algorithms that build them (LabelSmoothing, MixUp, CutMix)."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def ensure_targets_one_hot(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Class-index targets as one-hot distributions shaped like ``logits``; float targets as they are.

    ``logits`` is ``(N, C, ...)``; index targets are ``(N, ...)``. One-hot targets are float32 (float64 for
    float64 logits), never the bf16/fp16 of an autocast forward: probabilities such as 0.1/3 need the bits.
    """
    if target.is_floating_point():
        if target.shape != logits.shape:
            raise ValueError(
                f"Probability targets must have the logits' shape {tuple(logits.shape)}, got {tuple(target.shape)}"
            )
        return target
    if target.dim() != logits.dim() - 1:
        raise ValueError(
            f"Class-index targets must have one dimension fewer than the logits {tuple(logits.shape)}, "
            f"got {tuple(target.shape)}"
        )
    one_hot = F.one_hot(target.long(), logits.shape[1]).to(torch.promote_types(logits.dtype, torch.float32))
    return one_hot.movedim(-1, 1) if one_hot.dim() > 2 else one_hot
