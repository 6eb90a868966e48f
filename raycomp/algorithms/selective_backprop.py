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

On the CPU the selection pass takes its images channels-last (``ScoringLayout``), which cuts its cost by
1.4-2.5x for convolutional models there.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, ClassVar

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from raycomp.algorithms._workload import batch_pair, resized_refusal, shape_of
from raycomp.algorithms.arguments import checked_arguments
from raycomp.base.errors import one_line
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.compiling import compile_model
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.precision import autocast
from raycomp.core.state import State
from raycomp.loop.batchnorm import running_stat_layers

_INTERPOLATION = {3: "linear", 4: "bilinear", 5: "trilinear"}


def should_selective_backprop(
    current_duration: float, batch_idx: int, start: float = 0.5, end: float = 0.9, interrupt: int = 2
) -> bool:
    """True inside ``[start, end)`` of training, except on every ``interrupt``-th batch of an epoch.

    ``interrupt=0`` selects on every batch of the interval; ``interrupt=2`` alternates selected and
    vanilla batches; ``interrupt=1`` makes every batch vanilla.
    """
    in_interval = start <= current_duration < end
    is_selection_step = interrupt == 0 or (batch_idx + 1) % interrupt != 0
    return in_interval and is_selection_step


def select_using_loss(
    input: torch.Tensor,
    target: torch.Tensor,
    model: Callable[[torch.Tensor], torch.Tensor],
    loss_fun: Callable[..., torch.Tensor],
    keep: float = 0.5,
    scale_factor: float = 1,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The ``int(keep * N)`` examples (at least one) of the batch sampled by loss rank, in batch order.

    ``loss_fun(outputs, targets, reduction='none')`` must return per-sample losses. With
    ``scale_factor < 1`` the selection pass sees 3-, 4- or 5-D inputs downsampled by that factor; the
    kept examples are returned at full size. If ``model`` is an ``nn.Module`` it runs in eval mode.
    """
    if scale_factor > 1:
        raise ValueError(f"scale_factor must be <= 1 (it only downsamples), got {scale_factor}")
    _check_loss_fun(loss_fun)
    if not 0 < keep <= 1:
        raise ValueError(f"keep must be in (0, 1], got {keep}")
    with eval_mode(model if isinstance(model, nn.Module) else None):
        return _select(input, target, model, loss_fun, keep, scale_factor)


def _select(
    input: torch.Tensor,
    target: torch.Tensor,
    model: Callable[[torch.Tensor], torch.Tensor],
    loss_fun: Callable[..., torch.Tensor],
    keep: float,
    scale_factor: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``select_using_loss`` without its checks, for the Algorithm's per-batch call: no device sync."""
    num_samples = input.shape[0]
    num_keep = max(1, int(keep * num_samples))
    with torch.no_grad():
        losses = loss_fun(model(downsample(input, scale_factor)), target, reduction="none")
    losses = losses.detach().float().reshape(num_samples, -1).mean(dim=1)
    by_loss = losses.argsort()
    percentiles = (torch.arange(num_samples, device=losses.device, dtype=torch.float32) + 0.5) / num_samples
    chosen_ranks = torch.multinomial(percentiles ** (1.0 / keep - 1.0), num_keep, replacement=False)
    chosen = by_loss[chosen_ranks].sort().values
    return input[chosen], target[chosen]


def downsample(input: torch.Tensor, scale_factor: float) -> torch.Tensor:
    """Spatially shrink an (N, C, ...) batch of 1-, 2- or 3-D signals; a factor of 1 returns it as is."""
    if scale_factor == 1:
        return input
    if input.dim() not in _INTERPOLATION or not input.is_floating_point():
        raise ValueError(
            f"Downsampling needs a 3-, 4- or 5-D float input, got {input.dtype} of shape {tuple(input.shape)}; "
            "inputs such as token ids cannot be downsampled: set selective_backprop's scale_factor to 1"
        )
    return F.interpolate(input, scale_factor=scale_factor, mode=_INTERPOLATION[input.dim()], align_corners=False)


@contextlib.contextmanager
def eval_mode(module: nn.Module | None) -> Iterator[None]:
    """Run ``module`` in eval mode, then give every submodule back the mode it had."""
    if module is None:
        yield
        return
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield
    finally:
        for submodule, training in modes:
            submodule.training = training


def _check_loss_fun(loss_fun: Callable[..., torch.Tensor]) -> None:
    if not callable(loss_fun):
        raise TypeError(f"loss_fun must be callable, got {type(loss_fun).__name__}")
    try:
        parameters = inspect.signature(loss_fun).parameters.values()
    except (TypeError, ValueError):  # some builtins have no signature; trust them
        return
    if not any(p.name == "reduction" or p.kind is p.VAR_KEYWORD for p in parameters):
        raise TypeError("loss_fun must take a `reduction` keyword argument, to be called with reduction='none'")


class ScoringMode:
    """Eval mode for every layer but BatchNorm, which uses and updates batch statistics; modes given back.

    The selection pass sees the whole batch, so its BatchNorm statistics are a fair sample of the data;
    dropout draws no mask, so the losses rank the examples, not the noise. The module lists are taken once
    per model, and the flags set directly: ``Module.train()`` recursing over a ResNet every batch is host
    time that SB's saving has to pay for.
    """

    def __init__(self) -> None:
        self._model: nn.Module | None = None
        self._modules: list[nn.Module] = []
        self.batchnorms: list[_BatchNorm] = []

    def _layers_of(self, model: nn.Module) -> None:
        if model is not self._model:
            self._model = model
            self._modules = list(model.modules())
            self.batchnorms = running_stat_layers(model)

    @contextlib.contextmanager
    def __call__(self, model: nn.Module) -> Iterator[None]:
        self._layers_of(model)
        modes = [m.training for m in self._modules]
        for module in self._modules:
            module.training = False
        for layer in self.batchnorms:
            layer.training = True
        try:
            yield
        finally:
            for module, training in zip(self._modules, modes, strict=True):
                module.training = training


class ScoringLayout:
    """Channels-last inputs for the selection pass on the CPU, where PyTorch's convolution, BatchNorm and
    max-pool kernels run faster on them (the cnn's scoring forward at scale_factor 0.5, batch 128, one
    thread: 6 ms against 16 ms; ResNet-20 18 against 25 ms).

    Every op sees the same logical tensor, so the losses are the same up to float rounding; only a
    ``.view`` of an activation that is no longer contiguous can fail. The first selection pass of each
    model therefore tries it and, on a ``RuntimeError``, puts the BatchNorm statistics back and scores in
    the model's own layout from then on. The training step is left in the loader's layout (that is the
    ChannelsLast algorithm's business); on a GPU nothing changes (not measured there).
    """

    def __init__(self) -> None:
        self.channels_last: bool | None = None  # None: not tried yet on this model

    def forward(
        self,
        score: Callable[[Any], torch.Tensor],
        input: torch.Tensor,
        target: torch.Tensor,
        batchnorms: list[_BatchNorm],
    ) -> torch.Tensor:
        if self.channels_last is False or input.dim() != 4 or input.device.type != "cpu":
            return score((input, target))
        nhwc = input.contiguous(memory_format=torch.channels_last)
        if self.channels_last:
            return score((nhwc, target))
        saved = [[buffer.clone() for buffer in layer.buffers(recurse=False)] for layer in batchnorms]
        try:
            outputs = score((nhwc, target))
        except RuntimeError:
            for layer, buffers in zip(batchnorms, saved, strict=True):
                for buffer, before in zip(layer.buffers(recurse=False), buffers, strict=True):
                    buffer.copy_(before)
            self.channels_last = False
            return score((input, target))
        self.channels_last = True
        return outputs


def freeze_running_stats(layers: list[_BatchNorm], frozen: bool) -> None:
    """Train-mode BatchNorm layers normalise with batch statistics and, while frozen, do not update
    their running ones (``track_running_stats=False`` is how torch's forward reads it)."""
    for layer in layers:
        layer.track_running_stats = not frozen


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
        self._score: Callable[[Any], torch.Tensor] | None = None  # the model's forward, compiled with the Trainer
        self.last_num_kept = 0
        self.last_num_samples = 0
        self.last_selection_s = 0.0

    def _scoring_forward(self, state: State) -> Callable[[Any], torch.Tensor]:
        """The model, compiled (static shapes) the first time if the Trainer compiles its own forward."""
        if self._score is None:
            model = state.model
            if state.compile_mode is None:
                self._score = model
            else:
                self._score = compile_model(model, state.compile_mode)
        return self._score

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
            self._score = None
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

        score = self._scoring_forward(state)
        with self._scoring_mode(model), autocast(state.precision, state.device):
            batchnorms = self._scoring_mode.batchnorms

            def forward(x: torch.Tensor) -> torch.Tensor:
                return self._layout.forward(score, x, target, batchnorms)

            kept = _select(input, target, forward, loss, self.keep, self.scale_factor)
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
