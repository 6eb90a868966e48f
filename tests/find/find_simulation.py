"""bench/simulate_find.py as a module for the find's tests (the model docs/find.md's rates come from)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "simulate_find", Path(__file__).parents[2] / "bench" / "simulate_find.py"
)
simulation = importlib.util.module_from_spec(_spec)
sys.modules["simulate_find"] = simulation  # its dataclasses look their module up by name
_spec.loader.exec_module(simulation)
