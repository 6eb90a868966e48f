"""A schedule of ``raycomp.core.schedulers`` as a torch ``LRScheduler`` (Composer's ``compile_composer_scheduler``).

The Trainer steps it like any torch scheduler and a checkpoint saves it with the optimizer, but its lr comes from
the State at each step, not from a count of steps, so it has nothing to overrun when ``max_duration`` grows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch
from torch.optim.lr_scheduler import LRScheduler

from raycomp.core.schedulers import ComposerScheduler

if TYPE_CHECKING:
    from raycomp.core.state import State

# Held for the schedule, never saved: a checkpoint holds plain data only (torch.load(weights_only=True)).
_NOT_SAVED = ("optimizer", "schedule", "training_state")


class ScheduledLR(LRScheduler):
    """lr = the optimizer's initial lr × ``schedule(state)``; the momentum too where the schedule sets one.

    The checkpoint keeps the ``max_duration`` the lrs were computed for. Loaded into a run with another
    ``max_duration``, the lrs are recomputed at once, so the first resumed batch already follows the new
    schedule; with the same one they are kept as saved, so an interrupted run resumes bit for bit.
    """

    def __init__(self, optimizer: torch.optim.Optimizer, schedule: ComposerScheduler, state: State) -> None:
        self.schedule = schedule
        self.training_state = state
        super().__init__(optimizer)

    def get_lr(self) -> list[float]:
        multiplier = self.schedule(self.training_state)
        return [base_lr * multiplier for base_lr in self.base_lrs]

    def step(self, epoch: int | None = None) -> None:
        super().step(epoch)
        self._set_momentum()

    def refresh(self) -> None:
        """Set the lrs (and momentum) for the State as it is now, without counting a step."""
        for group, lr in zip(self.optimizer.param_groups, self.get_lr(), strict=True):
            group["lr"] = lr
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]
        self._set_momentum()

    def _set_momentum(self) -> None:
        momentum_of = getattr(self.schedule, "momentum", None)
        momentum = momentum_of(self.training_state) if momentum_of is not None else None
        if momentum is None:
            return
        for group in self.optimizer.param_groups:
            if "betas" in group:  # Adam and its kin: beta1 is the momentum
                group["betas"] = (momentum, *group["betas"][1:])
            elif "momentum" in group:
                group["momentum"] = momentum

    def state_dict(self) -> dict[str, Any]:
        state = {key: value for key, value in self.__dict__.items() if key not in _NOT_SAVED}
        return {**state, "max_duration": str(self.training_state.max_duration)}

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        """Load; recompute the lrs if the run's max_duration differs (the State's timestamp must be loaded first)."""
        saved = dict(state_dict)
        trained_for = saved.pop("max_duration", None)
        self.__dict__.update(saved)
        if trained_for != str(self.training_state.max_duration):
            self.refresh()


def compile_composer_scheduler(
    schedule: ComposerScheduler, state: State, optimizer: torch.optim.Optimizer | None = None
) -> ScheduledLR:
    """``schedule`` as a torch scheduler of ``optimizer`` (by default the State's one optimizer)."""
    if optimizer is None:
        if len(state.optimizers) != 1:
            raise ValueError(f"Name the optimizer to schedule: the State has {len(state.optimizers)}")
        optimizer = state.optimizers[0]
    return ScheduledLR(optimizer, schedule, state)
