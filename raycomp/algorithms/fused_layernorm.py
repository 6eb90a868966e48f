"""FusedLayerNorm (Composer): swap every ``nn.LayerNorm`` for a fused implementation where one exists.

What "fused" can mean here, honestly: torch's own ``nn.LayerNorm`` already runs as one native kernel
(``aten::native_layer_norm``) on CUDA and on the CPU, so without NVIDIA apex there is nothing faster to swap
in. ``backend="auto"`` takes ``apex.normalization.FusedLayerNorm`` when apex is importable and CUDA is
available, and otherwise ``TorchFusedLayerNorm``: a ``nn.LayerNorm`` subclass whose forward is that single
native op, numerically identical to ``nn.LayerNorm`` and just as fast. So on a CPU, or a GPU without apex, the
swap is equivalent to doing nothing (docs/methods/fused_layernorm.md measures it); it still marks which
LayerNorms were seen, which keeps the ordering below testable.

The surgery keeps every Parameter object (the new module holds the old ``weight`` and ``bias``), so
optimizers built before it need no update, and the state_dict keys stay the same.

It runs on INIT *last* (``last_on``; Composer's ``sort_fused_layernorm_last`` pass), after every other
surgery, so that LayerNorms other algorithms add on INIT are swapped too.
"""

from __future__ import annotations

import importlib.util
import warnings
from typing import Literal

import torch
from torch import nn
from torch.nn import functional as F

from raycomp.algorithms._surgery import ModelSurgery
from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

Backend = Literal["auto", "apex", "torch"]


class TorchFusedLayerNorm(nn.LayerNorm):
    """``nn.LayerNorm`` as one native fused op: torch's layer_norm kernel is already fused on CPU and CUDA."""

    def forward(self, input: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)


def apex_available() -> bool:
    """True when NVIDIA apex's fused LayerNorm can run: apex importable and a CUDA device present."""
    return torch.cuda.is_available() and importlib.util.find_spec("apex") is not None


def apply_fused_layernorm(
    model: nn.Module,
    backend: Backend = "auto",
    optimizers: torch.optim.Optimizer | list[torch.optim.Optimizer] | None = None,
) -> int:
    """Replace each ``nn.LayerNorm`` of ``model`` in place; returns how many were replaced.

    ``backend``: ``"apex"`` (needs apex and CUDA; an ImportError otherwise), ``"torch"``
    (``TorchFusedLayerNorm``) or ``"auto"`` (apex when available, else torch). Modules already swapped are
    left alone, so applying it twice changes nothing. ``optimizers`` is accepted for Composer's signature:
    the Parameters are kept, so nothing needs patching.
    """
    del optimizers
    if backend not in ("auto", "apex", "torch"):
        raise ValueError(f"backend must be 'auto', 'apex' or 'torch', got {backend!r}")
    use_apex = backend == "apex" or (backend == "auto" and apex_available())
    if use_apex and not apex_available():
        raise ImportError("FusedLayerNorm backend='apex' needs NVIDIA apex installed and a CUDA device")
    done: dict[int, nn.Module] = {}
    _replace(model, use_apex, done)
    return len(done)


def _replace(module: nn.Module, use_apex: bool, done: dict[int, nn.Module]) -> None:
    for name, child in list(module.named_children()):
        if id(child) in done:
            setattr(module, name, done[id(child)])  # a LayerNorm shared by two parents: one replacement
        elif type(child) is nn.LayerNorm:  # subclasses (ours included) may change the computation: kept
            done[id(child)] = _fused(child, use_apex)
            setattr(module, name, done[id(child)])
        else:
            _replace(child, use_apex, done)


def _fused(layer_norm: nn.LayerNorm, use_apex: bool) -> nn.Module:
    """The replacement, on the meta device, then given ``layer_norm``'s own Parameters."""
    shape, eps, affine = layer_norm.normalized_shape, layer_norm.eps, layer_norm.elementwise_affine
    with torch.device("meta"):
        if use_apex:
            from apex.normalization import FusedLayerNorm as ApexFusedLayerNorm

            if layer_norm.elementwise_affine and layer_norm.bias is None:
                raise ValueError("apex's FusedLayerNorm has no bias=False; use backend='torch'")
            fused: nn.Module = ApexFusedLayerNorm(shape, eps=eps, elementwise_affine=affine)
        else:
            fused = TorchFusedLayerNorm(shape, eps=eps, elementwise_affine=affine, bias=layer_norm.bias is not None)
    fused.weight, fused.bias = layer_norm.weight, layer_norm.bias
    return fused


class FusedLayerNorm(ModelSurgery):
    """Applies ``apply_fused_layernorm`` on INIT, after every other algorithm; ``required_on_load``.

    Logs ``fused_layernorm/num_replaced`` and whether apex was used (``fused_layernorm/apex``).
    """

    last_on = frozenset({Event.INIT})

    @checked_arguments
    def __init__(self, backend: Backend = "auto") -> None:
        self.backend = backend

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        use_apex = self.backend == "apex" or (self.backend == "auto" and apex_available())
        replaced = apply_fused_layernorm(state.model, self.backend, optimizers=state.optimizers)
        if replaced == 0:
            warnings.warn(
                NoEffectWarning("FusedLayerNorm changed no layer", "the model has no nn.LayerNorm"), stacklevel=2
            )
        logger.log_metrics(
            {"fused_layernorm/num_replaced": replaced, "fused_layernorm/apex": int(use_apex)}, state.step
        )
