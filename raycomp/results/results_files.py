"""``results.csv`` and ``results.json``: a sweep's trial summaries on disk, written atomically and read back.

The CSV is one flat row per trial (``TrialSummary.row``). The JSON adds the metric, the mode, the best
trial, and per trial what the report draws: ``machine``, ``curve`` and ``traces``.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import NotFound, RaycompError, one_line
from raycomp.results.configs import SweepVerdicts
from raycomp.results.summary import (
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    TraceRow,
    TrialSummary,
    best,
    column_name,
    finite,
)

# results.json's per-trial keys besides the row's columns
REPORT_KEYS = ("machine", "curve", "traces")
_WRITTEN_BY = "python -m raycomp.tune writes it at a sweep's end; the report needs an intact one"


@dataclasses.dataclass(frozen=True)
class Results:
    """What ``results.json`` holds, as summaries again."""

    metric: str
    mode: str
    trials: tuple[TrialSummary, ...]
    # (accuracy_tolerance, confidence[, equivalence, (repeats, max_repeats) or None, sweep.timing])
    judged_with: tuple[Any, ...]


def write_results(
    folder: str | Path,
    summaries: Sequence[TrialSummary],
    metric: str,
    mode: str,
    verdicts: SweepVerdicts,
) -> list[Path]:
    """``results.csv`` and ``results.json`` (with the best trial, one row per configuration under
    ``"configs"`` and what they were judged with), each written atomically."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows = [s.row(metric) for s in summaries]
    columns = list(dict.fromkeys(key for row in rows for key in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns)
    writer.writeheader()
    writer.writerows(rows)
    paths = [folder / keys.RESULTS_CSV, folder / keys.RESULTS_JSON]
    atomic_write_text(paths[0], buffer.getvalue())
    document = results_document(summaries, metric, mode) | verdicts.document()
    atomic_write_text(paths[1], json.dumps(document, indent=2, default=str))
    return paths


def results_document(summaries: Sequence[TrialSummary], metric: str, mode: str) -> dict[str, Any]:
    """What ``results.json`` holds: the metric, the best trial, and each trial's row, hardware, curve, traces."""
    winner = best(summaries, mode)
    trials = [
        {
            **s.row(metric),
            "machine": s.machine,
            "curve": [{keys.STEP: step, "wall_s": wall, metric: value} for step, wall, value in s.curve],
            "traces": None if s.traces is None else [row.to_dict() for row in s.traces],
        }
        for s in summaries
    ]
    return {"metric": metric, "mode": mode, "best": winner.row(metric) if winner else None, "trials": trials}


def read_results(path: str | Path) -> Results:
    """The summaries in a ``results.json`` (the file, or the sweep folder holding it).

    A file that cannot be read or is not one ``write_results`` wrote is a ``RaycompError`` naming it.
    """
    file = results_file(path)
    if not file.is_file():
        raise NotFound(f"no {keys.RESULTS_JSON} in {path}")
    try:
        text = file.read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError("the file is empty")
        document = json.loads(text)
    except (OSError, ValueError) as error:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        reason = getattr(error, "strerror", None) or str(error)
        raise RaycompError(f"{file}: cannot read it: {reason} ({_WRITTEN_BY})") from None
    return parse_results(document, source=str(file))


def results_file(path: str | Path) -> Path:
    """``path`` itself, or the ``results.json`` in it when it is a folder."""
    path = Path(path)
    return path / keys.RESULTS_JSON if path.is_dir() else path


def parse_results(document: Any, source: str = keys.RESULTS_JSON) -> Results:
    """``results.json``'s document as summaries; one that is not what ``write_results`` writes is a
    ``RaycompError`` naming ``source`` and the first entry found wrong, not a ``KeyError`` traceback."""
    try:
        metric, mode = document["metric"], document["mode"]
        trials = tuple(_summary(row, metric) for row in document["trials"])
        repeats, max_repeats = document["repeats"], document["max_repeats"]
        judged_with = (
            float(document["accuracy_tolerance"]),
            float(document["confidence"]),
            float(document["equivalence"]),
            None if repeats is None else (int(repeats), int(max_repeats)),
            str(document["timing"]),
        )
        return Results(metric, mode, trials, judged_with)
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as error:
        what = f"no {error}" if isinstance(error, KeyError) else one_line(error, with_type=False)
        raise RaycompError(f"{source}: not a sweep's results: {what} ({_WRITTEN_BY})") from None


def _summary(row: dict[str, Any], metric: str) -> TrialSummary:
    columns = {column_name(attribute, metric): attribute for attribute in LEADING_COLUMNS + TRAILING_COLUMNS}
    overrides = {key: value for key, value in row.items() if key not in columns and key not in REPORT_KEYS}
    values = {attribute: _plain(row.get(column)) for column, attribute in columns.items()}
    curve = tuple(
        (point.get(keys.STEP), point.get("wall_s"), float(point[metric]))
        for point in row.get("curve") or []
        if finite(point.get(metric)) is not None
    )
    traces = row.get("traces")
    return TrialSummary(
        **values,
        overrides=overrides,
        curve=curve,
        machine=row.get("machine"),
        traces=None if traces is None else tuple(TraceRow.from_dict(trace) for trace in traces),
    )


def _plain(value: Any) -> Any:
    """A cell as the summary holds it: numbers that are not (NaN) read as None, strings and flags stay."""
    return value if isinstance(value, str | bool) or value is None else finite(value)
