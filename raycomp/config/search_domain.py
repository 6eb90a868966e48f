"""One swept value of a sweep's ``space``: a grid or choice of listed values, or a range drawn from
(``uniform``, ``loguniform``, ``randint``), written as a one-key mapping and checked as written."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import model_serializer, model_validator

from raycomp.config.messages import Invalid, show
from raycomp.config.sections import Section

DOMAIN_KINDS: tuple[str, ...] = ("grid", "choice", "uniform", "loguniform", "randint")
MAX_DOMAIN_VALUES = 1000


class SearchDomain(Section):
    """One swept value, written ``{grid: [...]}``, ``{choice: [...]}``, ``{uniform: [low, high]}``,
    ``{loguniform: [low, high]}`` or ``{randint: [low, high]}`` (high exclusive, as in Ray)."""

    kind: Literal["grid", "choice", "uniform", "loguniform", "randint"]
    values: list[Any]

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if isinstance(data, SearchDomain):
            return data
        if not isinstance(data, Mapping) or len(data) != 1 or next(iter(data)) not in DOMAIN_KINDS:
            forms = "{grid: [...]}, {choice: [...]}, {uniform: [low, high]}, {loguniform: [low, high]}, {randint: ...}"
            raise Invalid([((), f"must be exactly one of {forms}, got {show(data)}")])
        kind, values = next(iter(data.items()))
        problem = _domain_problem(kind, values)
        if problem:
            raise Invalid([((kind,), problem)])
        return {"kind": kind, "values": list(values)}

    @model_serializer
    def _to_yaml(self) -> dict[str, list[Any]]:
        return {self.kind: list(self.values)}

    def candidates(self) -> list[Any]:
        """The values whose validity stands for the whole domain: every listed value, or both bounds."""
        if self.kind == "randint":
            return [self.values[0], self.values[1] - 1]
        return list(self.values)


def _domain_problem(kind: str, values: Any) -> str | None:
    if not isinstance(values, list) or not values:
        return f"must be a non-empty list, got {show(values)}"
    if len(values) > MAX_DOMAIN_VALUES:  # each value is validated as a whole config at the driver
        return (
            f"lists {len(values)} values; a domain holds at most {MAX_DOMAIN_VALUES} "
            "(use uniform or randint for a range)"
        )
    if kind in ("grid", "choice"):
        return None
    number = int if kind == "randint" else (int, float)
    example = "[1, 10]" if kind == "randint" else "[0.001, 0.1]"
    if len(values) != 2 or not all(isinstance(v, number) and not isinstance(v, bool) for v in values):
        what = "integers" if kind == "randint" else "numbers"
        return f"must be two {what} [low, high] such as {example}, got {show(values)}"
    low, high = values
    if not all(math.isfinite(value) for value in values):
        return f"needs finite bounds, got {show(values)}"
    if not low < high:
        return f"needs low < high, got {show(values)} (swap them?)"
    if kind == "loguniform" and low <= 0:
        return f"needs low > 0, got {show(values)}"
    return None
