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

from pydantic import ValidationError

from raycomp.base import keys
from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import NotFound, RaycompError
from raycomp.config.messages import Invalid, KeyPath, dotted, explain
from raycomp.results.configs import SweepVerdicts
from raycomp.results.judging import Judging
from raycomp.results.results_document import ResultsDocument, TrialRow
from raycomp.results.summary import (
    LEADING_COLUMNS,
    TRAILING_COLUMNS,
    TraceRow,
    TrialSummary,
    best,
)

# results.json's per-trial keys besides the row's columns
REPORT_KEYS = ("machine", "curve", "traces", "error_line")
_WRITTEN_BY = "python -m raycomp.tune writes it at a sweep's end; the report needs an intact one"


@dataclasses.dataclass(frozen=True)
class Results:
    """What ``results.json`` holds, as summaries again."""

    metric: str
    mode: str
    trials: tuple[TrialSummary, ...]
    judging: Judging  # what the sweep was judged with, to judge it again the same way


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
            "error_line": s.error_line,
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
    """``results.json``'s document as summaries. One that is not what ``write_results`` writes, or holds a value
    of the wrong type or out of range, is a ``RaycompError`` naming ``source`` and the first key found wrong
    (exit 2), not a traceback."""
    try:
        read = ResultsDocument.model_validate(document)
    except ValidationError as error:
        raise _not_results(source, error) from None
    trials = []
    for index, row in enumerate(read.trials):
        given = {("final_metric" if key == read.metric else key): value for key, value in row.items()}
        try:
            trials.append(_summary(TrialRow.model_validate(given), read.metric))
        except ValidationError as error:
            raise _not_results(source, error, ("trials", index), read.metric) from None
    looks = None if read.repeats is None or read.max_repeats is None else (read.repeats, read.max_repeats)
    judging = Judging(read.accuracy_tolerance, read.confidence, read.equivalence, looks, read.timing, read.metric)
    return Results(read.metric, read.mode, tuple(trials), judging)


def _not_results(source: str, error: ValidationError, where: KeyPath = (), metric: str = "") -> RaycompError:
    """The first entry pydantic found wrong, as ``source: not a sweep's results: key.path: what is wrong``."""
    entry = error.errors(include_url=False)[0]
    raised = entry.get("ctx", {}).get("error")
    if isinstance(raised, Invalid):
        entry_path, message = raised.problems[0]
    else:
        entry_path = tuple(metric if part == "final_metric" else part for part in entry["loc"])
        field = ResultsDocument.model_fields.get(str(entry_path[0])) if not where and len(entry_path) == 1 else None
        message = "" if entry["type"] == "missing" else explain(entry, field)
    path = (*where, *entry_path)
    if entry["type"] == "missing":
        problem = f"{dotted(path[:-1])}: no {path[-1]!r}" if path[:-1] else f"no {path[-1]!r}"
    else:
        problem = f"{dotted(path)}: {message}" if path else message
    return RaycompError(f"{source}: not a sweep's results: {problem} ({_WRITTEN_BY})")


def _summary(row: TrialRow, metric: str) -> TrialSummary:
    values = {attribute: getattr(row, attribute) for attribute in LEADING_COLUMNS + TRAILING_COLUMNS}
    overrides = {key: value for key, value in (row.model_extra or {}).items() if key not in REPORT_KEYS}
    curve = tuple(
        (point.get(keys.STEP), point.get("wall_s"), float(value))
        for point in row.curve
        if (value := point.get(metric)) is not None
    )
    traces = None if row.traces is None else tuple(TraceRow.from_dict(trace.model_dump()) for trace in row.traces)
    return TrialSummary(
        **values, overrides=overrides, curve=curve, machine=row.machine, traces=traces, error_line=row.error_line
    )
