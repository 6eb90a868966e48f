"""BlurPool (Zhang 2019): low-pass filter before every downsampling, so that shifting the input by a pixel
changes the output less (anti-aliasing), which tends to improve accuracy for a little compute.

A strided convolution or a max-pool samples its input every ``stride`` pixels; high frequencies then
alias. Model surgery replaces strided ``Conv2d`` layers (with at least ``min_channels`` input channels:
the blur costs the most relative to thin early layers) by ``BlurConv2d`` and every ``MaxPool2d`` by
``BlurMaxPool2d``, both blurring with the binomial filter ``[1 2 1]^T [1 2 1] / 16``, as in Composer.

Two differences from Composer, both to keep the surgery safe to run twice and invisible to optimizers:
- ``BlurConv2d`` wraps the original convolution module instead of copying its weights into a new one,
  so every Parameter keeps its identity and optimizers built on ``model.parameters()`` before the
  surgery still train the model (Composer had to patch their param groups).
- The surgery does not look inside layers it already produced. Composer's does, so applying it twice
  blurred the strided convolution inside a ``BlurConv2d`` again (a double blur).

The state dict's keys change (``conv.weight`` becomes ``conv.conv.weight``, plus the filter buffers), so a
checkpoint trained with BlurPool cannot be loaded without it: ``required_on_load()`` is True, and the
checkpoint loader re-applies the surgery (``load_recreate_required_algorithms=True``) or refuses.

Runs on INIT, before the Trainer builds its default optimizer, moves the model and wraps it in DDP. The
layers themselves are in ``raycomp.algorithms.blurpool_layers``.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Annotated

import torch
from pydantic import Field
from torch import nn

from raycomp.algorithms._surgery import ModelSurgery
from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.blurpool_layers import BlurConv2d, BlurMaxPool2d
from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State


def apply_blurpool(
    model: nn.Module,
    replace_convs: bool = True,
    replace_maxpools: bool = True,
    blur_first: bool = True,
    min_channels: int = 16,
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None = None,
) -> nn.Module:
    """Add anti-aliasing to ``model`` in place: strided convs become ``BlurConv2d``, max-pools ``BlurMaxPool2d``.

    Only convolutions with a stride above 1 and at least ``min_channels`` input channels are replaced.
    Applying it again changes nothing. ``optimizers`` is accepted for Composer's signature only: the
    surgery keeps every Parameter object, so optimizers built before it need no update.
    """
    del optimizers  # nothing to patch: see the docstring
    device = next((t.device for t in (*model.parameters(), *model.buffers())), torch.device("cpu"))
    _replace_children(model, replace_convs, replace_maxpools, blur_first, min_channels, device, {})
    if not any(isinstance(m, BlurConv2d | BlurMaxPool2d) for m in model.modules()):
        reason = "the model has no strided Conv2d with >= min_channels input channels and no MaxPool2d"
        warnings.warn(NoEffectWarning("BlurPool changed no layer", reason), stacklevel=2)
    return model


def _replace_children(
    module: nn.Module,
    replace_convs: bool,
    replace_maxpools: bool,
    blur_first: bool,
    min_channels: int,
    device: torch.device,
    done: dict[int, nn.Module],
) -> None:
    """Replace eligible children depth-first; ``done`` maps a replaced module to its replacement, so a
    module shared by several parents gets one replacement, and a Blur layer is never entered."""
    for name, child in list(module.named_children()):
        if id(child) in done:
            setattr(module, name, done[id(child)])
            continue
        if isinstance(child, BlurConv2d | BlurMaxPool2d):
            continue  # already anti-aliased: the strided conv inside a BlurConv2d must not be blurred again
        replacement: nn.Module | None = None
        if replace_convs and isinstance(child, nn.Conv2d):
            if max(child.stride) > 1 and child.in_channels >= min_channels:
                replacement = BlurConv2d.from_conv2d(child, blur_first=blur_first)
        elif replace_maxpools and isinstance(child, nn.MaxPool2d) and not child.return_indices:
            replacement = BlurMaxPool2d.from_maxpool2d(child).to(device)
        if replacement is None:
            _replace_children(child, replace_convs, replace_maxpools, blur_first, min_channels, device, done)
        else:
            done[id(child)] = replacement
            setattr(module, name, replacement)


class BlurPool(ModelSurgery):
    """Applies ``apply_blurpool`` to the model on INIT; ``required_on_load``, as it is model surgery."""

    @checked_arguments
    def __init__(
        self,
        replace_convs: bool = True,
        replace_maxpools: bool = True,
        blur_first: bool = True,
        min_channels: Annotated[int, Field(ge=1)] = 16,
    ) -> None:
        if not (replace_convs or replace_maxpools):
            warnings.warn("BlurPool with replace_convs=False and replace_maxpools=False changes nothing", stacklevel=2)
        self.replace_convs, self.replace_maxpools = replace_convs, replace_maxpools
        self.blur_first, self.min_channels = blur_first, min_channels

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        apply_blurpool(
            state.model,
            self.replace_convs,
            self.replace_maxpools,
            self.blur_first,
            self.min_channels,
            optimizers=state.optimizers,
        )
        modules = list(state.model.modules())
        logger.log_metrics(
            {
                "blurpool/num_blurconv_layers": sum(isinstance(m, BlurConv2d) for m in modules),
                "blurpool/num_blurpool_layers": sum(isinstance(m, BlurMaxPool2d) for m in modules),
            },
            state.step,
        )
