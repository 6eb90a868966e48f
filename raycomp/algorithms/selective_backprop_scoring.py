"""SelectiveBackprop's selection pass on a training model: which layers run in which mode (``ScoringMode``),
the inputs' memory layout on the CPU (``ScoringLayout``), and the BatchNorm running statistics frozen for the
step on the kept examples (``freeze_running_stats``)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from raycomp.loop.batchnorm import running_stat_layers


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
    max-pool kernels run faster on them (the selection pass's forward: docs/benchmarks.md, issue 24).

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
