"""A sweep's answer to "faster than baseline?": per trial, accuracy, time, time to the baseline's accuracy.

Pure Python over plain records (what each trial reported, in order), so it is tested without Ray and
reused by the speed-up report. Times are training wall time from FIT_START, measured in the trial:
the fixed cost of starting a trial is the same for every trial and is not what a method speeds up.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import math
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

WALL = "time/train_wall_s"


@dataclasses.dataclass(frozen=True)
class TrialRecord:
    """What one trial did: its arm (baseline or method), its overrides, status, and every report."""

    trial_id: str
    variant: str
    overrides: dict[str, Any]
    status: str
    history: list[dict[str, Any]]
    error: str | None = None


@dataclasses.dataclass(frozen=True)
class TrialSummary:
    trial_id: str
    variant: str
    overrides: dict[str, Any]
    status: str
    final_metric: float | None
    wall_s: float | None
    time_to_baseline_s: float | None
    speedup: float | None
    error: str | None = None
    # What the speed-up report draws (results.json only, not the CSV): (step, wall s, metric) at each
    # report with a value, and the hardware the trial measured its times on.
    curve: tuple[tuple[float | None, float | None, float], ...] = ()
    machine: str | None = None

    def row(self, metric: str) -> dict[str, Any]:
        return {
            "trial_id": self.trial_id,
            "variant": self.variant,
            **{key: value for key, value in sorted(self.overrides.items())},
            "status": self.status,
            metric: self.final_metric,
            "wall_s": self.wall_s,
            "time_to_baseline_s": self.time_to_baseline_s,
            "speedup": self.speedup,
            "error": self.error,
        }


def _better_or_equal(value: float, target: float, mode: str) -> bool:
    return value >= target if mode == "max" else value <= target


def _first_reaching(history: list[dict[str, Any]], metric: str, target: float, mode: str) -> float | None:
    for report in history:
        value = report.get(metric)
        if value is not None and not math.isnan(value) and _better_or_equal(value, target, mode):
            return report.get(WALL)
    return None


def summarize(trials: Sequence[TrialRecord], metric: str = "eval/accuracy", mode: str = "max") -> list[TrialSummary]:
    """Summaries in trial order; speed-up = baseline wall time / time to reach the baseline's final metric."""
    baseline = next((t for t in trials if t.variant == "baseline" and t.history), None)
    target = baseline.history[-1].get(metric) if baseline else None
    baseline_wall = baseline.history[-1].get(WALL) if baseline else None
    summaries = []
    for trial in trials:
        last = trial.history[-1] if trial.history else {}
        reached = _first_reaching(trial.history, metric, target, mode) if target is not None else None
        speedup = baseline_wall / reached if reached and baseline_wall else None
        summaries.append(
            TrialSummary(
                trial.trial_id,
                trial.variant,
                trial.overrides,
                trial.status,
                last.get(metric),
                last.get(WALL),
                reached,
                speedup,
                trial.error,
                curve(trial.history, metric),
                next((r["machine"] for r in reversed(trial.history) if isinstance(r.get("machine"), str)), None),
            )
        )
    return summaries


def curve(history: Sequence[dict[str, Any]], metric: str) -> tuple[tuple[float | None, float | None, float], ...]:
    """``(step, wall s, metric)`` at each report that has the metric: the trial's time-to-accuracy curve."""
    points = []
    for report in history:
        value = report.get(metric)
        if isinstance(value, int | float) and not math.isnan(value):
            points.append((_number(report.get("step")), _number(report.get(WALL)), float(value)))
    return tuple(points)


def _number(value: Any) -> float | None:
    return None if not isinstance(value, int | float) or math.isnan(value) else value


def best(summaries: Sequence[TrialSummary], mode: str = "max") -> TrialSummary | None:
    scored = [s for s in summaries if s.final_metric is not None]
    if not scored:
        return None
    key = (lambda s: s.final_metric) if mode == "max" else (lambda s: -s.final_metric)
    return max(scored, key=key)


def format_table(summaries: Sequence[TrialSummary], metric: str) -> str:
    """A plain-text table: one line per trial, the swept values as columns."""
    rows = [s.row(metric) for s in summaries]
    columns = list(dict.fromkeys(key for row in rows for key in row if key != "error"))
    cells = [[_cell(row.get(col), col) for col in columns] for row in rows]
    widths = [max(len(col), *(len(r[i]) for r in cells)) for i, col in enumerate(columns)]
    lines = ["  ".join(col.ljust(w) for col, w in zip(columns, widths, strict=True))]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)) for r in cells]
    errors = [f"  {s.trial_id}: {s.error}" for s in summaries if s.error]
    return "\n".join(lines + (["failed trials:", *errors] if errors else []))


def _cell(value: Any, column: str) -> str:
    if value is None:
        return "never" if column in ("time_to_baseline_s", "speedup") else "-"
    if column == "speedup":
        return f"{value:.2f}x"
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)


def write_results(folder: str | Path, summaries: Sequence[TrialSummary], metric: str, mode: str) -> list[Path]:
    """``results.csv`` and ``results.json`` (with the best trial), each written atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [s.row(metric) for s in summaries]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    paths = [folder / "results.csv", folder / "results.json"]
    _atomic_write(paths[0], buffer.getvalue())
    _atomic_write(paths[1], json.dumps(results_document(summaries, metric, mode), indent=2, default=str))
    return paths


def results_document(summaries: Sequence[TrialSummary], metric: str, mode: str) -> dict[str, Any]:
    """What ``results.json`` holds: the metric, the best trial, and each trial's row, hardware and curve."""
    winner = best(summaries, mode)
    trials = [
        {
            **s.row(metric),
            "machine": s.machine,
            "curve": [{"step": step, "wall_s": wall, metric: value} for step, wall, value in s.curve],
        }
        for s in summaries
    ]
    return {"metric": metric, "mode": mode, "best": winner.row(metric) if winner else None, "trials": trials}


def _atomic_write(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w") as file:
        file.write(text)
    os.replace(tmp, path)
