"""Learning-rate schedules over elapsed training, after Composer's ``composer.optim.scheduler``.

A schedule is a function of the State: ``schedule(state) -> lr multiplier``. It reads how far training is
(``state.get_elapsed_duration()``, which moves with every batch) instead of counting its own steps, so it stays
right when a resumed run gets a longer ``max_duration``, where torch's OneCycleLR fails ("Tried to step N
times"). Times are Composer time strings: ``"0.1dur"`` is a tenth of training, ``"2ep"`` and ``"100ba"`` are
converted to fractions of ``max_duration`` at every call. ``compile_composer_scheduler`` wraps one into a torch
``LRScheduler`` (lr = the optimizer's initial lr × multiplier) that the Trainer steps and checkpoints.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from raycomp.core.time import Time, TimeUnit

if TYPE_CHECKING:
    from raycomp.core.state import State

TimeLike = str | Time


@runtime_checkable
class ComposerScheduler(Protocol):
    """A schedule: the lr multiplier for the State as it is now (Composer's calling convention, less ``ssr``)."""

    def __call__(self, state: State) -> float: ...


def fraction_of_training(time: TimeLike, state: State) -> float:
    """``time`` as a fraction of ``state.max_duration``; epochs and batches convert through ``steps_per_epoch``."""
    time, total = Time.from_input(time), state.max_duration
    if time.unit is TimeUnit.DURATION:
        return float(time.value)
    if not total.value:
        return 0.0
    if time.unit is total.unit:
        return time.value / total.value
    if time.unit is TimeUnit.BATCH and total.unit is TimeUnit.EPOCH:
        return time.value / (total.value * state.steps_per_epoch)
    if time.unit is TimeUnit.EPOCH and total.unit is TimeUnit.BATCH:
        return time.value * state.steps_per_epoch / total.value
    raise ValueError(
        f"A schedule time of {time} cannot be read against max_duration {total}: "
        f"give it in 'dur' or in {total.unit.value}"
    )


def _progress(start: float, end: float, now: float) -> float:
    """How far ``now`` is from ``start`` to ``end``, clipped to [0, 1]; an empty span is already done."""
    return 1.0 if end <= start else min(max((now - start) / (end - start), 0.0), 1.0)


def _cosine(start: float, end: float, progress: float) -> float:
    return end + (start - end) * 0.5 * (1 + math.cos(math.pi * progress))


def _linear(start: float, end: float, progress: float) -> float:
    return start + (end - start) * progress


@dataclasses.dataclass
class _Schedule:
    """Parses every ``t_*`` field once, so a bad time string fails where the schedule is built."""

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            if field.name.startswith("t_"):
                setattr(self, field.name, Time.from_input(getattr(self, field.name)))

    def _times(self, state: State) -> tuple[float, float]:
        """(now, end of this schedule) as fractions of training."""
        return state.get_elapsed_duration().value, fraction_of_training(self.t_max, state)  # type: ignore[attr-defined]


@dataclasses.dataclass
class ConstantScheduler(_Schedule):
    """``alpha`` until ``t_max``, then 1."""

    alpha: float = 1.0
    t_max: TimeLike = "1dur"

    def __call__(self, state: State) -> float:
        now, end = self._times(state)
        return self.alpha if now < end else 1.0


@dataclasses.dataclass
class LinearScheduler(_Schedule):
    """From ``alpha_i`` to ``alpha_f`` in a straight line over ``t_max`` (Composer's defaults: 1 to 0)."""

    alpha_i: float = 1.0
    alpha_f: float = 0.0
    t_max: TimeLike = "1dur"

    def __call__(self, state: State) -> float:
        now, end = self._times(state)
        return _linear(self.alpha_i, self.alpha_f, _progress(0.0, end, now))


@dataclasses.dataclass
class CosineAnnealingScheduler(_Schedule):
    """The falling half of a cosine from 1 to ``alpha_f`` over ``t_max``."""

    t_max: TimeLike = "1dur"
    alpha_f: float = 0.0

    def __call__(self, state: State) -> float:
        now, end = self._times(state)
        return _cosine(1.0, self.alpha_f, _progress(0.0, end, now))


@dataclasses.dataclass
class _WithWarmup(_Schedule):
    """A linear warm-up from 0 to where the schedule after it starts (as Composer's ``*WithWarmup``)."""

    t_warmup: TimeLike

    def _phase(self, state: State) -> tuple[float | None, float]:
        """(warm-up progress, or None once it is over; progress of what follows)."""
        now, end = self._times(state)
        warmup = fraction_of_training(self.t_warmup, state)
        return (now / warmup if now < warmup else None), _progress(warmup, end, now)


@dataclasses.dataclass
class ConstantWithWarmupScheduler(_WithWarmup):
    alpha: float = 1.0
    t_max: TimeLike = "1dur"

    def __call__(self, state: State) -> float:
        warming, _ = self._phase(state)
        now, end = self._times(state)
        return self.alpha * warming if warming is not None else (self.alpha if now < end else 1.0)


@dataclasses.dataclass
class LinearWithWarmupScheduler(_WithWarmup):
    alpha_i: float = 1.0
    alpha_f: float = 0.0
    t_max: TimeLike = "1dur"

    def __call__(self, state: State) -> float:
        warming, progress = self._phase(state)
        return self.alpha_i * warming if warming is not None else _linear(self.alpha_i, self.alpha_f, progress)


@dataclasses.dataclass
class CosineAnnealingWithWarmupScheduler(_WithWarmup):
    t_max: TimeLike = "1dur"
    alpha_f: float = 0.0

    def __call__(self, state: State) -> float:
        warming, progress = self._phase(state)
        return warming if warming is not None else _cosine(1.0, self.alpha_f, progress)


@dataclasses.dataclass
class StepScheduler:
    """Multiply by ``gamma`` after every ``step_size`` of training (``"0.3dur"``, ``"30ep"``)."""

    step_size: TimeLike
    gamma: float = 0.1

    def __post_init__(self) -> None:
        self.step_size = Time.from_input(self.step_size)

    def __call__(self, state: State) -> float:
        now, step = state.get_elapsed_duration().value, fraction_of_training(self.step_size, state)
        return self.gamma ** math.floor(now / step) if step > 0 else 1.0


@dataclasses.dataclass
class MultiStepScheduler:
    """Multiply by ``gamma`` at each milestone passed (``["0.3dur", "0.6dur"]``, ``["30ep", "60ep"]``)."""

    milestones: Sequence[TimeLike]
    gamma: float = 0.1

    def __post_init__(self) -> None:
        self.milestones = [Time.from_input(milestone) for milestone in self.milestones]

    def __call__(self, state: State) -> float:
        now = state.get_elapsed_duration().value
        return self.gamma ** sum(now >= fraction_of_training(m, state) for m in self.milestones)


@dataclasses.dataclass
class OneCycleScheduler(_WithWarmup):
    """torch's ``OneCycleLR`` (Smith and Topin 2017) over elapsed training; the optimizer's lr is the peak.

    The lr rises on a cosine from ``1/div_factor`` to 1 over ``t_warmup`` and falls to
    ``1/(div_factor * final_div_factor)`` by ``t_max``; with ``cycle_momentum`` the momentum (or Adam's beta1)
    moves the other way, from ``max_momentum`` to ``base_momentum`` and back, as OneCycleLR's defaults do.
    """

    t_warmup: TimeLike = "0.3dur"
    div_factor: float = 25.0
    final_div_factor: float = 1e4
    t_max: TimeLike = "1dur"
    cycle_momentum: bool = True
    base_momentum: float = 0.85
    max_momentum: float = 0.95

    def __call__(self, state: State) -> float:
        warming, progress = self._phase(state)
        if warming is not None:
            return _cosine(1 / self.div_factor, 1.0, warming)
        return _cosine(1.0, 1 / (self.div_factor * self.final_div_factor), progress)

    def momentum(self, state: State) -> float | None:
        """The momentum for this point of training, or None to leave the optimizer's alone."""
        if not self.cycle_momentum:
            return None
        warming, progress = self._phase(state)
        if warming is not None:
            return _cosine(self.max_momentum, self.base_momentum, warming)
        return _cosine(self.base_momentum, self.max_momentum, progress)
