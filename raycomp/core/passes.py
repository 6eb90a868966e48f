"""Algorithm passes: pure functions ``(algorithms, event) -> algorithms`` that order what the Engine runs.

The Engine applies them in list order. ``set_filo_order`` comes first so that the passes after it,
which pin an algorithm to the front or the back, have the last word. Composer runs its SB-first pass
before the FILO reversal, so on ``AFTER_DATALOADER`` (an ``after_`` event) SelectiveBackprop ends up
running last, after the augmentations it must precede; this order fixes that.

The pins are declared by the algorithms themselves (``Algorithm.first_on`` / ``last_on``), so this
module imports no algorithm: SelectiveBackprop sets ``first_on = {AFTER_DATALOADER}``, FusedLayerNorm
``last_on = {INIT}``. Composer's pass names (the seed page) are kept: ``sort_selective_backprop_first``
and ``sort_fused_layernorm_last`` are those two pins.
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
    """Reverse the order on ``after_*`` events (ABCD on ``BEFORE_LOSS``, DCBA on ``AFTER_LOSS``) so algorithms
    can undo their changes. As in Composer, only events whose name begins with ``after_``: the evaluation
    loop's ``EVAL_AFTER_*`` and the ``*_START``/``*_END`` events keep the order."""
    return list(reversed(algorithms)) if event.is_after_event else list(algorithms)


def sort_first_on(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """Algorithms whose ``first_on`` holds ``event`` run first.

    SelectiveBackprop declares ``AFTER_DATALOADER``: it ranks examples by a clean loss, so it must run
    before any augmentation (MixUp, ProgressiveResizing, ...) that changes the batch at that event.
    """
    return sorted(algorithms, key=lambda algorithm: event not in algorithm.first_on)


def sort_last_on(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """Algorithms whose ``last_on`` holds ``event`` run last.

    FusedLayerNorm declares ``INIT``: it must see every LayerNorm that other surgeries (GatedLinearUnits)
    add there.
    """
    return sorted(algorithms, key=lambda algorithm: event in algorithm.last_on)


def sort_selective_backprop_first(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """Selective Backprop should run before any algorithms modify the loss (Composer's pass).

    It ranks the batch by a clean loss on ``AFTER_DATALOADER``, so it runs before any augmentation (MixUp)
    there; SelectiveBackprop declares that event in ``first_on``, which this pass honours.
    """
    return sort_first_on(algorithms, event)


def sort_fused_layernorm_last(algorithms: Sequence[Algorithm], event: Event) -> list[Algorithm]:
    """FusedLayerNorm should run after other algorithms that add LayerNorms (e.g. GatedLinearUnits), so
    that every LayerNorm becomes a fused one (Composer's pass); FusedLayerNorm declares ``last_on = {INIT}``."""
    return sort_last_on(algorithms, event)


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
