"""Pydantic's errors as lines a user can act on: ``file:line: key.path: message (did you mean 'x'?; ...)``.

Validators report their own problems by raising ``Invalid`` with key paths relative to what they validate;
everything else pydantic finds is reworded here, with the field's default (or a hint) appended. A range
declared with two bounds (``Field(gt=0, le=1)``) is shown whole: ``must be in (0, 1], got 1.5``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from raycomp.core.time import Time

KeyPath = tuple[str | int, ...]
Problem = tuple[KeyPath, str]  # (key path, what is wrong and the fix)


class Invalid(ValueError):
    """Raised inside validators to report problems at key paths relative to the object being validated."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(message for _, message in problems))


_SHOWN_CHARACTERS = 80  # a value longer than this is cut in messages (a --set of 240 KB made a 240 KB line)


def show(value: Any) -> str:
    """A value as the user wrote it in YAML, cut to a readable length."""
    return show_text(_show(value))


def show_text(text: str) -> str:
    """``text`` cut to a readable length, saying how long it was."""
    if len(text) <= _SHOWN_CHARACTERS:
        return text
    return f"{text[: _SHOWN_CHARACTERS - 3]}... ({len(text):,} characters)"


def _show(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Time):
        return repr(str(value))
    return repr(value)


def suggest(word: Any, valid: Iterable[str], what: str) -> str:
    """``(did you mean 'x'?; valid <what>: a, b, c)``."""
    valid = list(valid)
    close = difflib.get_close_matches(str(word), valid, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}?; " if close else ""
    return f"({guess}valid {what}: {', '.join(valid)})" if valid else f"(it takes no {what})"


def one_of(value: str, names: Sequence[str], what: str) -> str:
    if value not in names:
        raise ValueError(f"unknown {what} {value!r} {suggest(value, names, what + 's')}")
    return value


def dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


# ---- the schema, walked by key path ------------------------------------------------------------------------


def submodel(field: FieldInfo) -> type[BaseModel] | None:
    """The section class a field holds (also through ``X | None``), if any."""
    for candidate in (field.annotation, *get_args(field.annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def field_at(root: type[BaseModel], path: KeyPath) -> FieldInfo | None:
    """The schema field at a key path, if the path runs through schema sections only."""
    model: type[BaseModel] | None = root
    field = None
    for part in path:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = submodel(field)
    return field


def valid_keys(root: type[BaseModel], path: KeyPath) -> list[str] | None:
    if not path:
        return list(root.model_fields)
    field = field_at(root, path)
    section = submodel(field) if field else None
    return list(section.model_fields) if section else None


def leaf_paths(model: type[BaseModel], prefix: str = "") -> set[str]:
    """Every dotted path to a sweepable schema leaf (not sweep.* nor algorithms, which are checked apart)."""
    leaves: set[str] = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        if path in ("sweep", "algorithms"):
            continue
        section = submodel(field)
        leaves |= leaf_paths(section, f"{path}.") if section else {path}
    return leaves


# ---- pydantic's errors -------------------------------------------------------------------------------------

_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "finite_number": "a finite number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
    "dict_type": "a mapping of keys to values",
    "list_type": "a list",
}
_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
_HINTS = {
    "scaling.num_workers": "the number of Ray Train workers; 0 runs training in the trial's own process",
    "data.num_train": "the synthetic set is made in memory, about 12 KB a sample",
    "data.num_test": "the synthetic set is made in memory, about 12 KB a sample",
}


def problems_of(error: ValidationError, root: type[BaseModel]) -> list[Problem]:
    """Pydantic's errors validating ``root`` as (key path, human message), expanding ``Invalid`` ones."""
    problems: list[Problem] = []
    for entry in error.errors(include_url=False):
        loc = tuple(entry["loc"])
        raised = entry.get("ctx", {}).get("error")
        if isinstance(raised, Invalid):
            problems += [((*loc, *path), message) for path, message in raised.problems]
        elif entry["type"] == "extra_forbidden":
            problems.append((loc, f"unknown key {suggest(loc[-1], valid_keys(root, loc[:-1]) or [], 'keys')}"))
        else:
            problems.append((loc, explain(entry, field_at(root, loc), _HINTS.get(dotted(loc)))))
    return problems


def explain(entry: Mapping[str, Any], field: FieldInfo | None, hint: str | None = None) -> str:
    """One pydantic error entry for ``field`` as ``must be ..., got ... (hint, else the field's default)``."""
    kind, value, ctx = entry["type"], entry.get("input"), entry.get("ctx", {})
    if kind == "missing":
        return "is required (add it)"
    if kind in _TYPES:
        message = f"must be {_TYPES[kind]}, got {show(value)}"
    elif kind == "literal_error":
        message = f"must be {ctx.get('expected')}, got {show(value)}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        message = f"must be {_range(ctx, field)}, got {show(value)}"
    elif kind == "string_too_short":
        message = "must not be empty"
    elif kind == "value_error":
        message = str(ctx.get("error", entry["msg"]))
    else:
        message = entry["msg"]
    if hint is None and field is not None:
        default = field.get_default(call_default_factory=False)
        if default is not PydanticUndefined and field.default_factory is None:
            hint = f"default: {show(default)}"
    return f"{message} ({hint})" if hint and not message.endswith(")") else message


def _range(ctx: Mapping[str, Any], field: FieldInfo | None) -> str:
    """``in (0, 1]`` when the field declares both bounds, else the one broken: ``>= 0``."""
    bounds: dict[str, Any] = {}
    for item in field.metadata if field else []:  # annotated_types' Gt(gt=0), Le(le=1), ...
        bounds |= {name: _number(getattr(item, name)) for name in _BOUNDS if getattr(item, name, None) is not None}
    low = next((name for name in ("gt", "ge") if name in bounds), None)
    high = next((name for name in ("lt", "le") if name in bounds), None)
    if low and high:
        return f"in {'(' if low == 'gt' else '['}{bounds[low]}, {bounds[high]}{')' if high == 'lt' else ']'}"
    broken = next(name for name in _BOUNDS if name in ctx)
    return f"{_BOUNDS[broken]} {_number(ctx[broken])}"


def _number(limit: Any) -> Any:
    return int(limit) if isinstance(limit, float) and limit.is_integer() else limit


def format_problems(problems: list[Problem], source: str, locations: Mapping[KeyPath, str]) -> list[str]:
    """``where: key.path: message`` lines; ``where`` is the longest located prefix of the path, or the source."""
    order = {path: index for index, path in enumerate(locations)}  # document order, then --set order
    located = []
    for path, message in problems:
        prefix = next((path[:n] for n in range(len(path), 0, -1) if path[:n] in locations), None)
        where = source if prefix is None else locations[prefix]
        key = dotted(path)
        located.append((order.get(prefix, len(order)), f"{where}: {key}: {message}" if key else f"{where}: {message}"))
    return [line for _, line in sorted(located, key=lambda pair: pair[0])]
