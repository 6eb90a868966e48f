"""SeqLengthWarmup (Li et al. 2021; Composer): train on short sequences first, growing them to full length.

Early in training a language model learns mostly local statistics, which short sequences teach as well as
long ones, and attention's cost grows with the length. On AFTER_DATALOADER every tensor of the batch that has
a sequence dimension (dim 1) is cut to the current length: ``min_seq_length`` at the start, growing in
``step_size`` steps to ``max_seq_length`` over the first ``duration`` of training, then full length. With
``truncate=False`` the extra tokens are not dropped but reshaped into more, shorter sequences (so every
token is still trained on; the batch then has more rows).

Semantics as Composer's, with these differences: the length follows ``State.get_elapsed_duration()`` (which
moves per batch, whatever ``max_duration``'s unit), so a budget in samples or tokens works and there is no
division by zero when the warmup has fewer batches than length steps; batches are ``(input, target)`` pairs,
tuples/lists of tensors or mappings (``input_ids`` ... ); Composer's preallocating forward/backward at the full
length (to avoid CUDA memory fragmentation) and ``preserve_end_of_sequence`` are not implemented. Evaluation
runs at full length. Tokens are counted after AFTER_DATALOADER, so ``Timestamp.token`` counts what was trained.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from raycomp.algorithms.arguments import checked_arguments
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def bucket_step(min_seq_length: int, max_seq_length: int, step_size: int, buckets: int) -> int:
    """The staircase's step: ``step_size``, or with ``buckets > 0`` the smallest multiple of it that reaches
    ``max_seq_length`` from ``min_seq_length`` in at most ``buckets`` steps, so that the warmup trains on at
    most ``buckets`` lengths below the full one."""
    if buckets <= 0:
        return step_size
    span = max_seq_length - min_seq_length
    return max(step_size, math.ceil(span / buckets / step_size) * step_size)


def seq_length_at(
    elapsed: float, duration: float, min_seq_length: int, max_seq_length: int, step_size: int, buckets: int = 0
) -> int:
    """The sequence length after ``elapsed`` (a fraction) of training: a staircase from min to max.

    ``min + step * floor(progress * n_steps)`` with ``step = bucket_step(...)`` (``step_size`` when ``buckets``
    is 0), ``n_steps = (max - min) // step`` and ``progress = elapsed / duration``; ``max_seq_length`` from
    ``duration`` on (and at once if it is 0).
    """
    if duration <= 0 or elapsed >= duration:
        return max_seq_length
    step_size = bucket_step(min_seq_length, max_seq_length, step_size, buckets)
    n_steps = (max_seq_length - min_seq_length) // step_size
    steps = math.floor(max(elapsed, 0.0) / duration * n_steps + 1e-9)
    return min(max_seq_length, min_seq_length + step_size * steps)


def set_batch_sequence_length(batch: Any, seq_length: int, truncate: bool = True) -> Any:
    """``batch`` with its sequences cut to ``seq_length`` (Composer's name); a batch no longer is returned as is.

    The sequence length is dim 1 of every tensor with at least 2 dims; 1-d tensors (per-sequence labels) are
    kept with ``truncate=True``. ``truncate=False`` flattens each ``[B, T, ...]`` tensor and re-cuts it into
    ``[B * T // seq_length, seq_length, ...]`` rows (the tail that fills no row is dropped); every sequence
    tensor must then have the same ``[B, T]``. Inputs and next-token targets stay aligned either way.
    """
    if seq_length < 1:
        raise ValueError(f"seq_length must be at least 1, got {seq_length}")
    tensors = list(batch.values()) if isinstance(batch, Mapping) else list(batch)
    shapes = {tuple(t.shape[:2]) for t in tensors if isinstance(t, torch.Tensor) and t.dim() >= 2}
    if not shapes:
        raise ValueError("set_batch_sequence_length needs tensors of shape [batch, sequence, ...]; found none")
    if max(shape[1] for shape in shapes) <= seq_length:
        return batch
    if not truncate and len(shapes) > 1:
        raise ValueError(f"truncate=False needs every sequence tensor to share [batch, sequence]; got {sorted(shapes)}")

    def cut(tensor: Any) -> Any:
        if not isinstance(tensor, torch.Tensor) or tensor.dim() < 2:
            if not truncate and isinstance(tensor, torch.Tensor):
                raise ValueError("truncate=False cannot reshape a tensor without a sequence dimension")
            return tensor
        if truncate:
            return tensor[:, :seq_length].contiguous()
        flat = tensor.reshape(-1, *tensor.shape[2:])
        rows = flat.shape[0] // seq_length
        return flat[: rows * seq_length].reshape(rows, seq_length, *tensor.shape[2:])

    if isinstance(batch, Mapping):
        return type(batch)({key: cut(value) for key, value in batch.items()})
    if isinstance(batch, Sequence):
        return type(batch)(cut(value) for value in batch)
    raise TypeError(f"set_batch_sequence_length needs a tuple, list or mapping batch, got {type(batch).__name__}")


def max_not_below_min(arguments: Any) -> None:
    """SeqLengthWarmup's staircase climbs: its last length is at least its first."""
    if arguments.max_seq_length < arguments.min_seq_length:
        raise ValueError(
            "SeqLengthWarmup needs max_seq_length >= min_seq_length, "
            f"got {arguments.max_seq_length} < {arguments.min_seq_length}"
        )


class SeqLengthWarmup(Algorithm):
    """Cuts each training batch on AFTER_DATALOADER to ``seq_length_at(elapsed, ...)`` tokens.

    Logs ``seq_length_warmup/curr_seq_len`` (the length trained on: the data's, when shorter than the
    schedule's) and ``seq_length_warmup/curr_bs`` (rows, more after a ``truncate=False`` reshape), as Composer.
    ``step_size`` should be a multiple of 8 on GPUs.

    ``buckets`` (default 4; 0: Composer's staircase of every ``step_size``) bounds the number of lengths below
    the full one: each new length costs first-call work on a GPU (allocations, kernel choices) and, with
    ``compile``, a graph of its own. With ``buckets > 0`` it can be compiled; with 0 the config refuses it.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"duration": (0.3, 0.5), "min_seq_length": (8, 16)}
    workload_arguments: ClassVar[frozenset[str] | None] = frozenset()  # its check reads the batch alone

    @checked_arguments(rules=(max_not_below_min,))
    def __init__(
        self,
        duration: Annotated[float, Field(ge=0, le=1)] = 0.3,
        min_seq_length: Annotated[int, Field(ge=1)] = 8,
        max_seq_length: Annotated[int, Field(ge=1)] = 1024,
        step_size: Annotated[int, Field(ge=1)] = 8,
        truncate: bool = True,
        buckets: Annotated[int, Field(ge=0)] = 4,
    ) -> None:
        self.duration = duration
        self.min_seq_length = min_seq_length
        self.max_seq_length = max_seq_length
        self.step_size = step_size
        self.truncate = truncate
        self.buckets = buckets

    @classmethod
    def compiles_with(cls, arguments: Mapping[str, Any]) -> bool:
        return arguments["buckets"] > 0  # a few lengths, each compiled once; none: every length a recompilation

    def seq_length_at(self, elapsed: float) -> int:
        return seq_length_at(
            elapsed, self.duration, self.min_seq_length, self.max_seq_length, self.step_size, self.buckets
        )

    @property
    def lengths(self) -> list[int]:
        """Every length the warmup can train on, the full one last."""
        step = bucket_step(self.min_seq_length, self.max_seq_length, self.step_size, self.buckets)
        n_steps = max(1, (self.max_seq_length - self.min_seq_length) // step)
        below = [self.min_seq_length + step * k for k in range(n_steps)]
        return [length for length in below if length < self.max_seq_length] + [self.max_seq_length]

    def check_workload(self, model: Any, batch: Any) -> Inapplicable | None:
        """It cuts dim 1 of every tensor of the batch: only token ids (an integer ``[batch, sequence]`` tensor) have
        a sequence there; an image's dim 1 is its channels, which it would leave alone or cut."""
        del model
        tensors = (
            list(batch.values()) if isinstance(batch, Mapping) else list(batch) if isinstance(batch, Sequence) else []
        )
        tensors = [t for t in tensors if isinstance(t, torch.Tensor)]
        if any(t.dim() >= 2 and not t.is_floating_point() and t.dtype != torch.bool for t in tensors):
            return None
        shown = ", ".join(f"{str(t.dtype).removeprefix('torch.')} {tuple(t.shape)}" for t in tensors) or "no tensor"
        return Inapplicable(f"the batch holds no token sequences (an integer [batch, sequence] tensor), only {shown}")

    def match(self, event: Event, state: State) -> bool:
        return event is Event.AFTER_DATALOADER

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        seq_length = self.seq_length_at(state.get_elapsed_duration().value)
        state.batch = set_batch_sequence_length(state.batch, seq_length, self.truncate)
        tensors = state.batch.values() if isinstance(state.batch, Mapping) else state.batch
        rows, length = next(t.shape[:2] for t in tensors if isinstance(t, torch.Tensor) and t.dim() >= 2)
        logger.log_metrics(
            {"seq_length_warmup/curr_seq_len": int(length), "seq_length_warmup/curr_bs": int(rows)}, state.step
        )
