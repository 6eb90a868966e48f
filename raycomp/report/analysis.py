"""What the report derives from the trials without measuring anything: the Pareto front, repeats and
their spread, the traces summed over the sweep. Speed-ups are not computed here: they are
``raycomp.report.summary``'s, as the sweep's end made them or ``results.json`` holds them."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from raycomp import keys
from raycomp.report.summary import TrialSummary
from raycomp.report.sweep import Sweep

SEED_KEYS = ("seed",)  # a config repeated with another seed is the same config, repeated


def pareto_front(points: Sequence[tuple[float, float]], mode: str = "max") -> list[int]:
    """Indices of the points (time, metric) no other point beats: at most the time and at least the metric
    (``mode="max"``; at most, for ``"min"``), better in one. Sorted by time; equal points all stay."""

    def better_or_equal(a: float, b: float) -> bool:
        return a >= b if mode == "max" else a <= b

    front = []
    for i, (time_i, value_i) in enumerate(points):
        dominated = any(
            time_j <= time_i and better_or_equal(value_j, value_i) and (time_j < time_i or value_j != value_i)
            for j, (time_j, value_j) in enumerate(points)
            if j != i
        )
        if not dominated:
            front.append(i)
    return sorted(front, key=lambda i: (points[i][0], i))


def front_trials(sweep: Sweep) -> list[TrialSummary]:
    """The trials on the Pareto front of final metric against training wall time.

    Only trials that trained to their end count: a trial the scheduler stopped reports its metric in
    the middle of its learning-rate schedule, not what its config reaches in that time.
    """
    finished = [t for t in sweep.trials if t.has_result and t.status == keys.TERMINATED]
    points = [(t.wall_s, t.final_metric) for t in finished]
    return [finished[i] for i in pareto_front(points, sweep.mode)]


@dataclasses.dataclass(frozen=True)
class Spread:
    """Several trials of one config (same arguments; seeds apart): the range of what they measured."""

    variant: str
    overrides: dict[str, Any]
    trials: tuple[TrialSummary, ...]

    @property
    def n(self) -> int:
        return len(self.trials)

    def range(self, attribute: str) -> tuple[float, float] | None:
        values = [getattr(t, attribute) for t in self.trials if getattr(t, attribute) is not None]
        return (min(values), max(values)) if values else None

    @property
    def never(self) -> int:
        """Trials of this config that never reached the baseline's final metric."""
        return sum(1 for t in self.trials if t.speedup is None)


def repeats(sweep: Sweep) -> list[Spread]:
    """Trials with a result grouped by config (variant and arguments, seed aside), in trial order."""
    groups: dict[tuple, list[TrialSummary]] = {}
    for trial in sweep.trials:
        if trial.has_result:
            groups.setdefault(config_key(trial), []).append(trial)
    return [
        Spread(members[0].variant, _without_seed(members[0].overrides), tuple(members)) for members in groups.values()
    ]


def config_key(trial: TrialSummary) -> tuple:
    return (trial.variant, tuple(sorted((k, repr(v)) for k, v in _without_seed(trial.overrides).items())))


def _without_seed(overrides: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in overrides.items() if k not in SEED_KEYS}


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


def format_args(overrides: dict[str, Any], sep: str = ", ") -> str:
    """``keep=0.412, interrupt=2``: each swept key by its last part, floats to 3 significant digits."""
    short = {key: key.split(".")[-1] for key in overrides}
    if len(set(short.values())) < len(short):  # two algorithms' "keep": spell the keys out
        short = {key: key for key in overrides}
    parts = []
    for key, value in sorted(overrides.items()):
        text = f"{value:.3g}" if isinstance(value, float) else str(value)
        parts.append(f"{short[key]}={text}")
    return sep.join(parts)
