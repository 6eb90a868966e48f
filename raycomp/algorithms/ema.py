"""EMA: keep an exponential moving average of the weights and evaluate with it, as in Composer.

The weights SGD visits late in training bounce around a minimum; their average sits closer to its centre,
so evaluating with it gives smoother, often better, metrics (Polyak averaging; TensorFlow's
``ExponentialMovingAverage``). After every ``update_interval`` the average moves towards the model:
``ema = smoothing * ema + (1 - smoothing) * model``, over parameters and buffers (BatchNorm statistics).
``smoothing = 2 ** -(update_interval / half_life)``: a term's weight halves every ``half_life``. A ``half_life``
in ``dur`` is a fraction of the run, turned into a smoothing on FIT_START from the run's real length in batches:
the average then spans the same share of any run, where ``'1000ba'`` on a 32-batch run evaluates nearly the
weights it started from.

Events, once the average has started (at the first update at or after ``ema_start``; it starts as a copy
of the model):
- BATCH_END (or EPOCH_END for an ``update_interval`` in epochs): update the average.
- EVAL_START / EVAL_END: swap the averaged weights into the model for each evaluation, and back.
- FIT_END: swap them in for good, so the model that ``fit()`` leaves (and its final checkpoint) holds the
  averages; the training weights are kept in this algorithm's state.
- FIT_START: give back the training weights if a previous fit (or the checkpoint resumed) ended with the
  averages swapped in, and rebuild the average from a loaded checkpoint.

Swaps copy values into the model's own tensors (Composer reassigns ``.data``), so optimizers and DDP keep
the same Parameters and storage. Checkpoints written during training hold the training weights as the
model and the averages in this algorithm's state, so a resumed fit reproduces an uninterrupted one.
Memory: one extra copy of the weights, and a second one while they are swapped.
"""

from __future__ import annotations

import copy
import itertools
import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import AfterValidator, Field
from torch import nn

from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.schedulers import fraction_of_training
from raycomp.core.state import State
from raycomp.core.time import Time, TimeUnit


def compute_ema(model: nn.Module, ema_model: nn.Module, smoothing: float = 0.99) -> None:
    """Move ``ema_model``'s weights towards ``model``'s in place: ``ema = smoothing * ema + (1 - smoothing) * model``.

    Parameters and floating-point buffers are averaged; other buffers (BatchNorm's batch counter) are
    copied. The two models must have the same structure.
    """
    if isinstance(smoothing, bool) or not isinstance(smoothing, int | float) or not 0 <= smoothing <= 1:
        raise ValueError(f"smoothing must be a number in [0, 1], got {smoothing!r}")
    sources = list(itertools.chain(model.parameters(), model.buffers()))
    targets = list(itertools.chain(ema_model.parameters(), ema_model.buffers()))
    if len(sources) != len(targets):
        raise ValueError(f"model and ema_model differ: {len(sources)} parameters and buffers against {len(targets)}")
    with torch.no_grad():
        for ema_tensor, tensor in zip(targets, sources, strict=True):
            if ema_tensor.is_floating_point():
                ema_tensor.mul_(smoothing).add_(tensor.detach(), alpha=1.0 - smoothing)
            else:
                ema_tensor.copy_(tensor)


def _time_string(*units: TimeUnit, above_zero: bool = False) -> AfterValidator:
    """A time string in one of ``units`` (``dur`` at most 1), checked where the argument is declared."""
    examples = {TimeUnit.DURATION: "'0.5dur'", TimeUnit.BATCH: "'1000ba'", TimeUnit.EPOCH: "'1ep'"}
    expected = f"a time string in {', '.join(u.value for u in units)} (e.g. {', '.join(examples[u] for u in units)})"

    def check(value: str | None) -> str | None:
        if value is None:
            return value
        try:
            time = Time.from_timestring(value)
        except ValueError:
            raise ValueError(f"must be {expected}, got {value!r}") from None
        if time.unit not in units or not math.isfinite(time.value):
            raise ValueError(f"must be {expected}, got {value!r}")
        if time.unit is TimeUnit.DURATION and time.value > 1:
            raise ValueError(f"in 'dur' must be at most 1, got {value!r}")
        if above_zero and time.value == 0:
            raise ValueError(f"must be above zero, got {value!r}")
        return value

    return AfterValidator(check)


Interval = Annotated[str | None, _time_string(TimeUnit.BATCH, TimeUnit.EPOCH, above_zero=True)]  # or None
HalfLife = Annotated[str | None, _time_string(TimeUnit.DURATION, TimeUnit.BATCH, TimeUnit.EPOCH, above_zero=True)]
StartTime = Annotated[str, _time_string(TimeUnit.DURATION, TimeUnit.BATCH, TimeUnit.EPOCH)]


def _update_interval(half_life: str | None, update_interval: str | None) -> Time:
    """``update_interval``, by default one unit of ``half_life`` (a batch with ``smoothing`` or a ``dur``)."""
    if update_interval is not None:
        return Time.from_timestring(update_interval)
    unit = TimeUnit.BATCH if half_life is None else Time.from_timestring(half_life).unit
    return Time(1, TimeUnit.BATCH if unit is TimeUnit.DURATION else unit)


def one_smoothing(arguments: Any) -> None:
    """EMA's smoothing comes from ``half_life`` or ``smoothing``, one of them, updated in ``half_life``'s unit."""
    half_life, smoothing, update_interval = arguments.half_life, arguments.smoothing, arguments.update_interval
    if half_life is None and smoothing is None:
        raise ValueError("EMA needs half_life or smoothing: give one of them")
    if half_life is not None and smoothing is not None:
        raise ValueError(
            "EMA takes half_life or smoothing, not both: to use smoothing, set half_life to None (YAML: null)"
        )
    if half_life is None:
        return
    unit = Time.from_timestring(half_life).unit
    interval = _update_interval(half_life, update_interval).unit
    if unit is TimeUnit.DURATION and interval is not TimeUnit.BATCH:
        raise ValueError(f"EMA's half_life in dur ({half_life}) is counted in batches: give update_interval in ba")
    if unit is not TimeUnit.DURATION and unit is not interval:
        raise ValueError(f"EMA update_interval ({update_interval}) and half_life ({half_life}) must have the same unit")


class EMA(Algorithm):
    """Evaluates with an exponential moving average of the weights; see the module docstring for events.

    Give either ``half_life`` (a time in batches or epochs, ``'1000ba'``, or a fraction of the run, ``'0.1dur'``)
    or ``smoothing`` (in (0, 1)), not both: with ``smoothing``, pass ``half_life=None``. ``update_interval``
    defaults to one unit of ``half_life`` (``'1ba'`` with ``smoothing`` or a ``dur``) and must share its unit
    (be in ``ba`` for a ``dur``). ``ema_start`` is a time in ``dur``, ``ba`` or ``ep``. ``smoothing`` is None
    until FIT_START for a ``dur`` half-life. After fitting, ``ema_model`` holds the averaged weights.
    """

    # A recipe search (raycomp find) starts from a tenth of its run and tries half and twice that: the default
    # 1000ba (Composer's, for long runs) is longer than a find's whole run of a few dozen batches.
    find_defaults: ClassVar[Mapping[str, Any]] = {"half_life": "0.1dur"}
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"half_life": ("0.05dur", "0.1dur", "0.2dur")}

    @checked_arguments(rules=(one_smoothing,))
    def __init__(
        self,
        half_life: HalfLife = "1000ba",
        smoothing: Annotated[float | None, Field(gt=0, lt=1)] = None,
        ema_start: StartTime = "0.0dur",
        update_interval: Interval = None,
    ) -> None:
        self.half_life = None if half_life is None else Time.from_timestring(half_life)
        self.ema_start = Time.from_timestring(ema_start)
        self.update_interval = _update_interval(half_life, update_interval)
        self.smoothing: float | None = float(smoothing) if smoothing is not None else None
        if self.half_life is not None and self.half_life.unit is not TimeUnit.DURATION:
            self.smoothing = 2 ** -(self.update_interval / self.half_life)
        self.update_event = Event.BATCH_END if self.update_interval.unit is TimeUnit.BATCH else Event.EPOCH_END

        self.ema_model: nn.Module | None = None
        self.ema_started = False
        self.ema_weights_active = False  # the model holds the averages (during eval, and after FIT_END)
        self._training_weights: dict[str, torch.Tensor] | None = None  # the model's own, while swapped out
        self._swapped_for_eval = False
        self._loaded: dict[str, Any] | None = None  # a checkpoint's state, applied on FIT_START

    # -- events --------------------------------------------------------------------------------
    def match(self, event: Event, state: State) -> bool:
        if event is Event.FIT_START:
            return True
        if event is self.update_event:
            return self._on_interval(state) if self.ema_started else self._should_start(state)
        if event is Event.EVAL_START:
            return self.ema_started and not self.ema_weights_active
        if event is Event.EVAL_END:
            return self._swapped_for_eval
        return event is Event.FIT_END and self.ema_started and not self.ema_weights_active

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        if event is Event.FIT_START:
            if self.half_life is not None and self.half_life.unit is TimeUnit.DURATION:  # the run's share
                self.smoothing = 2 ** -(fraction_of_training(self.update_interval, state) / self.half_life.value)
            self._restore(state)
        elif event is self.update_event:
            if not self.ema_started:
                self.ema_model = _frozen_copy(state.model)
                self.ema_started = True
            if self._on_interval(state):
                assert self.smoothing is not None  # set on FIT_START for a half-life in dur
                compute_ema(state.model, self.ema_model, self.smoothing)
        elif event is Event.EVAL_START:
            self._swap_in(state.model)
            self._swapped_for_eval = True
        elif event is Event.EVAL_END:
            self._swap_out(state.model)
            self._swapped_for_eval = False
        elif event is Event.FIT_END:
            self._swap_in(state.model)

    def _should_start(self, state: State) -> bool:
        if self.ema_start.unit is TimeUnit.DURATION:
            return state.get_elapsed_duration() >= self.ema_start
        return state.timestamp.reached(self.ema_start)

    def _on_interval(self, state: State) -> bool:
        return state.timestamp.get(self.update_interval.unit).value % self.update_interval.value == 0

    # -- swapping --------------------------------------------------------------------------------
    def _swap_in(self, model: nn.Module) -> None:
        self._training_weights = {name: tensor.clone() for name, tensor in model.state_dict().items()}
        model.load_state_dict(self.ema_model.state_dict())
        self.ema_weights_active = True

    def _swap_out(self, model: nn.Module) -> None:
        model.load_state_dict(self._training_weights)
        self._training_weights = None
        self.ema_weights_active = False

    def _restore(self, state: State) -> None:
        """Rebuild from a loaded checkpoint, and put the training weights back if the averages are in."""
        loaded, self._loaded = self._loaded, None
        if loaded is not None:
            self.ema_started = bool(loaded["ema_started"])
            self.ema_model = None
            if self.ema_started:
                self.ema_model = _frozen_copy(state.model)
                self.ema_model.load_state_dict(loaded["ema_model"])
            self.ema_weights_active = bool(loaded["ema_weights_active"])
            self._training_weights = loaded["training_weights"]
        if self.ema_weights_active:
            self._swap_out(state.model)

    # -- checkpoints -----------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        if self._loaded is not None:  # loaded but not yet applied: pass it on unchanged
            return dict(self._loaded)
        return {
            "ema_started": self.ema_started,
            "ema_weights_active": self.ema_weights_active,
            "ema_model": self.ema_model.state_dict() if self.ema_model is not None else None,
            "training_weights": self._training_weights,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._loaded = dict(state)


def _frozen_copy(model: nn.Module) -> nn.Module:
    ema_model = copy.deepcopy(model)
    ema_model.requires_grad_(False)
    return ema_model
