"""Events: the named points of the training loop where algorithms and callbacks run."""

from __future__ import annotations

from enum import Enum


class Event(Enum):
    """A point in the training loop; its value is the lowercase name.

    One naming rule decides the pairs, as in Composer: an event whose name *begins* with ``before_`` is a
    *before* event and one beginning with ``after_`` an *after* event (``BEFORE_LOSS``/``AFTER_LOSS``); only
    after events run their algorithms in reverse (``set_filo_order``). The evaluation loop's
    ``EVAL_BEFORE_*``/``EVAL_AFTER_*`` are evaluation events, neither before nor after, and so are
    ``*_START``/``*_END``, which bracket a span for timing only: the FILO pass leaves their order alone.
    """

    INIT = "init"
    BEFORE_LOAD = "before_load"
    AFTER_LOAD = "after_load"
    FIT_START = "fit_start"
    EPOCH_START = "epoch_start"
    BEFORE_DATALOADER = "before_dataloader"
    AFTER_DATALOADER = "after_dataloader"
    BATCH_START = "batch_start"
    BEFORE_TRAIN_BATCH = "before_train_batch"
    BEFORE_FORWARD = "before_forward"
    AFTER_FORWARD = "after_forward"
    BEFORE_LOSS = "before_loss"
    AFTER_LOSS = "after_loss"
    BEFORE_BACKWARD = "before_backward"
    AFTER_BACKWARD = "after_backward"
    AFTER_TRAIN_BATCH = "after_train_batch"
    BATCH_END = "batch_end"
    BATCH_CHECKPOINT = "batch_checkpoint"
    EPOCH_END = "epoch_end"
    EPOCH_CHECKPOINT = "epoch_checkpoint"
    FIT_END = "fit_end"
    EVAL_BEFORE_ALL = "eval_before_all"
    EVAL_START = "eval_start"
    EVAL_BATCH_START = "eval_batch_start"
    EVAL_BEFORE_FORWARD = "eval_before_forward"
    EVAL_AFTER_FORWARD = "eval_after_forward"
    EVAL_BATCH_END = "eval_batch_end"
    EVAL_END = "eval_end"
    EVAL_AFTER_ALL = "eval_after_all"

    @property
    def is_before_event(self) -> bool:
        """A ``before_*`` event, as Composer's (the evaluation loop's ``EVAL_BEFORE_*`` are not)."""
        return self.value.startswith("before_")

    @property
    def is_after_event(self) -> bool:
        """An ``after_*`` event, as Composer's: ``EVAL_AFTER_FORWARD`` is an evaluation event, not one."""
        return self.value.startswith("after_")

    @property
    def is_eval(self) -> bool:
        return self.value.startswith("eval_")

    def __str__(self) -> str:
        return self.value
