"""BatchNorm running statistics recomputed with the current weights, before each evaluation.

Running statistics are a moving average (momentum 0.1: about the last ten batches) of batch statistics taken
at the weights each batch was trained with, so they lag the weights: at a constant learning rate a 4-block conv
net on 32x32 images scored 8-20 points below what statistics recomputed over the training set gave. Methods
that train on part of each batch lag further (SelectiveBackprop, whose steps on the hardest examples move the
weights more: 0.53 against 0.98 in issue 35). So the Trainer recomputes them from the last few full training
batches (as the loader gave them, before any algorithm changed them) before every evaluation, for every model
with BatchNorm: a method and its baseline are evaluated the same way. Composer evaluates with the running
averages; ``Trainer(recompute_batchnorm=0)`` does too.

``recalibrate_batchnorm`` is the same recomputation for a hand-written loop.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.modules.batchnorm import _BatchNorm


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


@torch.no_grad()
def average_running_stats_over_ranks(model: nn.Module) -> None:
    """Every rank's BatchNorm running statistics replaced by their mean over ranks (one all-reduce).

    After each rank recomputed them from its own shard's batches, this makes the ranks agree (and pools
    their samples), so rank 0's checkpoint holds what every rank evaluated with. A no-op without DDP.
    """
    if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
        return
    layers = running_stat_layers(model)
    if not layers:
        return
    stats = [s for layer in layers for s in (layer.running_mean, layer.running_var) if s is not None]
    flat = torch.cat([s.reshape(-1).float() for s in stats])
    dist.all_reduce(flat)
    flat /= dist.get_world_size()
    offset = 0
    for s in stats:
        s.copy_(flat[offset : offset + s.numel()].view_as(s))
        offset += s.numel()


class RecentBatches:
    """The last ``size`` full training batches, kept (by reference, in memory only) to recompute from.

    The batches are data, not activations, so they never go stale; they are not checkpointed (a checkpoint
    keeps its size), and a run resumed mid-way between evaluations recomputes from those trained since.
    """

    def __init__(self, model: nn.Module, size: int) -> None:
        self.size = size if running_stat_layers(model) else 0  # nothing to keep for a model without BatchNorm
        self._batches: deque[Any] = deque(maxlen=self.size)

    def record(self, batch: Any) -> None:
        if self.size:
            self._batches.append(batch)

    def recompute(self, model: nn.Module, forget: bool = True) -> int:
        """``model``'s statistics from the batches kept since they were last forgotten, averaged over ranks."""
        used = recalibrate_batchnorm(model, self._batches)
        if forget:
            self.forget()
        if used:
            average_running_stats_over_ranks(model)
        return used

    def forget(self) -> None:
        self._batches.clear()
