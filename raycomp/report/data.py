"""A sweep as the report sees it: each trial's summary (as ``results.json`` holds it), curve, hardware, traces.

The numbers come from ``raycomp.results`` (``summarize`` wrote them to ``results.json``); nothing here
computes a speed-up again. The trace summary lives only in MLflow (each trial's child run), so it is
attached separately (``raycomp.report.tracked``) and is absent, with a note saying why, without it.
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any

# results.json's per-trial keys that are not swept arguments (the metric's own name is added per sweep)
_COLUMNS = {"trial_id", "variant", "status", "wall_s", "time_to_baseline_s", "speedup", "error", "machine", "curve"}


class SweepNotFound(LookupError):
    """No sweep where the user pointed; the message is one line for the CLI."""


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One algorithm at one event over a whole trial: how often it ran and its wall time in total."""

    algorithm: str
    event: str
    count: int
    total_s: float


@dataclasses.dataclass(frozen=True)
class Trial:
    trial_id: str
    variant: str
    status: str
    overrides: dict[str, Any]
    final_metric: float | None
    wall_s: float | None
    time_to_baseline_s: float | None
    speedup: float | None
    error: str | None = None
    machine: str | None = None
    curve: tuple[tuple[float | None, float | None, float], ...] = ()  # (step, wall s, metric) per report
    traces: tuple[TraceRow, ...] | None = None  # None: not known (no MLflow)
    run_id: str | None = None  # the trial's MLflow child run

    @property
    def is_baseline(self) -> bool:
        return self.variant == "baseline"

    @property
    def has_result(self) -> bool:
        return self.final_metric is not None and self.wall_s is not None


@dataclasses.dataclass(frozen=True)
class Sweep:
    name: str
    metric: str
    mode: str
    trials: tuple[Trial, ...]
    best_id: str | None
    source: str  # where the data came from, in words
    folder: Path | None = None  # the sweep's output folder, when known on this machine
    parent: Any = None  # the sweep's MLflow parent run (a raycomp.tracking RunRef), when found
    traces_note: str | None = None  # why there is no trace summary

    @property
    def baseline(self) -> Trial | None:
        return next((t for t in self.trials if t.is_baseline and t.has_result), None)

    @property
    def machines(self) -> list[str]:
        return sorted({t.machine for t in self.trials if t.machine})

    def replace(self, **changes: Any) -> Sweep:
        return dataclasses.replace(self, **changes)


def load_document(path: Path, name: str | None = None, source: str | None = None) -> Sweep:
    """The sweep in a ``results.json`` (a file, or the sweep folder holding one)."""
    path = Path(path)
    file = path / "results.json" if path.is_dir() else path
    if not file.is_file():
        raise SweepNotFound(f"no results.json in {path}")
    document = json.loads(file.read_text())
    folder = file.parent
    return from_document(document, name or folder.name, source or f"{file}", folder)


def from_document(document: dict[str, Any], name: str, source: str, folder: Path | None = None) -> Sweep:
    metric, mode = document["metric"], document["mode"]
    trials = tuple(_trial(row, metric) for row in document["trials"])
    best = (document.get("best") or {}).get("trial_id")
    return Sweep(name, metric, mode, trials, best, source, folder)


def _trial(row: dict[str, Any], metric: str) -> Trial:
    overrides = {key: value for key, value in row.items() if key not in _COLUMNS and key != metric}
    curve = tuple(
        (point.get("step"), point.get("wall_s"), float(point[metric]))
        for point in row.get("curve") or []
        if _finite(point.get(metric)) is not None
    )
    return Trial(
        trial_id=str(row["trial_id"]),
        variant=str(row["variant"]),
        status=str(row["status"]),
        overrides=overrides,
        final_metric=_finite(row.get(metric)),
        wall_s=_finite(row.get("wall_s")),
        time_to_baseline_s=_finite(row.get("time_to_baseline_s")),
        speedup=_finite(row.get("speedup")),
        error=row.get("error"),
        machine=row.get("machine"),
        curve=curve,
    )


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        return None
    return value
