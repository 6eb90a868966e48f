"""Recompute BatchNorm running statistics from chosen batches: for a hand-written loop whose statistics are biased.

Running statistics are an average of the batches a model was trained on. When those batches are not a fair
sample of the data (SelectiveBackprop trains on the hardest examples of each batch), evaluation normalises
with the wrong statistics. ``recalibrate_batchnorm`` resets them and averages them afresh, with the current
weights, over batches that are a fair sample.
"""

from __future__ import annotations

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
