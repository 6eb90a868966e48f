"""Selecting a batch's examples by their loss: SelectiveBackprop as functions, for any training loop
(``raycomp.functional``; Composer's ``composer.functional``). The ``SelectiveBackprop`` algorithm
(``selective_backprop.py``) calls the same selection every selected batch.

Selection is loss-rank-weighted sampling, not top-k: the example of loss rank ``r`` (0 = lowest) of ``N`` is
drawn, without replacement, with weight ``((r + 0.5) / N) ** (1 / keep - 1)``.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator

import torch
import torch.nn.functional as F
from torch import nn

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
        return select_unchecked(input, target, model, loss_fun, keep, scale_factor)


def select_unchecked(
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
    chosen = sample_by_loss_rank(losses, num_keep, keep)
    return input[chosen], target[chosen]


def sample_by_loss_rank(losses: torch.Tensor, num_keep: int, keep: float) -> torch.Tensor:
    """The indices, in batch order, of ``num_keep`` examples drawn without replacement, the example of loss rank
    ``r`` with weight ``((r + 0.5) / N) ** (1 / keep - 1)``.

    The draw is ``torch.multinomial(weights, num_keep, replacement=False)``'s, written out: each weight over an
    Exp(1) variate, the largest ``num_keep`` kept (the exponential race, Efraimidis and Spirakis 2006), which is
    how multinomial draws without replacement, the same draws from the same generator. Multinomial first checks
    its weights on the host (``.item()``): on a GPU that stalls every selected batch and keeps a CUDA graph from
    capturing the selection. Here every shape is fixed by ``N`` and ``num_keep``, and nothing waits for the device.
    """
    num_samples = losses.shape[0]
    by_loss = losses.argsort()
    percentiles = (torch.arange(num_samples, device=losses.device, dtype=torch.float32) + 0.5) / num_samples
    weights = percentiles ** (1.0 / keep - 1.0)
    race = weights / torch.empty_like(weights).exponential_()
    chosen_ranks = race.argmax(dim=0, keepdim=True) if num_keep == 1 else race.topk(num_keep).indices
    return by_loss[chosen_ranks].sort().values


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
