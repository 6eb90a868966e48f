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

``_PairMixing`` is that target/loss handling, shared with CutMix, which mixes inputs differently.
"""

from __future__ import annotations

from abc import abstractmethod

import torch

from raycomp.algorithms.label_smoothing import ensure_targets_one_hot
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.precision import autocast
from raycomp.core.state import State


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


class _PairMixing(Algorithm):
    """Mixes each example with ``input[indices]`` on BEFORE_FORWARD, then makes the loss credit both targets.

    Subclasses implement ``mix`` and set ``interpolate_loss``; the base keeps ``indices`` and
    ``permuted_weight`` (the weight of the permuted example) from BEFORE_FORWARD for the loss events.
    """

    interpolate_loss: bool

    def _init_mixing(self, interpolate_loss: bool) -> None:
        if not isinstance(interpolate_loss, bool):
            raise ValueError(f"{type(self).__name__} interpolate_loss must be true or false, got {interpolate_loss!r}")
        self.interpolate_loss = interpolate_loss
        self.indices: torch.Tensor | None = None
        self.permuted_weight = 0.0
        self._original_target: torch.Tensor | None = None

    @abstractmethod
    def mix(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        """The mixed input, the permutation used, and the weight of the permuted example in the mix."""

    def match(self, event: Event, state: State) -> bool:
        if event is Event.BEFORE_LOSS:
            return not self.interpolate_loss
        return event in (Event.BEFORE_FORWARD, Event.AFTER_LOSS)

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        input, target = state.batch_pair
        if event is Event.BEFORE_FORWARD:
            mixed, self.indices, self.permuted_weight = self.mix(input, target)
            state.batch = type(state.batch)((mixed, target))
            return
        if self.indices is None:
            raise RuntimeError(f"{type(self).__name__} ran at {event.value} without mixing on before_forward first")
        permuted = target[self.indices.to(target.device)]
        weight = self.permuted_weight
        if event is Event.BEFORE_LOSS:
            logits = state.outputs
            if not isinstance(logits, torch.Tensor):
                raise TypeError(f"{type(self).__name__} needs the logits in state.outputs, got {type(logits).__name__}")
            self._original_target = target
            soft = (1 - weight) * ensure_targets_one_hot(logits, target) + weight * ensure_targets_one_hot(
                logits, permuted
            )
            state.batch = type(state.batch)((input, soft))
        elif self.interpolate_loss:
            with autocast(state.precision, state.device):
                permuted_loss = state.model.loss(state.outputs, type(state.batch)((input, permuted)))
            state.loss = (1 - weight) * state.loss + weight * permuted_loss
        elif self._original_target is not None:
            state.batch = type(state.batch)((input, self._original_target))
            self._original_target = None


class MixUp(_PairMixing):
    """Mixes inputs on BEFORE_FORWARD; mixes targets on BEFORE_LOSS (restored on AFTER_LOSS) or the loss on AFTER_LOSS.

    ``alpha`` is the Beta distribution's pseudocount: larger mixes the pair more evenly, 0 turns MixUp off.
    ``interpolate_loss`` interpolates the two losses instead of the targets. After each batch ``mixing``
    and ``indices`` hold what was used.
    """

    def __init__(self, alpha: float = 0.2, interpolate_loss: bool = False) -> None:
        if isinstance(alpha, bool) or not isinstance(alpha, int | float) or alpha < 0:
            raise ValueError(f"MixUp alpha must be a number >= 0, got {alpha!r}")
        self.alpha = alpha
        self._init_mixing(interpolate_loss)

    @property
    def mixing(self) -> float:
        return self.permuted_weight

    def mix(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        indices = torch.randperm(input.shape[0], device=input.device)
        mixed, _, mixing = mixup_batch(input, target, alpha=self.alpha, indices=indices)
        return mixed, indices, mixing
