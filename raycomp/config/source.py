"""Where a config comes from: YAML with the line of every key, and ``--set key.path=value`` overrides.

YAML is read as 1.2 reads numbers (``1e-3`` is a float) and duplicate keys are refused. Each key path is
located (``file:line``, or the ``--set`` that wrote it) so ``ConfigError`` lines point at the fix.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from raycomp.config.messages import KeyPath, dotted, show
from raycomp.config.schema import ExperimentConfig
from raycomp.config.sweep import assign
from raycomp.errors import ConfigError


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` as a float (YAML 1.2), not as the string YAML 1.1 makes of it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _parse_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, int]]:
    """The loaded document and the line of every mapping key and list item, by key path."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    lines: dict[KeyPath, int] = {}
    duplicates: list[str] = []
    _record_lines(node, (), lines, duplicates, source)
    if duplicates:
        raise ConfigError(duplicates)
    return data, lines


def _record_lines(node: Any, path: KeyPath, lines: dict[KeyPath, int], duplicates: list[str], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*path, key_node.value)
            line = key_node.start_mark.line + 1
            if child in lines:
                first = lines[child]
                duplicates.append(f"{source}:{line}: {dotted(child)}: duplicate key (first set on line {first})")
            lines.setdefault(child, line)
            _record_lines(value_node, child, lines, duplicates, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(item, (*path, index), lines, duplicates, source)


def _apply_override(data: dict[str, Any], item: str, locations: dict[KeyPath, str]) -> None:
    """Applies one ``key.path=value`` (value read as YAML) and makes ``--set`` the source of that key."""
    label = f"--set {item}"
    key, equals, text = item.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"{label}: expected key.path=value, e.g. --set optimizer.lr=0.1")
    try:
        value = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
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
    """Reads an experiment YAML, applies ``--set key.path=value`` overrides in order, and validates it."""
    source = os.fspath(path)
    try:
        text = Path(source).read_text()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the experiment file ({exc.strerror or exc})") from None
    data, lines = _parse_yaml(text, source)
    data = {} if data is None else data
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
    return ExperimentConfig.from_dict(data, source=source, locations=locations)
