"""``Judging``: the settings a sweep's trials are judged with, and the clock whose time they compare.

Read once from the ``sweep`` section (``Judging.of``), or from ``results.json`` (``results_files``) so a sweep
read back is judged as when it ran; handed whole to ``summarize_configs`` and kept by its ``SweepVerdicts``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from raycomp.results.summary import TrialSummary
from raycomp.results.verdicts import DEFAULT_CONFIDENCE, DEFAULT_EQUIVALENCE, DEFAULT_TOLERANCE

if TYPE_CHECKING:
    from raycomp.config import SweepConfig

TIMINGS = {"steps": "steps_s", "cpu": "steps_cpu_s", "wall": "wall_s"}  # sweep.timing -> TrialSummary field
CLOCK_LABELS = {  # sweep.timing -> what its times are, as an axis or a sentence names them
    "steps": "training steps' wall time",
    "cpu": "training steps' CPU time",
    "wall": "training wall time",
}


@dataclasses.dataclass(frozen=True)
class Judging:
    """``tolerance`` (sweep.accuracy_tolerance, in the metric's units), ``confidence`` of the intervals (over all
    looks, when sequential), ``equivalence`` (the speed-up margin of no practical difference), ``looks`` =
    (repeats, max_repeats) of a sweep that adds seeds while unresolved (None when it adds none) and ``timing``,
    the clock the verdicts compare (a key of ``TIMINGS``)."""

    tolerance: float = DEFAULT_TOLERANCE
    confidence: float = DEFAULT_CONFIDENCE
    equivalence: float = DEFAULT_EQUIVALENCE
    looks: tuple[int, int] | None = None
    timing: str = "steps"

    def __post_init__(self) -> None:
        if self.looks is not None and self.looks[1] <= self.looks[0]:  # no seed is ever added: one look
            object.__setattr__(self, "looks", None)
        if self.timing not in TIMINGS:
            raise ValueError(f"timing is one of {', '.join(TIMINGS)}, got {self.timing!r}")

    @classmethod
    def of(cls, sweep: SweepConfig) -> Judging:
        """The judging keys of a ``sweep`` section: the one place that reads them."""
        looks = (sweep.repeats, sweep.max_repeats or sweep.repeats)
        return cls(sweep.accuracy_tolerance, sweep.confidence, sweep.equivalence, looks, sweep.timing)

    @property
    def clock(self) -> str:
        """What the compared times are, in words (``training steps' CPU time``)."""
        return CLOCK_LABELS[self.timing]


DEFAULT_JUDGING = Judging()  # the sweep section's defaults


def trial_time(trial: TrialSummary, timing: str = "steps") -> float | None:
    """The training time verdicts use (``sweep.timing``): the steps' own wall time, the process's CPU time in
    them, or the whole fit's wall time; a trial without it (a results.json written before steps were
    timed) falls back to its wall time."""
    value = getattr(trial, TIMINGS[timing])
    return value if value is not None else trial.wall_s
