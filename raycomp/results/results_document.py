"""What a ``results.json`` must hold for its sweep to be judged again: each key's type and range, checked
strictly (a string where a number goes is one error at its key, not a traceback in the verdicts)."""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PlainValidator, model_validator

from raycomp.config.messages import Invalid, show

LARGEST = 1e15  # no metric or time raycomp writes comes near it; squared, it stays finite


def json_number(value: Any) -> int | float | None:
    """A JSON number as it was written (an int stays one); NaN or infinite reads as None, a value never
    measured (``finite``); anything else (a string, a flag) is an error at its key."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"must be a number, got {show(value)}")
    if math.isfinite(value) and abs(value) > LARGEST:  # 1e308 overflowed the intervals (L2 of the 2026-12-01 probe)
        raise ValueError(f"must be within ±{LARGEST:g}, got {show(value)}")
    return value if math.isfinite(value) else None


def _not_negative(value: int | float | None) -> int | float | None:
    if value is not None and value < 0:
        raise ValueError(f"must be >= 0, got {show(value)}")
    return value


def _positive(value: int | float | None) -> int | float | None:
    if value is not None and value <= 0:
        raise ValueError(f"must be > 0, got {show(value)}")
    return value


Number = Annotated[int | float | None, PlainValidator(json_number)]
Seconds = Annotated[int | float | None, PlainValidator(json_number), AfterValidator(_not_negative)]
Positive = Annotated[int | float | None, PlainValidator(json_number), AfterValidator(_positive)]


class _Read(BaseModel):
    """What a results.json entry must hold to be judged again. Strict: a string where a number goes is one
    error at its key, not a traceback deep in the verdicts (a hand-edited file: reliability notes D9). Keys
    the reader does not use (the stored verdicts, which are judged again) may be there."""

    model_config = ConfigDict(strict=True, frozen=True, extra="allow")


class TraceEntry(_Read):
    algorithm: str
    event: str
    count: int = Field(ge=0)
    total_s: float = Field(ge=0)


class TrialRow(_Read):
    """A trial's row: the columns ``TrialSummary.row`` writes (the metric's read as ``final_metric``), its curve
    and traces; any other key is a swept argument."""

    trial_id: str
    config_id: str | None = None
    variant: str
    repeat: int | None = Field(None, ge=0)
    budget: Positive = None
    status: str
    final_metric: Number = None
    wall_s: Seconds = None
    cpu_s: Seconds = None
    steps_s: Seconds = None
    steps_cpu_s: Seconds = None
    host_load: Seconds = None
    time_to_baseline_s: Seconds = None
    speedup: Positive = None
    diverged: bool = False
    error: str | None = None
    error_line: str | None = None
    machine: str | None = None
    curve: list[dict[str, Number]] = Field(default_factory=list)
    traces: list[TraceEntry] | None = None


class ResultsDocument(_Read):
    """The keys a sweep's trials are judged with again, in the ranges the ``sweep`` section allows them."""

    metric: str
    mode: Literal["max", "min"]
    trials: list[dict[str, Any]]
    accuracy_tolerance: float = Field(ge=0)
    confidence: float = Field(gt=0.5, lt=1)
    equivalence: float = Field(gt=0, lt=1)
    repeats: int | None = Field(ge=1)
    max_repeats: int | None = Field(ge=1)
    timing: Literal["steps", "cpu", "wall"]  # the keys of judging.TIMINGS

    @model_validator(mode="after")
    def _looks(self) -> ResultsDocument:
        if self.repeats is not None and (self.max_repeats is None or self.max_repeats < self.repeats):
            raise Invalid([(("max_repeats",), f"must be at least repeats ({self.repeats}), got {self.max_repeats}")])
        return self
