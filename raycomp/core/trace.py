"""Traces: the record of every algorithm run, and their running totals per algorithm and event."""

from __future__ import annotations

import dataclasses
from collections import Counter

from raycomp.core.event import Event


@dataclasses.dataclass(frozen=True)
class Trace:
    """One algorithm at one event: whether it ran, its place in the order, its exit code and wall time."""

    name: str
    event: Event
    exit_code: int | None = None
    order: int | None = None
    run: bool = False
    duration_s: float = 0.0


@dataclasses.dataclass
class TraceStats:
    """Totals for one (algorithm, event): kept instead of every Trace so long runs stay O(1) in memory."""

    algorithm: str
    event: Event
    count: int = 0
    total_s: float = 0.0
    exit_codes: Counter = dataclasses.field(default_factory=Counter)

    @property
    def mean_s(self) -> float:
        return self.total_s / self.count if self.count else 0.0

    def as_row(self) -> dict[str, object]:
        return {
            "algorithm": self.algorithm,
            "event": self.event.value,
            "count": self.count,
            "total_s": self.total_s,
            "mean_s": self.mean_s,
            "exit_codes": {str(code): n for code, n in self.exit_codes.items()},
        }


class TraceSummary:
    """Accumulates the Traces of algorithms that ran, keyed by (algorithm, event)."""

    def __init__(self) -> None:
        self._stats: dict[tuple[str, Event], TraceStats] = {}

    def add(self, trace: Trace) -> None:
        if not trace.run:
            return
        key = (trace.name, trace.event)
        stats = self._stats.get(key)
        if stats is None:
            stats = self._stats[key] = TraceStats(trace.name, trace.event)
        stats.count += 1
        stats.total_s += trace.duration_s
        stats.exit_codes[trace.exit_code] += 1

    def get(self, algorithm: str, event: Event) -> TraceStats | None:
        return self._stats.get((algorithm, event))

    def rows(self) -> list[dict[str, object]]:
        return [stats.as_row() for stats in self._stats.values()]

    def total_s(self, algorithm: str | None = None) -> float:
        """Wall time spent in algorithms (one, or all of them) over the whole run."""
        return sum(s.total_s for s in self._stats.values() if algorithm in (None, s.algorithm))
