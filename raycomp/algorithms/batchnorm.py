"""Recompute BatchNorm running statistics from chosen batches: what SelectiveBackprop does before it is scored.

Running statistics are an average of the batches a model was trained on. When those batches are not a fair
sample of the data (SelectiveBackprop trains on the hardest examples of each batch), evaluation normalises
with the wrong statistics. ``recalibrate_batchnorm`` resets them and averages them afresh, with the current
weights, over batches that are a fair sample.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm

from raycomp.core.precision import autocast
from raycomp.core.state import State


def running_stat_layers(model: nn.Module) -> list[_BatchNorm]:
    """The BatchNorm (and SyncBatchNorm) layers of ``model`` that keep running statistics."""
    return [m for m in model.modules() if isinstance(m, _BatchNorm) and m.track_running_stats]


@torch.no_grad()
def recalibrate_batchnorm(model: nn.Module, batches: Iterable[Any], forward: Callable[[Any], Any] | None = None) -> int:
    """Replace every BatchNorm layer's running statistics by their plain average over ``batches``.

    Each batch goes through ``forward`` (default: ``model``) with only the BatchNorm layers in train mode,
    so dropout draws no mask and no gradient is taken; each layer's mode and momentum are given back.
    Returns the number of batches used; with none, nothing changes.
    """
    batches = list(batches)
    layers = running_stat_layers(model)
    if not batches or not layers:
        return 0
    modes = [(m, m.training) for m in model.modules()]
    momenta = [layer.momentum for layer in layers]
    model.eval()
    for layer in layers:
        layer.reset_running_stats()
        layer.momentum = None  # a cumulative average: every batch counts the same
        layer.train()
    try:
        for batch in batches:
            (forward or model)(batch)
    finally:
        for layer, momentum in zip(layers, momenta, strict=True):
            layer.momentum = momentum
        for module, training in modes:
            module.training = training
    return len(batches)


def share_statistics(model: nn.Module, world_size: int) -> None:
    """Give every rank rank 0's running statistics, as the Trainer does with all buffers after each step.

    Rank 0's, not an average over ranks: only rank 0's kept batches are checkpointed, so a restarted rank
    could not recompute its own share, and the resumed run would differ from one never stopped.
    """
    if world_size == 1:
        return
    for layer in running_stat_layers(model):
        for buffer in (layer.running_mean, layer.running_var, layer.num_batches_tracked):
            dist.broadcast(buffer, 0)


class FullBatches:
    """The last ``size`` full batches an algorithm changed before training on them, and whether it changed
    one since the statistics were last recomputed: what an algorithm needs to recompute them before they
    are scored. The batches are checkpointed (on the CPU) so that a resumed run recomputes from the same.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.batches: deque[tuple[torch.Tensor, torch.Tensor]] = deque(maxlen=size)
        self.pending = False

    def keep(self, input: torch.Tensor, target: torch.Tensor) -> None:
        """Keep a full batch (a reference, no copy) that the algorithm is about to train on only in part."""
        if self.size:
            self.batches.append((input, target))
            self.pending = True

    def recalibrate(self, state: State) -> None:
        """Recompute the model's statistics from the kept batches, under the run's precision, the same on all ranks."""
        device = next(state.model.parameters()).device
        with autocast(state.precision, state.device):
            recalibrate_batchnorm(state.model, [(x.to(device), y.to(device)) for x, y in self.batches])
        share_statistics(state.model, state.world_size)
        self.pending = False

    def state_dict(self) -> dict[str, Any]:
        return {"full_batches": [[x.cpu(), y.cpu()] for x, y in self.batches], "pending": self.pending}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """A checkpoint from before recalibration existed has no such state: none kept, none pending."""
        self.batches.clear()
        self.batches.extend((x, y) for x, y in state.get("full_batches", []))
        self.pending = bool(state.get("pending", False))
