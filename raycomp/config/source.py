"""Where a config comes from: YAML with the line of every key, and ``--set key.path=value`` overrides.

YAML is read by ``yaml_text`` (bounded UTF-8, no aliases, 1.2 numbers) and duplicate keys are refused. Each
key path is located (``file:line``, or the ``--set`` that wrote it) so ``ConfigError`` lines point at the fix.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import yaml

from raycomp.base.errors import ConfigError
from raycomp.config.messages import KeyPath, show, show_text
from raycomp.config.schema import ExperimentConfig
from raycomp.config.sweep import assign
from raycomp.config.yaml_text import Refused, load_value, parse_yaml, read_text


def _apply_override(data: dict[str, Any], item: str, locations: dict[KeyPath, str]) -> None:
    """Applies one ``key.path=value`` (value read as YAML) and makes ``--set`` the source of that key."""
    label = f"--set {show_text(item)}"
    key, equals, text = item.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"{label}: expected key.path=value, e.g. --set optimizer.lr=0.1")
    try:
        value = load_value(text)
    except Refused as exc:
        raise ValueError(f"{label}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ValueError(f"{label}: the value is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    try:
        path = assign(data, key.strip(), value)
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    for located in [p for p in locations if p[: len(path)] == path]:
        del locations[located]
    for depth in range(1, len(path) + 1):  # mappings this override created are its doing too
        locations.setdefault(path[:depth], label)


def load_experiment(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Reads an experiment YAML, applies ``--set key.path=value`` overrides in order, and validates it: data only.
    Nothing of the model or data is built or read here; ``raycomp.preflight.load_checked_experiment`` runs them."""
    return read_experiment(path, overrides)[0]


def read_experiment(
    path: str | os.PathLike[str], overrides: Sequence[str] = ()
) -> tuple[ExperimentConfig, dict[KeyPath, str]]:
    """``load_experiment``, with where each key was set (``file:line``, or the ``--set`` that wrote it), so that
    later checks (the preflight's) point at the fix too."""
    source = os.fspath(path)
    data, lines = parse_yaml(read_text(source), source)
    if data is None:  # an empty file (or comments only) is a mistake, not a request for every default
        raise ConfigError(f"{source}: the file is empty: it sets no keys (experiments/ has examples to start from)")
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the experiment must be a mapping of keys to values, got {show(data)}")
    locations: dict[KeyPath, str] = {p: f"{source}:{line}" for p, line in lines.items()}
    problems = []
    for item in overrides:
        try:
            _apply_override(data, item, locations)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(problems)
    return ExperimentConfig.from_dict(data, source=source, locations=locations), locations
