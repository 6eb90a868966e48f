"""Model surgery: algorithms that change the model's layers once, at INIT (``ModelSurgery``), and what
surgery that creates new Parameters must do to optimizers built before it."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import torch
from torch import nn

from raycomp.algorithms._workload import surgery_refusal
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.core.event import Event
from raycomp.core.state import State


class ModelSurgery(Algorithm):
    """An algorithm that rebuilds layers of the model at INIT. A checkpoint of the changed model loads only
    into the same changed model, so ``required_on_load`` is True: the loader re-applies the surgery
    (``load_recreate_required_algorithms=True``) or refuses."""

    @staticmethod
    def required_on_load() -> bool:
        return True

    def match(self, event: Event, state: State) -> bool:
        return event is Event.INIT

    def check_workload(self, model: nn.Module, batch: Any) -> Inapplicable | None:
        """The surgery must find its target layers in ``model`` (a copy of it), and the changed model must run."""
        return surgery_refusal(self, model, batch)


def replace_params_in_optimizers(
    old_params: Iterable[nn.Parameter],
    new_params: Iterable[nn.Parameter],
    optimizers: torch.optim.Optimizer | Sequence[torch.optim.Optimizer] | None,
) -> None:
    """Drop ``old_params`` (and their optimizer state) and train ``new_params`` in the group that held the first.

    Surgery that builds new layers (GatedLinearUnits) would otherwise leave an optimizer built before it
    stepping Parameters the model no longer uses, and never the new ones. A group that held none of the old
    Parameters is left alone; an optimizer that held none gets nothing.
    """
    if optimizers is None:
        return
    old = {id(p) for p in old_params}
    new = list(new_params)
    for optimizer in [optimizers] if isinstance(optimizers, torch.optim.Optimizer) else optimizers:
        target = None
        for group in optimizer.param_groups:
            kept = [p for p in group["params"] if id(p) not in old]
            if len(kept) != len(group["params"]) and target is None:
                target = group
            for p in group["params"]:
                if id(p) in old:
                    optimizer.state.pop(p, None)
            group["params"] = kept
        if target is not None:
            target["params"].extend(new)
