"""raycomp: a Composer-style training core (Engine, Events, State, Algorithms) for Ray Train, Tune and MLflow.

``from raycomp import Trainer, Event, ...`` works as in Composer, but nothing is imported until a name is
used (PEP 562): ``import raycomp.core`` must not load the Trainer, and ``import raycomp`` imports no torch,
so a CLI that refuses its arguments answers before torch's seconds-long import.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# First, before torch's import: Ctrl-C in a raycomp command is one line (base/interrupts.py).
from raycomp.base.interrupts import quiet_interrupts
from raycomp.base.torchvision_shim import prepare_torchvision_before_its_import

quiet_interrupts()
# Standard library only: the first import of torchvision, by anyone (torchmetrics does), is prepared for the CPU torch.
prepare_torchvision_before_its_import()

if TYPE_CHECKING:
    from raycomp.core import Algorithm, Callback, Engine, Event, State, Time, Timestamp, TimeUnit
    from raycomp.loop.trainer import Trainer

__version__ = "0.1.0"

__all__ = ["Algorithm", "Callback", "Engine", "Event", "State", "Time", "TimeUnit", "Timestamp", "Trainer"]
_HOMES = {name: "raycomp.loop.trainer" if name == "Trainer" else "raycomp.core" for name in __all__}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'raycomp' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
