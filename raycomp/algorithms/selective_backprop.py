"""SelectiveBackprop (Jiang et al. 2019): backpropagate only through the examples that still teach.

An extra no-grad forward pass, optionally on downsampled inputs, ranks the batch by per-sample loss;
``int(keep * N)`` examples are kept, and the forward/backward that follow run on them alone.

Selection is *loss-rank-weighted sampling*, not top-k, as in the paper and in Composer: the example of
loss rank ``r`` (0 = lowest) of ``N`` is drawn, without replacement, with weight ``((r + 0.5) / N) **
(1 / keep - 1)``. Top-k would return the same hardest examples every time — on data with label noise
those are mostly the mislabelled ones — and its gradient is biased towards them; sampling still
favours high loss but keeps some easy examples in every batch.

The selection pass runs the model in eval mode (no dropout mask drawn) except for its BatchNorm layers, which
normalise with the batch's statistics and fold them into their running statistics, as in Composer (with
``scale_factor < 1`` the kept subset's full-size forward updates them too). Running statistics still lag the
weights, and steps on the hardest examples move the weights further than full batches do (issue 35: a 4-block
conv net at a constant lr scored 0.53 as trained against 0.98 with recomputed statistics), so raycomp's Trainer
recomputes them before every evaluation from the last full batches the loader gave, for every model, SB's and its
baseline's alike (``raycomp.loop.batchnorm``). Nothing is stored by SB and nothing goes to checkpoints.
docs/methods/selective_backprop.md has the measurements.

Eager on the CPU, the selection pass takes its images channels-last (``ScoringLayout``), which cuts its cost for
convolutional models there (docs/benchmarks.md, issue 24). Under ``compile`` the whole selection is one compiled
function with nothing in it that waits for the device (issue 58).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from raycomp.algorithms._workload import batch_pair, resized_refusal, shape_of
from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.loss_selection import downsample, select_unchecked, should_selective_backprop
from raycomp.algorithms.loss_selection import select_using_loss as select_using_loss  # Composer's import path
from raycomp.algorithms.selective_backprop_scoring import ScoringLayout, ScoringMode, freeze_running_stats
from raycomp.base.errors import one_line
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.compiling import compile_model
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.precision import autocast
from raycomp.core.state import State

Selection = Callable[[torch.Tensor, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]
LossFunction = Callable[..., torch.Tensor]


def start_before_end(arguments: Any) -> None:
    """SelectiveBackprop's window: it starts before it ends."""
    if not arguments.start < arguments.end:
        raise ValueError(
            f"SelectiveBackprop needs 0 <= start < end <= 1, got start={arguments.start}, end={arguments.end}"
        )


class SelectiveBackprop(Algorithm):
    """Prunes each batch to its ``keep`` fraction by loss on AFTER_DATALOADER, between ``start`` and ``end``.

    Runs on INIT (to take the model's loss function) and AFTER_DATALOADER. After each selected batch,
    ``last_num_kept`` and ``last_num_samples`` tell what it kept; with a logger destination it also logs
    ``selective_backprop/fraction_kept`` and ``selective_backprop/selection_s`` (host time, so on a GPU the
    launch time; the Engine's trace times every run anyway). Nothing is synchronised with the device.

    BatchNorm running statistics move in the selection pass (over the full batch); with ``scale_factor``
    1 they are frozen from then until AFTER_TRAIN_BATCH, so the step on the kept examples does not move them.
    The Trainer recomputes them from full batches before each evaluation (``Trainer(recompute_batchnorm=...)``).

    ``first_on``: the Engine's passes run it before the other algorithms on AFTER_DATALOADER, so it ranks
    and prunes the batch as the loader gave it, before ProgressiveResizing or others change it.
    """

    first_on: ClassVar[frozenset[Event]] = frozenset({Event.AFTER_DATALOADER})
    workload_arguments: ClassVar[frozenset[str] | None] = frozenset({"scale_factor"})

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {
        "keep": (0.3, 0.5, 0.7),
        "scale_factor": (0.5, 1.0),
        "start": (0.0, 0.5),
        "end": (0.9, 1.0),
    }

    @checked_arguments(rules=(start_before_end,))
    def __init__(
        self,
        start: Annotated[float, Field(ge=0, le=1)] = 0.5,
        end: Annotated[float, Field(ge=0, le=1)] = 0.9,
        keep: Annotated[float, Field(gt=0, le=1)] = 0.5,
        scale_factor: Annotated[float, Field(gt=0, le=1)] = 0.5,
        interrupt: Annotated[int, Field(ge=0)] = 2,
    ) -> None:
        self.start, self.end, self.keep = start, end, keep
        self.scale_factor, self.interrupt = scale_factor, interrupt
        self._loss_fn: Callable[..., torch.Tensor] | None = None
        self._frozen: list[_BatchNorm] = []  # BatchNorm layers frozen for this batch's training step
        self._scoring_mode = ScoringMode()
        self._layout = ScoringLayout()
        self._compiled_selection: Selection | None = None  # built the first time, if the Trainer compiles
        self.last_num_kept = 0
        self.last_num_samples = 0
        self.last_selection_s = 0.0

    def _selection(self, state: State, loss: LossFunction) -> Selection:
        """Scoring, ranking, drawing and gathering the kept rows as one function of ``(input, target)``.

        When the Trainer compiles its step, this is compiled too (static shapes), once: one graph with no host
        synchronisation in it (``sample_by_loss_rank``), which ``reduce-overhead`` can replay as one CUDA graph,
        and which switching SB on and off across the run does not recompile. Eager, the CPU scores channels-last
        (``ScoringLayout``).
        """
        model, keep, scale_factor = state.model, self.keep, self.scale_factor
        if state.compile_mode is None:
            batchnorms = self._scoring_mode.batchnorms

            def eager(input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                def forward(x: torch.Tensor) -> torch.Tensor:
                    return self._layout.forward(model, x, target, batchnorms)

                return select_unchecked(input, target, forward, loss, keep, scale_factor)

            return eager
        if self._compiled_selection is None:

            def score_and_select(input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
                return select_unchecked(input, target, lambda x: model((x, target)), loss, keep, scale_factor)

            self._compiled_selection = compile_model(score_and_select, state.compile_mode)
        return self._compiled_selection

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """Selection ranks ``(input, target)`` samples by one loss each (``loss(..., reduction="none")``); with
        ``scale_factor < 1`` the inputs must be images that the model takes at the downsampled size."""
        if batch_pair(batch) is None:
            return Inapplicable(f"the batch is {shape_of(batch)}; selection needs (input, target) pairs")
        if self.scale_factor < 1:
            refusal = resized_refusal(model, batch, lambda x: downsample(x, self.scale_factor), "set it to 1")
            if refusal:
                return Inapplicable(refusal, "scale_factor")
        try:
            losses = model.loss(model(batch), batch, reduction="none")
        except Exception as error:
            return Inapplicable(f"the model's loss(outputs, batch, reduction='none') failed: {one_line(error)}")
        samples = len(batch[0])
        if not isinstance(losses, torch.Tensor) or losses.dim() == 0 or losses.shape[0] != samples:
            shown = shape_of(losses)
            return Inapplicable(f"loss(..., reduction='none') gave {shown}; selection needs one loss per sample")
        return None

    def match(self, event: Event, state: State) -> bool:
        if event is Event.INIT:
            return True
        if event is Event.AFTER_TRAIN_BATCH:
            return bool(self._frozen)
        if event is not Event.AFTER_DATALOADER:
            return False
        elapsed = state.get_elapsed_duration().value
        return should_selective_backprop(elapsed, state.batch_idx, self.start, self.end, self.interrupt)

    def apply(self, event: Event, state: State, logger: Logger | None = None) -> None:
        """``logger`` may be None when called by hand, as Composer's seed example does: nothing is then logged."""
        if event is Event.INIT:
            self._loss_fn = state.model.loss
            self._compiled_selection = None
            self._layout = ScoringLayout()
            return
        if event is Event.AFTER_TRAIN_BATCH:
            freeze_running_stats(self._frozen, False)
            self._frozen = []
            return
        model = state.model
        loss_fn = self._loss_fn or model.loss
        input, target = state.batch_pair
        timed = logger is not None and bool(logger.destinations)
        start = time.perf_counter() if timed else 0.0

        def loss(outputs: torch.Tensor, targets: torch.Tensor, reduction: str = "none") -> torch.Tensor:
            return loss_fn(outputs.float(), (None, targets), reduction=reduction)

        with self._scoring_mode(model), autocast(state.precision, state.device):
            kept = self._selection(state, loss)(input, target)
        state.batch = type(state.batch)(kept)
        if self.scale_factor == 1:
            self._frozen = self._scoring_mode.batchnorms
            freeze_running_stats(self._frozen, True)
        self.last_num_samples, self.last_num_kept = input.shape[0], kept[0].shape[0]
        if timed:
            self.last_selection_s = time.perf_counter() - start
            logger.log_metrics(
                {
                    "selective_backprop/fraction_kept": self.last_num_kept / self.last_num_samples,
                    "selective_backprop/selection_s": self.last_selection_s,
                },
                state.step,
            )
