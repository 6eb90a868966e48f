"""GatedLinearUnits (Shazeer 2020, "GLU Variants Improve Transformer"; Composer): gate the MLP's hidden layer.

A transformer MLP computes ``proj(act(fc(x)))``. Its GLU variant computes ``proj(act(x W) * (x V))``: a
second projection ``V`` multiplies the activated one elementwise (GEGLU with GELU, SwiGLU with SiLU, ReGLU
with ReLU). The surgery replaces ``fc`` with a ``GatedProjection`` (one ``Linear(d, 2h)`` whose halves are
``W`` and ``V``: one matmul), ``act`` with ``nn.Identity`` and ``proj`` with a ``Linear(h, d)``. As in the
paper, the hidden width ``h`` is ``width_ratio`` = 2/3 of the old one, so the parameter count stays about the
same (``3 d h`` against ``2 d 4d``); ``multiple_of`` rounds it for matmul-friendly shapes.

The new layers are freshly initialised (normal, with the standard deviation of the layers they replace, zero
biases), so the model's output changes: apply it before training, as the Algorithm does on INIT. Optimizers
built before the surgery are given the new Parameters in place of the old ones.

MLPs found: those a model registers with ``register_mlp`` (raycomp's GPT ``MLP``: ``fc``, ``act``, ``proj``;
``raycomp.models.gpt`` registers it, so this surgery imports no model and a user's MLP is found the same way) and
Hugging Face's ``GPT2MLP`` (``c_fc``, ``act``, ``c_proj``).
"""

from __future__ import annotations

import sys
import warnings
from typing import Annotated, Literal

import torch
from pydantic import Field
from torch import nn

from raycomp.algorithms._surgery import ModelSurgery, replace_params_in_optimizers
from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.warnings import NoEffectWarning
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State

Activation = Literal["gelu", "silu", "relu"]
_ACTIVATIONS: dict[str, type[nn.Module]] = {"gelu": nn.GELU, "silu": nn.SiLU, "relu": nn.ReLU}


class GatedProjection(nn.Module):
    """``act(x W + b) * (x V + c)`` from one ``Linear(in, 2 * hidden)`` (``W`` is its first half)."""

    def __init__(self, in_features: int, hidden_features: int, activation: Activation = "gelu") -> None:
        super().__init__()
        self.hidden_features = hidden_features
        self.fc = nn.Linear(in_features, 2 * hidden_features)
        self.act = _ACTIVATIONS[activation]()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, value = self.fc(x).chunk(2, dim=-1)
        return self.act(gate) * value


def gated_width(hidden: int, width_ratio: float = 2 / 3, multiple_of: int = 8) -> int:
    """``width_ratio * hidden`` rounded to a multiple of ``multiple_of`` (at least one multiple)."""
    return max(multiple_of, round(width_ratio * hidden / multiple_of) * multiple_of)


# (MLP class, input projection, activation, output projection), as models register them
_REGISTERED_MLPS: list[tuple[type[nn.Module], str, str, str]] = []


def register_mlp(mlp_class: type[nn.Module], fc: str = "fc", act: str = "act", proj: str = "proj") -> None:
    """Lets GatedLinearUnits gate ``mlp_class``, an MLP computing ``proj(act(fc(x)))``: ``fc`` and ``proj`` name its
    ``nn.Linear`` layers, ``act`` its activation module. Registering a class twice changes nothing."""
    layout = (mlp_class, fc, act, proj)
    if layout not in _REGISTERED_MLPS:
        _REGISTERED_MLPS.append(layout)


def _layouts() -> list[tuple[type[nn.Module], str, str, str]]:
    """(MLP class, input projection, activation, output projection) of the MLPs this surgery knows."""
    layouts = list(_REGISTERED_MLPS)
    gpt2 = sys.modules.get("transformers.models.gpt2.modeling_gpt2")  # only if the model could be one
    if gpt2 is not None:
        layouts.append((gpt2.GPT2MLP, "c_fc", "act", "c_proj"))
    return layouts


def _features(layer: nn.Module) -> tuple[int, int]:
    """(in, out) of a ``nn.Linear`` or a Hugging Face ``Conv1D`` (whose weight is stored [in, out])."""
    if isinstance(layer, nn.Linear):
        return layer.in_features, layer.out_features
    return layer.weight.shape[0], layer.weight.shape[1]


def apply_gated_linear_units(
    model: nn.Module,
    activation: Activation = "gelu",
    width_ratio: float = 2 / 3,
    multiple_of: int = 8,
    optimizers: torch.optim.Optimizer | list[torch.optim.Optimizer] | None = None,
) -> int:
    """Turn every known MLP of ``model`` into its GLU variant in place; returns how many were changed.

    MLPs already gated are left alone, so applying it twice changes nothing.
    """
    if activation not in _ACTIVATIONS:
        raise ValueError(f"activation must be one of {', '.join(_ACTIVATIONS)}, got {activation!r}")
    old_params: list[nn.Parameter] = []
    new_params: list[nn.Parameter] = []
    changed = 0
    for module in list(model.modules()):
        for cls, fc_name, act_name, proj_name in _layouts():
            fc, proj = getattr(module, fc_name, None), getattr(module, proj_name, None)
            if not isinstance(module, cls) or isinstance(fc, GatedProjection) or fc is None or proj is None:
                continue
            d_model, hidden = _features(fc)
            width = gated_width(hidden, width_ratio, multiple_of)
            weight = fc.weight
            gated = GatedProjection(d_model, width, activation).to(weight.device, weight.dtype)
            new_proj = nn.Linear(width, _features(proj)[1]).to(weight.device, weight.dtype)
            with torch.no_grad():
                for new, old in ((gated.fc, fc), (new_proj, proj)):
                    new.weight.normal_(0.0, float(old.weight.std()))
                    new.bias.zero_()
            old_params += [*fc.parameters(), *proj.parameters()]
            new_params += [*gated.parameters(), *new_proj.parameters()]
            setattr(module, fc_name, gated)
            setattr(module, act_name, nn.Identity())
            setattr(module, proj_name, new_proj)
            changed += 1
    replace_params_in_optimizers(old_params, new_params, optimizers)
    return changed


class GatedLinearUnits(ModelSurgery):
    """Applies ``apply_gated_linear_units`` on INIT; ``required_on_load``, as it is model surgery.

    Logs ``gated_linear_units/num_replaced`` (the MLPs gated).
    """

    @checked_arguments
    def __init__(
        self,
        activation: Activation = "gelu",
        width_ratio: Annotated[float, Field(gt=0, le=4)] = 2 / 3,
        multiple_of: Annotated[int, Field(ge=1)] = 8,
    ) -> None:
        self.activation = activation
        self.width_ratio = width_ratio
        self.multiple_of = multiple_of

    def apply(self, event: Event, state: State, logger: Logger) -> None:
        changed = apply_gated_linear_units(
            state.model, self.activation, self.width_ratio, self.multiple_of, optimizers=state.optimizers
        )
        if changed == 0:
            warnings.warn(
                NoEffectWarning("GatedLinearUnits changed no layer", "no GPT MLP or GPT2MLP in the model"), stacklevel=2
            )
        logger.log_metrics({"gated_linear_units/num_replaced": changed}, state.step)
