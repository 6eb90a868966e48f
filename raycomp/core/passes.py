"""Algorithm passes: pure functions ``(algorithms, event) -> algorithms`` that order what the Engine runs.

The Engine applies them in list order. ``set_filo_order`` comes first so that the passes after it,
which pin an algorithm to the front or the back, have the last word. Composer runs its SB-first pass
before the FILO reversal, so on ``AFTER_DATALOADER`` (an ``after_`` event) SelectiveBackprop ends up
running last, after the augmentations it must precede; this order fixes that.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TypeVar

from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event

T = TypeVar("T")
AlgorithmPass = Callable[[Sequence[Algorithm], Event], list[Algorithm]]


def sort_to_front(list_to_sort: Sequence[T], cls: type | tuple[type, ...]) -> list[T]:
    """Instances of ``cls`` first, keeping the relative order of everything else."""
    return sorted(list_to_sort, key=lambda item: not isinstance(item, cls))


def sort_to_back(list_to_sort: Sequence[T], cls: type | tuple[type, ...]) -> list[T]:
    """Instances of ``cls`` last, keeping the relative order of everything else."""
    return sorted(list_to_sort, key=lambda item: isinstance(item, cls))


def set_filo_order(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """Reverse the order on ``after_*`` events (ABCD, then DCBA) so algorithms can undo their changes."""
    return list(reversed(algorithms)) if event.is_after_event else list(algorithms)


def sort_selective_backprop_first(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """SelectiveBackprop ranks examples by a clean loss, so it runs before any augmentation (MixUp, ...)."""
    from raycomp.algorithms.selective_backprop import SelectiveBackprop

    return sort_to_front(algorithms, SelectiveBackprop)


def sort_fused_layernorm_last(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """FusedLayerNorm must see every LayerNorm other surgeries add; matched by class name, as raycomp has none."""
    return sorted(algorithms, key=lambda algorithm: type(algorithm).__name__ == "FusedLayerNorm")


def warn_if_multiple_loss_interpolation(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """Two algorithms that interpolate the loss (MixUp and CutMix) compound in ways neither expects."""
    interpolating = [a for a in algorithms if getattr(a, "interpolate_loss", False)]
    if len(interpolating) > 1:
        names = ", ".join(type(a).__name__ for a in interpolating)
        warnings.warn(
            f"Several algorithms interpolate the loss ({names}); their combined effect may be unexpected",
            stacklevel=2,
        )
    return list(algorithms)


def default_passes() -> list[AlgorithmPass]:
    return [
        set_filo_order,
        sort_selective_backprop_first,
        sort_fused_layernorm_last,
        warn_if_multiple_loss_interpolation,
    ]
