"""MixUp (Zhang et al. 2018): train on convex combinations of pairs of examples and of their targets.

Each input becomes ``(1 - mixing) * x + mixing * x[perm]`` for a random permutation of the batch and one
``mixing`` per batch, ``min(z, 1 - z)`` with ``z ~ Beta(alpha, alpha)`` (as Composer), so the original
example always dominates and training accuracy stays meaningful. The loss must then credit both labels in
the same proportion; this regularises the network towards linear behaviour between examples.

Events, as Composer: BEFORE_FORWARD mixes the inputs, so SelectiveBackprop (AFTER_DATALOADER) ranks clean
examples first. Then either (``interpolate_loss=False``) BEFORE_LOSS replaces the targets with the mixed
soft targets and AFTER_LOSS restores them, or (``interpolate_loss=True``) AFTER_LOSS replaces the loss by
``(1 - mixing) * loss + mixing * loss(outputs, target[perm])``. Composer interpolates at BEFORE_BACKWARD;
AFTER_LOSS keeps every change of MixUp inside the loss bracket, where the FILO pass orders it against the
other target changes (LabelSmoothing). For cross-entropy both modes give the same loss, because it is
linear in the targets; interpolating the loss also works for losses that cannot take soft targets.

The permuted targets are taken from the batch's targets at the time they are needed, so targets smoothed
by LabelSmoothing are permuted smoothed, not mixed with raw one-hot labels.

That target/loss handling is ``raycomp.algorithms._pair_mixing``, shared with CutMix, which mixes inputs differently.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from raycomp.algorithms._pair_mixing import _PairMixing
from raycomp.algorithms.arguments import checked_arguments


def mixup_batch(
    input: torch.Tensor,
    target: torch.Tensor,
    mixing: float | None = None,
    alpha: float = 0.2,
    indices: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor, float]:
    """``(1 - mixing) * input + mixing * input[indices]``, ``target[indices]`` and ``mixing``.

    ``mixing`` defaults to ``min(z, 1 - z)``, ``z ~ Beta(alpha, alpha)`` (0 when ``alpha`` is 0); ``indices``
    to a random permutation of the batch. Mix the targets in the same proportions, or the losses.
    """
    if mixing is None:
        mixing = _gen_mixing_coef(alpha)
    elif not 0 <= mixing <= 1:
        raise ValueError(f"mixing must be in [0, 1], got {mixing}")
    if indices is None:
        indices = torch.randperm(input.shape[0], device=input.device)
    mixed = (1 - mixing) * input + mixing * input[indices]
    return mixed, target[indices], mixing


def _gen_mixing_coef(alpha: float) -> float:
    """``min(z, 1 - z)`` for ``z ~ Beta(alpha, alpha)``, from torch's RNG so the Trainer's seed fixes it."""
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    if alpha == 0:
        return 0.0
    z = float(torch.distributions.Beta(float(alpha), float(alpha)).sample())
    return min(z, 1.0 - z)


class MixUp(_PairMixing):
    """Mixes inputs on BEFORE_FORWARD; mixes targets on BEFORE_LOSS (restored on AFTER_LOSS) or the loss on AFTER_LOSS.

    ``alpha`` is the Beta distribution's pseudocount: larger mixes the pair more evenly, 0 turns MixUp off.
    ``interpolate_loss`` interpolates the two losses instead of the targets. After each batch ``mixing``
    and ``indices`` hold what was used.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"alpha": (0.1, 0.2, 0.5)}
    incompatible_with: ClassVar[frozenset[str]] = frozenset({"cutmix"})  # both mix the batch: one at a time

    @checked_arguments
    def __init__(self, alpha: Annotated[float, Field(ge=0)] = 0.2, interpolate_loss: bool = False) -> None:
        self.alpha = alpha
        self._init_mixing(interpolate_loss)

    @property
    def mixing(self) -> float:
        return self.permuted_weight

    def mix(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        indices = torch.randperm(input.shape[0], device=input.device)
        mixed, _, mixing = mixup_batch(input, target, alpha=self.alpha, indices=indices)
        return mixed, indices, mixing
