"""A State's checkpoint entries as plain data: each serialized attribute saved (an algorithm with what re-creates
it: class path, constructor arguments, state, ``required_on_load``), and a list of objects loaded back in order."""

from __future__ import annotations

from typing import Any

from raycomp.core.algorithm import Algorithm, class_path


def serialized(name: str, value: Any) -> Any:
    """Algorithms are saved with what re-creates them, callbacks by class name; the rest by ``state_dict()``."""
    if name == "algorithms":
        return [algorithm_entry(algorithm) for algorithm in value]
    if name == "callbacks":
        return {type(callback).__name__: callback.state_dict() for callback in value}
    if value is None:  # no GradScaler outside fp16
        return None
    if isinstance(value, list):  # optimizers, schedulers
        return [item.state_dict() for item in value]
    return value.state_dict()


def algorithm_entry(algorithm: Algorithm) -> dict[str, Any]:
    return {
        "class_path": class_path(type(algorithm)),
        "init_args": algorithm.init_args,
        "state": algorithm.state_dict(),
        "required_on_load": type(algorithm).required_on_load(),
    }


def load_each(objects: list[Any], states: list[Any], what: str) -> None:
    """Each object's state in order; a count that differs is a ``ValueError`` naming ``what``."""
    if len(objects) != len(states):
        raise ValueError(f"The checkpoint has {len(states)} {what} but this run has {len(objects)}")
    for obj, state in zip(objects, states, strict=True):
        obj.load_state_dict(state)
