"""What the report derives from a sweep without measuring anything: how a configuration is named, the
baseline frontier as a line, the traces summed over the sweep. Speed-ups and verdicts are not computed
here: they are ``raycomp.results.configs``' (``SweepVerdicts``), one computation for the CLI,
``results.json`` and the report."""

from __future__ import annotations

import dataclasses
from typing import Any

from raycomp.base import keys
from raycomp.report.sweep import Sweep
from raycomp.results.configs import ConfigSummary, SweepVerdicts

REFERENCES = (keys.BASELINE, keys.FRONTIER)  # the variants speed-ups are measured against: no verdict of their own


def described(config: ConfigSummary) -> str:
    """A configuration in words: its swept arguments, or what a reference arm is."""
    if config.variant == keys.BASELINE:
        return "the baseline (full budget)"
    if config.variant == keys.FRONTIER:
        return f"the baseline at {config.budget:.0%} of max_duration" if config.budget else "the baseline, shorter"
    if config.variant == keys.CONTROL:
        return "identical to the baseline (A/A control)"
    return format_args(config.arguments) or config.config_id


def has_point(config: ConfigSummary) -> bool:
    return config.accuracy_median is not None and config.time_median_s is not None


def frontier_line(verdicts: SweepVerdicts) -> list[ConfigSummary]:
    """The baseline and its shorter budgets with a median point, sorted by time: the frontier as drawn."""
    points = [c for c in verdicts.configs if c.variant in REFERENCES and has_point(c)]
    return sorted(points, key=lambda c: c.time_median_s or 0.0)


def baseline_config(verdicts: SweepVerdicts) -> ConfigSummary | None:
    return next((c for c in verdicts.configs if c.variant == keys.BASELINE), None)


def verdict_counts(verdicts: SweepVerdicts) -> dict[str, int]:
    """How many method configurations got each verdict (or failed), in the order the verdicts are named."""
    counts: dict[str, int] = {}
    for config in verdicts.configs:
        shown = config.shown_verdict
        if config.variant == keys.METHOD and shown is not None:
            counts[shown] = counts.get(shown, 0) + 1
    return counts


@dataclasses.dataclass(frozen=True)
class TraceTotal:
    """One algorithm at one event, summed over the sweep's trials."""

    algorithm: str
    event: str
    trials: int
    count: int
    total_s: float
    train_s: float  # the training wall time of the trials it ran in, for its share

    @property
    def share(self) -> float | None:
        return self.total_s / self.train_s if self.train_s else None


def trace_totals(sweep: Sweep) -> list[TraceTotal]:
    """Time per algorithm and event over all trials, largest first."""
    sums: dict[tuple[str, str], list[Any]] = {}
    for trial in sweep.trials:
        for row in trial.traces or ():
            entry = sums.setdefault((row.algorithm, row.event), [0, 0, 0.0, 0.0])
            entry[0] += 1
            entry[1] += row.count
            entry[2] += row.total_s
            entry[3] += trial.wall_s or 0.0
    totals = [TraceTotal(a, e, n, count, total, train) for (a, e), (n, count, total, train) in sums.items()]
    return sorted(totals, key=lambda t: -t.total_s)


def has_traces(sweep: Sweep) -> bool:
    return any(t.traces is not None for t in sweep.trials)


def format_args(overrides: dict[str, Any]) -> str:
    """``keep=0.412, interrupt=2``: each swept key by its last part, floats to 3 significant digits. Keys
    without a value (a reference arm's blank columns) are left out."""
    present = {key: value for key, value in overrides.items() if value is not None}
    short = {key: key.split(".")[-1] for key in present}
    if len(set(short.values())) < len(short):  # two algorithms' "keep": spell the keys out
        short = {key: key for key in present}
    parts = []
    for key, value in sorted(present.items()):
        text = f"{value:.3g}" if isinstance(value, float) else str(value)
        if isinstance(value, list):  # sweep.space.algorithms: the algorithms this configuration runs
            text = "+".join(map(str, value))
        parts.append(f"{short[key]}={text}")
    return ", ".join(parts)
