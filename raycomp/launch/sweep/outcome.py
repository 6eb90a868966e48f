"""Tune's results as the summary's ``TrialRecord``s: each trial's arm, status, history, traces and error."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune

from raycomp.base import keys
from raycomp.base.errors import first_line, one_line
from raycomp.base.layout import STORED_TRIAL_HISTORY, TRIAL_HISTORY
from raycomp.config.arm import Arm
from raycomp.launch.sinks import StoredFile
from raycomp.launch.sweep.ledger import result_arm
from raycomp.results.summary import TrialRecord

# One Tune experiment's results, not the ResultGrid that holds every trial's whole state (runner.fit_experiment).
ExperimentResults = list[tune.Result]


@dataclasses.dataclass
class SweepOutcome:
    """The sweep's Tune results, one list per experiment, whether a Ctrl-C (or SIGTERM) stopped it, and how
    many of its trials were left unfinished then."""

    grids: list[ExperimentResults]
    interrupted: bool = False
    unfinished: int = 0


def trial_records(grids: tune.ResultGrid | Iterable[Iterable[tune.Result]]) -> list[TrialRecord]:
    """Every trial's arm, status and full report history over the sweep's Tune experiments, baseline first.

    An arm trained twice (only if a lost state made a continued sweep train it again) counts once: its
    finished trial, else its latest.
    """
    if isinstance(grids, tune.ResultGrid):
        grids = [grids]
    records: dict[str, TrialRecord] = {}
    trials = sweep_trials(grids)
    stored = _stored_histories([result for result, _ in trials])
    for result, arm in trials:
        record = _record(result, arm, stored.get(result.path))
        key = f"{arm.config_id} {arm.key()}"
        if key not in records or records[key].status != keys.TERMINATED:
            records[key] = record
    return sorted(records.values(), key=lambda record: record.arm.variant != keys.BASELINE)


def sweep_trials(grids: Iterable[Iterable[tune.Result]]) -> list[tuple[tune.Result, Arm]]:
    """Each Tune result of the sweep's arms, with its arm. A trial with none is not one of them: Tune made it up
    from a saved state it could not read (``run_trial`` ended it at once), and it is left out of every count."""
    found = []
    for grid in grids:
        for result in grid:
            arm = result_arm(result)
            if arm is not None:
                found.append((result, arm))
    return found


def _record(result: tune.Result, arm: Arm, stored_history: str | None = None) -> TrialRecord:
    history = trial_history(result, stored_history)
    trial_id = (result.metrics or {}).get("trial_id") or os.path.basename(result.path)
    status = _status(result, history)
    error = _error_line(result.error) if result.error else None
    traces = (result.metrics or {}).get(keys.TRACES)  # the last result's: whole-run totals
    return TrialRecord(
        trial_id,
        arm,
        status,
        history,
        error,
        traces=traces,
        error_line=first_line(_raised(result.error)) if result.error else None,
    )


def trial_history(result: tune.Result, stored_history: str | None = None) -> list[dict[str, Any]]:
    """The trial's results in step order, each step once: its own ``history.jsonl``, with Tune's rows for any
    step the file lacks.

    A local-mode trial writes each result to the file before it sends Tune the few keys Tune reads
    (``sinks.TUNE_KEYS``), so the file is the whole record; it also has the results a driver killed outright
    had not saved, which a trial resumed past them does not report again. A step trained twice (after a resume
    from an older checkpoint) counts once, with its latest values. In a bucket Tune keeps no result files
    (``loggers.result_loggers``): the trial's history is its ``result.json`` there, read from ``stored_history``
    when the caller fetched it already.
    """
    rows = result.metrics_dataframe.to_dict("records") if result.metrics_dataframe is not None else []
    own = _rows(stored_history) if stored_history is not None else _own_history(result)
    by_step: dict[Any, dict[str, Any]] = {}
    for index, row in enumerate([*rows, *own]):
        step = row.get(keys.STEP)
        by_step.setdefault(("row", index) if step is None else step, {}).update(row)
    return sorted(by_step.values(), key=lambda row: row.get(keys.STEP, -1))


def _own_history(result: tune.Result) -> list[dict[str, Any]]:
    """The rows of the trial's own history, in its folder or in a bucket."""
    if isinstance(result.filesystem, pyarrow.fs.LocalFileSystem):
        path = Path(result.path) / TRIAL_HISTORY
        return _rows(path.read_text(encoding="utf-8", errors="replace") if path.is_file() else "")
    return _rows(_stored_history(result))


def _stored_history(result: tune.Result) -> str:
    """A trial's history in a bucket: its ``result.json``, or the ``history.jsonl`` a raycomp before 2026-11-27
    wrote there (a sweep it started, resumed by this one)."""
    text = StoredFile(result.filesystem, f"{result.path}/{STORED_TRIAL_HISTORY}").read_text()
    return text or StoredFile(result.filesystem, f"{result.path}/{TRIAL_HISTORY}").read_text()


def _stored_histories(results: list[tune.Result]) -> dict[str, str]:
    """The history of each trial in a bucket, by its path, fetched 16 at a time: a sweep's end reads one per
    trial, and one after another they would take a request's latency each."""
    stored = [result for result in results if not isinstance(result.filesystem, pyarrow.fs.LocalFileSystem)]
    if not stored:
        return {}
    with ThreadPoolExecutor(max_workers=16) as pool:
        return {result.path: text for result, text in zip(stored, pool.map(_stored_history, stored), strict=True)}


def kept_result(result: tune.Result) -> tune.Result:
    """A trial's Tune result as the sweep keeps it. In a bucket, without the DataFrame Tune read from the trial's
    ``result.json``: ``trial_history`` reads that file whole (Tune's rows would add flattened copies of its nested
    keys), and the frames of 10,000 trials would stay in the driver to the sweep's end."""
    if isinstance(result.filesystem, pyarrow.fs.LocalFileSystem) or result.metrics_dataframe is None:
        return result
    return dataclasses.replace(result, metrics_dataframe=None)


def _rows(text: str) -> list[dict[str, Any]]:
    """A history file's results; a line cut by a kill is skipped."""
    rows = []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line))
        except ValueError:
            continue
    return rows


def quiet_missing_result_files() -> None:
    """Drops Tune's warning, as it builds a ResultGrid, that a trial has no result.json or progress.csv: in a
    bucket a trial that never reported has none (``loggers.result_loggers``; its error is in results.json)."""
    logging.getLogger("ray.tune.analysis.experiment_analysis").addFilter(_no_result_files_warning)


def _no_result_files_warning(record: logging.LogRecord) -> bool:
    return not record.getMessage().startswith("Failed to fetch metrics for")


def unfinished(results: Iterable[tune.Result]) -> int:
    """Trials neither finished, stopped by the scheduler, nor failed: what an interrupted sweep left for
    ``--resume`` (Tune marks the last result of a trial that ended, or that its scheduler stopped, done)."""
    return sum(
        1 for result, _ in sweep_trials([results]) if not result.error and not (result.metrics or {}).get("done")
    )


def _status(result: tune.Result, history: list[dict[str, Any]]) -> str:
    if result.error:
        return keys.ERROR
    if history and history[-1].get(keys.FINISHED):
        return keys.TERMINATED
    # Tune marks the last result of a trial that ended (or that its scheduler stopped) done.
    return keys.STOPPED if (result.metrics or {}).get("done") else keys.INTERRUPTED


def _error_line(error: BaseException) -> str:
    """The error that ended a trial on one line: the trial's own exception, not Ray's wrapper around it."""
    return one_line(_raised(error), limit=500, separator=" | ")


def _raised(error: BaseException) -> BaseException:
    """The exception the trial raised: a RayTaskError carries it as its cause."""
    return getattr(error, "cause", None) or error
