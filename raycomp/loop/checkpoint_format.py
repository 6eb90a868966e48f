"""The checkpoint payload: what ``checkpoint_payload`` writes, and the check that a loaded one holds it.

``checkpoint.py`` owns the files and folders; this module owns what is inside one. A file that
unpickles under ``weights_only=True`` can still hold the wrong things: a missing ``state``, a
timestamp that is a string, an RNG state torch refuses. Found late, each is a raw ``KeyError`` or
``TypeError`` from deep inside a load, or worse, from the first batch of ``fit()``. Checked here, each is
one line naming the entry and what is wrong with it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from raycomp.base.errors import CheckpointError
from raycomp.core.state import State
from raycomp.core.time import Timestamp
from raycomp.loop.rng import get_rng_state, set_rng_state

FORMAT_VERSION = 1
_ALGORITHM_ENTRY = {"class_path": str, "required_on_load": bool}


def checkpoint_payload(state: State) -> dict[str, Any]:
    """Plain data and tensors only, so that ``torch.load(weights_only=True)`` reads it back."""
    state_dict = state.state_dict()
    for entry in state_dict["algorithms"]:
        if not _is_plain(entry["init_args"]):
            entry["init_args"] = None  # kept out rather than pickled: such an algorithm cannot be re-created
    return {"format_version": FORMAT_VERSION, "seed": state.seed, "state": state_dict, "rng": get_rng_state()}


def check_payload(payload: Any, path: Path) -> None:
    """Raises a ``CheckpointError`` naming ``path`` and the first problems unless ``payload`` is loadable."""
    if not isinstance(payload, Mapping) or payload.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} is not a raycomp checkpoint of format version {FORMAT_VERSION}")
    problems = payload_problems(payload)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise CheckpointError(f"{path} is not a loadable raycomp checkpoint: {shown}")


def payload_problems(payload: Mapping[str, Any]) -> list[str]:
    """Every way ``payload`` differs from what ``checkpoint_payload`` writes, as ``entry: problem`` lines."""
    problems: list[str] = []
    if not isinstance(payload.get("seed"), int) and payload.get("seed") is not None:
        problems.append(f"seed: expected an integer, got {_kind(payload.get('seed'))}")
    state = payload.get("state")
    if not isinstance(state, Mapping):
        return [*problems, "state: missing" if state is None else f"state: expected a mapping, got {_kind(state)}"]
    missing = [name for name in State.serialized_attributes if name not in state]
    if missing:
        problems.append(f"state: missing {', '.join(missing)}")
    problems += _model_problems(state.get("model"))
    for name in ("optimizers", "schedulers"):
        if name in state and not isinstance(state[name], list | tuple):
            problems.append(f"state.{name}: expected a list, got {_kind(state[name])}")
    if "callbacks" in state and not isinstance(state["callbacks"], Mapping):
        problems.append(f"state.callbacks: expected a mapping, got {_kind(state['callbacks'])}")
    problems += _timestamp_problems(state.get("timestamp"))
    problems += _algorithm_problems(state.get("algorithms"))
    problems += _rng_problems(payload.get("rng"))
    return problems


def _model_problems(model: Any) -> list[str]:
    if model is None:
        return []  # said with the other missing entries
    if not isinstance(model, Mapping):
        return [f"state.model: expected a mapping of tensors, got {_kind(model)}"]
    bad = [str(key) for key, value in model.items() if not isinstance(key, str) or not isinstance(value, torch.Tensor)]
    return [f"state.model: not a tensor: {', '.join(bad[:3])}"] if bad else []


def _timestamp_problems(timestamp: Any) -> list[str]:
    if timestamp is None:
        return []
    if not isinstance(timestamp, Mapping):
        return [f"state.timestamp: expected a mapping, got {_kind(timestamp)}"]
    fields = {field.name: field.type for field in dataclasses.fields(Timestamp)}
    problems = [f"state.timestamp: unknown counter {key!r}" for key in timestamp if key not in fields]
    for key, value in timestamp.items():
        wanted = (int, float) if fields.get(key) == "float" else (int,)
        if key in fields and (isinstance(value, bool) or not isinstance(value, wanted) or value < 0):
            problems.append(f"state.timestamp.{key}: expected a count >= 0, got {value!r}")
    return problems


def _algorithm_problems(entries: Any) -> list[str]:
    if entries is None:
        return []
    if not isinstance(entries, list | tuple):
        return [f"state.algorithms: expected a list, got {_kind(entries)}"]
    problems = []
    for index, entry in enumerate(entries):
        where = f"state.algorithms[{index}]"
        if not isinstance(entry, Mapping):
            problems.append(f"{where}: expected a mapping, got {_kind(entry)}")
            continue
        for key, kind in _ALGORITHM_ENTRY.items():
            if not isinstance(entry.get(key), kind):
                problems.append(f"{where}.{key}: expected {kind.__name__}, got {_kind(entry.get(key))}")
        if "state" not in entry:
            problems.append(f"{where}.state: missing")
        arguments = entry.get("init_args")
        named = isinstance(arguments, Mapping) and all(isinstance(key, str) for key in arguments)
        if arguments is not None and not named:
            problems.append(f"{where}.init_args: expected a mapping of argument names, got {_kind(arguments)}")
    return problems


def _rng_problems(rng: Any) -> list[str]:
    """Restores the saved generators once and puts this process's back: the one check torch, NumPy and
    Python's ``random`` agree on. Without it, a corrupt entry passes here and fails at the first batch."""
    if rng is None:
        return ["rng: missing"]
    current = get_rng_state()
    try:
        set_rng_state(rng)
    except Exception as error:  # any of three libraries' own errors: each means the same
        return [f"rng: not a saved random state ({type(error).__name__}: {error})"]
    finally:
        set_rng_state(current)
    return []


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str | torch.Tensor):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def _kind(value: Any) -> str:
    return "nothing" if value is None else f"{type(value).__name__} {value!r}"[:80]
