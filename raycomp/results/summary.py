"""A sweep's answer to "faster than baseline?": per trial, accuracy, time, time to the baseline's accuracy.

Pure Python over plain records (what each trial reported, in order), so it is tested without Ray. The
``TrialSummary`` made here is the one trial type of the results table, ``results.json`` and the speed-up
report. Times are training wall time from FIT_START, measured in the trial: the fixed cost of starting
a trial is the same for every trial and is not what a method speeds up.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from raycomp.base import keys
from raycomp.config.arm import Arm

# The non-argument columns of a results row, as TrialSummary attributes; the swept arguments go between
# the two groups, and "final_metric" is named after the sweep's metric. Reading a row back uses the same
# names, so a new column is never mistaken for a swept argument.
LEADING_COLUMNS = ("trial_id", "config_id", "variant", "repeat", "budget")
TRAILING_COLUMNS = (
    "status",
    "final_metric",
    "wall_s",
    "cpu_s",
    "steps_s",
    "steps_cpu_s",
    "host_load",
    "time_to_baseline_s",
    "speedup",
    "diverged",
    "error",
)
# A loss this many times its first value (or one that is not a number) means the run diverged: its accuracy
# and time are not a recipe's, so it is flagged everywhere and never named best.
DIVERGED_FACTOR = 10.0
LOSS_KEYS = (keys.TRAIN_LOSS, "eval/loss")

Curve = tuple[tuple[float | None, float | None, float], ...]  # (step, wall s, metric) at each report with a value


@dataclasses.dataclass(frozen=True)
class TraceRow:
    """One algorithm at one event over a whole trial: how often it ran and its wall time in total."""

    algorithm: str
    event: str
    count: int
    total_s: float

    @classmethod
    def from_dict(cls, row: Mapping[str, Any]) -> TraceRow:
        return cls(str(row["algorithm"]), str(row["event"]), int(row["count"]), float(row["total_s"]))

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class TrialRecord:
    """What one trial did: its ``arm`` (variant, configuration, the values it set, repeat, budget), status, and
    every report.

    ``traces`` is the Engine's trace rows (``keys.TRACES``, dicts of algorithm, event, count, total_s)
    when the driver has them apart from the history; left None, ``summarize`` takes them from the last
    report in ``history`` that carries ``keys.TRACES`` (each report's value is the whole run's so far).
    """

    trial_id: str
    arm: Arm
    status: str
    history: list[dict[str, Any]]
    error: str | None = None
    traces: Sequence[Mapping[str, Any]] | None = None
    error_line: str | None = None  # the error's type and first line: what a failed configuration says


@dataclasses.dataclass(frozen=True)
class TrialSummary:
    """One trial as the table, ``results.json`` and the report show it; None where it has no value."""

    trial_id: str
    variant: str
    overrides: dict[str, Any]
    status: str
    final_metric: float | None
    wall_s: float | None
    time_to_baseline_s: float | None
    speedup: float | None
    error: str | None = None
    # What the report draws besides (results.json, not the CSV): the time-to-accuracy curve, the hardware
    # the times were measured on, and the Engine's trace rows (None: not known, e.g. a trial that never reported).
    curve: Curve = ()
    machine: str | None = None
    traces: tuple[TraceRow, ...] | None = None
    run_id: str | None = None  # the trial's MLflow run, when the report found it
    config_id: str | None = None
    repeat: int | None = None
    budget: float | None = None
    cpu_s: float | None = None  # the trial process's CPU time in training (rank 0's)
    steps_s: float | None = None  # the training steps' own time (launch/step_clock.StepClock): what verdicts compare
    steps_cpu_s: float | None = None  # the process's CPU time in those steps, the cross-check
    host_load: float | None = None  # the host's 1-minute load average, mean over the trial's results
    diverged: bool = False  # its loss became NaN or infinite, or grew DIVERGED_FACTOR times its first value
    error_line: str | None = None  # the error's type and first line (``error`` is every line, joined)

    @property
    def is_baseline(self) -> bool:
        return self.variant == keys.BASELINE

    @property
    def has_result(self) -> bool:
        return self.final_metric is not None and self.wall_s is not None

    def row(self, metric: str) -> dict[str, Any]:
        """The flat row of ``results.csv``: identity, the swept arguments, then the numbers."""
        return {
            **{column: getattr(self, column) for column in LEADING_COLUMNS},
            **{key: value for key, value in sorted(self.overrides.items())},
            **{column_name(column, metric): getattr(self, column) for column in TRAILING_COLUMNS},
        }


def column_name(attribute: str, metric: str) -> str:
    return metric if attribute == "final_metric" else attribute


def summarize(
    trials: Sequence[TrialRecord], metric: str = keys.DEFAULT_METRIC, mode: str = keys.DEFAULT_MODE
) -> list[TrialSummary]:
    """Summaries in trial order; speed-up = baseline wall time / time to reach the baseline's final metric,
    against the baseline of the same repeat (else the first baseline)."""
    baselines = [t for t in trials if t.arm.variant == keys.BASELINE and t.history]
    summaries = []
    for trial in trials:
        arm = trial.arm
        baseline = next((b for b in baselines if b.arm.repeat == arm.repeat), baselines[0] if baselines else None)
        target = finite(baseline.history[-1].get(metric)) if baseline else None
        baseline_wall = finite(baseline.history[-1].get(keys.WALL)) if baseline else None
        last = trial.history[-1] if trial.history else {}
        reached = _first_reaching(trial.history, metric, target, mode) if target is not None else None
        summaries.append(
            TrialSummary(
                trial_id=trial.trial_id,
                variant=arm.variant,
                overrides=arm.applied,
                status=trial.status,
                final_metric=finite(last.get(metric)),
                wall_s=finite(last.get(keys.WALL)),
                time_to_baseline_s=reached,
                speedup=baseline_wall / reached if reached and baseline_wall else None,
                error=trial.error,
                curve=curve(trial.history, metric),
                machine=_machine(trial.history),
                traces=traces_of(trial),
                config_id=arm.config_id,
                repeat=arm.repeat,
                budget=arm.budget,
                cpu_s=finite(last.get(keys.CPU)),
                steps_s=finite(last.get(keys.STEPS)),
                steps_cpu_s=finite(last.get(keys.STEPS_CPU)),
                host_load=_mean(trial.history, keys.HOST_LOAD),
                diverged=diverged(trial.history),
                error_line=trial.error_line,
            )
        )
    return summaries


def diverged(history: Sequence[Mapping[str, Any]]) -> bool:
    """Whether a loss the trial reported became NaN or infinite, or ``DIVERGED_FACTOR`` times its first value."""
    for key in LOSS_KEYS:
        values = [report[key] for report in history if isinstance(report.get(key), int | float)]
        if any(not math.isfinite(value) for value in values):
            return True
        if len(values) > 1 and values[0] > 0 and values[-1] > DIVERGED_FACTOR * values[0]:
            return True
    return False


def _mean(history: Sequence[Mapping[str, Any]], key: str) -> float | None:
    values = [v for v in (finite(r.get(key)) for r in history) if v is not None]
    return sum(values) / len(values) if values else None


def traces_of(trial: TrialRecord) -> tuple[TraceRow, ...] | None:
    """The trial's trace rows: its ``traces`` field, else those of its last report that has them."""
    rows = trial.traces
    if rows is None:
        rows = next(
            (r[keys.TRACES] for r in reversed(trial.history) if isinstance(r.get(keys.TRACES), list | tuple)), None
        )
    return None if rows is None else tuple(TraceRow.from_dict(row) for row in rows)


def _first_reaching(history: list[dict[str, Any]], metric: str, target: float, mode: str) -> float | None:
    for report in history:
        value = finite(report.get(metric))
        if value is not None and (value >= target if mode == "max" else value <= target):
            return finite(report.get(keys.WALL))
    return None


def curve(history: Sequence[Mapping[str, Any]], metric: str) -> Curve:
    """``(step, wall s, metric)`` at each report that has the metric: the trial's time-to-accuracy curve."""
    points = []
    for report in history:
        value = finite(report.get(metric))
        if value is not None:
            points.append((finite(report.get(keys.STEP)), finite(report.get(keys.WALL)), float(value)))
    return tuple(points)


def finite(value: Any) -> Any:
    """A number that is one (finite, not a bool), else None: what a missing or broken value reads as (so
    results.json never holds a bare NaN or Infinity, which are not JSON)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return value


def _machine(history: Sequence[Mapping[str, Any]]) -> str | None:
    """Where the trial's latest times were measured (each report names it)."""
    return next((r[keys.MACHINE] for r in reversed(history) if isinstance(r.get(keys.MACHINE), str)), None)


def best(summaries: Sequence[TrialSummary], mode: str = keys.DEFAULT_MODE) -> TrialSummary | None:
    """The trial with the best final metric among those that did not diverge."""
    scored = [s for s in summaries if s.final_metric is not None and not s.diverged]
    if not scored:
        return None
    key = (lambda s: s.final_metric) if mode == "max" else (lambda s: -s.final_metric)
    return max(scored, key=key)
