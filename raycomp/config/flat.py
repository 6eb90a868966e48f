"""A config as flat data: dotted keys to scalars (MLflow params, the training config's digest), and sampled
values as plain Python (Tune's samplers give NumPy scalars, which YAML, MLflow and results.json refuse)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig


def flattened(config: ExperimentConfig) -> dict[str, Any]:
    """Dotted key -> scalar; algorithms show every argument, defaults included, and a user model or data its
    ``class_path`` and each ``init_args`` value (not the unused built-in name)."""
    data = config.to_dict()
    data["algorithms"] = {name: args.model_dump(mode="json") for name, args in config.algorithms.items()}
    for section in ("model", "data"):  # a class_path replaces the built-in name: do not show one as trained
        if data[section]["class_path"] is not None:
            del data[section]["name"]
    flat: dict[str, Any] = {}
    _flatten_into(flat, "", data)
    return flat


def _flatten_into(flat: dict[str, Any], prefix: str, value: Any) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _flatten_into(flat, f"{prefix}.{key}" if prefix else str(key), child)
    elif isinstance(value, dict | list):
        flat[prefix] = json.dumps(value)
    else:
        flat[prefix] = value


def plain(value: Any) -> Any:
    """NumPy scalars as Python ones, without importing NumPy."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value
