"""The State: everything the training loop touches, which algorithms change in place."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import torch
from torch import nn

from raycomp.core.algorithm import Algorithm, class_path
from raycomp.core.callback import Callback
from raycomp.core.evaluator import Evaluator  # re-exported: it lived here before it took metrics
from raycomp.core.precision import Precision, autocast
from raycomp.core.serializable import Serializable
from raycomp.core.state_serialization import load_each, serialized
from raycomp.core.time import Time, Timestamp, TimeUnit
from raycomp.core.trace import TraceSummary


class State(Serializable):
    """The trainer's state, as on Composer's State page.

    Unlike Composer, ``model`` is never wrapped in DistributedDataParallel: the Trainer keeps the
    wrapper to itself, so algorithms always see (and operate surgery on) the user's model.

    ``batch`` is the current microbatch from BEFORE_FORWARD to AFTER_BACKWARD, else the whole batch (Composer:
    a microbatch from BATCH_START, before any split). ``precision="amp"`` is resolved for ``device``.
    """

    # What a checkpoint's "state" holds: state_dict() writes these names in this order, load_state_dict() reads them.
    serialized_attributes = (
        "model",
        "optimizers",
        "schedulers",
        "scaler",
        "timestamp",
        "algorithms",
        "callbacks",
    )

    def __init__(
        self,
        model: nn.Module,
        max_duration: str | Time,
        train_dataloader: Iterable | None = None,
        evaluators: Sequence[Evaluator] = (),
        grad_accum: int = 1,
        precision: str | Precision = Precision.FP32,
        precision_context: Callable[[Precision], contextlib.AbstractContextManager] | None = None,
        optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
        schedulers: Any | Sequence[Any] | None = None,
        scaler: torch.amp.GradScaler | None = None,
        algorithms: Sequence[Algorithm] = (),
        callbacks: Sequence[Callback] = (),
        steps_per_epoch: int | None = None,
        device: torch.device | str = "cpu",
        rank: int = 0,
        world_size: int = 1,
        seed: int | None = None,
    ) -> None:
        self.model = model
        self.max_duration = max_duration  # validated by the setter
        self.train_dataloader = train_dataloader
        self.evaluators = list(evaluators)
        if grad_accum < 1:
            raise ValueError(f"grad_accum must be >= 1, got {grad_accum}")
        self.grad_accum = grad_accum
        self.device = torch.device(device)
        self.precision = Precision.parse(precision, self.device)
        self._precision_context = precision_context
        self.optimizers = _as_list(optimizers)
        self.schedulers = _as_list(schedulers)
        self.scaler = scaler
        self.algorithms = list(algorithms)
        self.callbacks = list(callbacks)
        self._steps_per_epoch = steps_per_epoch
        self.rank = rank
        self.world_size = world_size
        self.seed = seed

        self.timestamp = Timestamp()
        self.batch: Any = None
        self.batch_num_samples = 0
        self.batch_num_tokens = 0
        self.loss: torch.Tensor | None = None
        self.outputs: torch.Tensor | None = None
        self.eval_metrics: dict[str, float] = {}
        self.stop_requested = False
        # What each algorithm cost where it ran; the Engine adds to it, callbacks (result reports) read it.
        self.trace_summary = TraceSummary()
        # The running torch.profiler.profile while a profiler callback records (raycomp/loop/profiling.py), else None.
        self.profiler: Any = None
        # torch.compile's mode when the Trainer compiles the model (None: eager); algorithms that run forward
        # passes of their own (SelectiveBackprop's selection) compile them the same way.
        self.compile_mode: str | None = None

    # -- duration -------------------------------------------------------------------------------
    @property
    def max_duration(self) -> Time:
        return self._max_duration

    @max_duration.setter
    def max_duration(self, value: str | Time) -> None:
        duration = Time.from_input(value)
        if duration.unit is TimeUnit.DURATION:
            raise ValueError(f"max_duration cannot be a fraction of itself ({duration}); use ep, ba, sp or tok")
        self._max_duration = duration

    def get_elapsed_duration(self) -> Time:
        """How far through max_duration training is, as a fraction in [0, 1] that moves with every batch.

        Unlike Composer, whose fraction is counted in max_duration's unit, a max_duration in epochs is counted
        in batches: ``(epochs done + batches done this epoch / steps_per_epoch) / epochs``, which is batches
        done / (epochs x steps_per_epoch) when every epoch is full. So schedules in fractions of training
        (SelectiveBackprop's ``start``/``end``, ProgressiveResizing, LayerFreezing, EMA) move inside epochs
        instead of snapping to epoch boundaries. Batches, samples and tokens already move per batch.
        """
        total = self.max_duration
        if not total.value:
            return Time(1.0, TimeUnit.DURATION)
        if total.unit is TimeUnit.EPOCH and self.timestamp.batch_in_epoch:
            # One division of whole batch counts: at an epoch's last batch it is the same float as the next
            # epoch's start, epochs / max epochs, so a schedule resumed there continues bit for bit.
            per_epoch = self.steps_per_epoch
            done = self.timestamp.epoch * per_epoch + min(self.timestamp.batch_in_epoch, per_epoch)
            elapsed = done / (total.value * per_epoch)
        else:
            elapsed = self.timestamp.get(total.unit) / total
        return Time(min(elapsed, 1.0), TimeUnit.DURATION)

    @property
    def steps_per_epoch(self) -> int:
        if self._steps_per_epoch is not None:
            return self._steps_per_epoch
        return len(self.train_dataloader)  # type: ignore[arg-type]

    @steps_per_epoch.setter
    def steps_per_epoch(self, value: int | None) -> None:
        self._steps_per_epoch = value

    @property
    def max_epochs(self) -> int:
        """The epochs max_duration spans (the last one may be partial)."""
        if self.max_duration.unit is TimeUnit.EPOCH:
            return int(self.max_duration.value)
        if self.max_duration.unit is TimeUnit.BATCH:
            return math.ceil(self.max_duration.value / self.steps_per_epoch)
        raise ValueError(f"max_epochs is unknown for a max_duration in {self.max_duration.unit.name.lower()}s")

    @property
    def epoch(self) -> int:
        return self.timestamp.epoch

    @property
    def step(self) -> int:
        return self.timestamp.batch

    @property
    def batch_idx(self) -> int:
        return self.timestamp.batch_in_epoch

    @property
    def precision_context(self) -> contextlib.AbstractContextManager:
        """A fresh context that runs a forward pass in ``precision`` (autocast, unless built with a factory)."""
        if self._precision_context is not None:
            return self._precision_context(self.precision)
        return autocast(self.precision, self.device)

    def request_stop(self) -> None:
        """Ask the Trainer to stop after this batch; under DDP every rank stops together."""
        self.stop_requested = True

    # -- batch views ----------------------------------------------------------------------------
    @property
    def batch_pair(self) -> tuple[Any, Any]:
        if isinstance(self.batch, list | tuple) and len(self.batch) == 2:
            return self.batch[0], self.batch[1]
        raise TypeError(f"The batch is not an (input, target) pair but {type(self.batch).__name__}")

    @property
    def batch_dict(self) -> Mapping[str, Any]:
        if isinstance(self.batch, Mapping):
            return self.batch
        raise TypeError(f"The batch is not a dict but {type(self.batch).__name__}")

    # -- serialization --------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """One entry per name in ``serialized_attributes``, in that order (the checkpoint's ``state``)."""
        return {name: serialized(name, getattr(self, name)) for name in self.serialized_attributes}

    def load_model_state(self, state_dict: Mapping[str, Any], strict: bool = True) -> None:
        self.model.load_state_dict(state_dict, strict=strict)

    def load_algorithm_states(self, entries: list[Mapping[str, Any]]) -> None:
        """Each algorithm's saved state, matched by class path. Loading one twice must change nothing:
        the Trainer loads them before BEFORE_LOAD too (so LayerFreezing re-freezes before the optimizers load).
        """
        saved = {entry["class_path"]: entry["state"] for entry in entries}
        for algorithm in self.algorithms:
            if class_path(type(algorithm)) in saved:
                algorithm.load_state_dict(saved[class_path(type(algorithm))])

    def load_state_dict(self, state: Mapping[str, Any], strict: bool = True) -> None:
        """Restore what ``state_dict`` saved; algorithms and callbacks are matched by class.

        ``strict=True`` (Composer's State page: False): a model whose keys differ from the checkpoint's is an
        error, not a silent partial load; it is also the default of Composer's ``load_strict_model_weights``.
        The timestamp comes first, so that schedulers that read it (``ScheduledLR``) load against it.
        """
        self.timestamp = Timestamp.from_state_dict(state["timestamp"])
        self.load_model_state(state["model"], strict=strict)
        load_each(self.optimizers, state["optimizers"], "optimizers")
        load_each(self.schedulers, state["schedulers"], "schedulers")
        if self.scaler is not None and state["scaler"] is not None:
            self.scaler.load_state_dict(state["scaler"])
        self.load_algorithm_states(state["algorithms"])
        for callback in self.callbacks:
            if type(callback).__name__ in state["callbacks"]:
                callback.load_state_dict(state["callbacks"][type(callback).__name__])


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]
