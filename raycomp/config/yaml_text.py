"""Experiment YAML read safely: a bounded UTF-8 file, parsed once, with the line of every key.

An experiment is a few kilobytes of plain mappings and lists, so what only an attack or a wrong file
needs is refused with one line naming the file and line: more than ``MAX_FILE_BYTES``, bytes that are
not UTF-8, aliases (``*name``: each one expands a shared subtree, so a few hundred bytes of them make
gigabytes, and ``&a [*a]`` is a cycle), and nesting deeper than ``MAX_DEPTH`` (PyYAML composes
recursively). YAML is read as 1.2 reads numbers (``1e-3`` is a float).
"""

from __future__ import annotations

import os
import re
from typing import Any

import yaml

from raycomp.base.errors import ConfigError
from raycomp.config.messages import KeyPath, dotted

MAX_FILE_BYTES = 1_000_000
MAX_DEPTH = 50


class Refused(ValueError):
    """YAML this reader does not take (an alias, too deep), at a line of the text (1-based)."""

    def __init__(self, line: int, problem: str) -> None:
        self.line, self.problem = line, problem
        super().__init__(problem)


class _Loader(yaml.SafeLoader):
    """SafeLoader that reads ``1e-3`` as a float (YAML 1.2), refuses aliases and caps the nesting depth."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            problem = f"YAML aliases (*{event.anchor}) are not supported: write the value out in full"
            raise Refused(event.start_mark.line + 1, problem)
        if self._depth >= MAX_DEPTH:
            raise Refused(event.start_mark.line + 1, f"nested more than {MAX_DEPTH} levels deep")
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def compose(text: str) -> tuple[yaml.Node | None, Any]:
    """The text's node tree and the data built from it: parsed once. Raises ``yaml.YAMLError``, ``Refused``."""
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        return node, None if node is None else loader.construct_document(node)
    finally:
        loader.dispose()


def load_value(text: str) -> Any:
    """One ``--set`` value, read as the file is (no aliases, bounded depth)."""
    return compose(text)[1]


def read_text(source: str) -> str:
    """The file's text, if it is at most ``MAX_FILE_BYTES`` of UTF-8 (a BOM is allowed)."""
    try:
        with open(source, "rb") as file:
            raw = file.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the experiment file ({exc.strerror or exc})") from None
    if len(raw) > MAX_FILE_BYTES:
        size = os.path.getsize(source) if os.path.isfile(source) else len(raw)
        raise ConfigError(
            f"{source}: the file is {size / 1e6:.1f} MB; an experiment file is at most {MAX_FILE_BYTES // 10**6} MB "
            "(experiments are a few kilobytes: is this the right file?)"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ConfigError(
            f"{source}:{line}: not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {column}); save the file as UTF-8"
        ) from None


def parse_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, int]]:
    """The loaded document and the line of every mapping key and list item, by key path."""
    try:
        node, data = compose(text)
    except Refused as exc:
        raise ConfigError(f"{source}:{exc.line}: {exc.problem}") from None
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
