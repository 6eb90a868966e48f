"""The keys a sweep and a find judge their trials by, declared once: the ``sweep`` and ``find`` sections both are one.

``metric``/``mode`` what is compared, ``accuracy_tolerance`` the equal-accuracy margin in the metric's units,
``confidence`` of the intervals, ``equivalence`` the speed-up margin of no practical difference, ``timing`` the
clock, ``baseline_budgets`` the baseline's frontier (fractions of ``max_duration``) and ``control`` an arm identical
to the baseline (an A/A check of the machine's timing). ``raycomp.results.judging.Judging.of`` reads them.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from raycomp.base import keys
from raycomp.config.sections import Section

MAX_BUDGET = 4.0  # a baseline budget above 1.0 trains longer than max_duration: 4x is plenty to price a gain
JUDGING_KEYS = (
    "metric",
    "mode",
    "accuracy_tolerance",
    "confidence",
    "equivalence",
    "timing",
    "baseline_budgets",
    "control",
)


class JudgingSection(Section):
    """The judging keys with their defaults, shared by ``SweepConfig`` and ``FindConfig``. A find differs in two
    defaults only, said where it declares them: it always prices its candidates against a frontier and a control.
    Each section checks its ``baseline_budgets`` against its own arms (a find's cannot hold 1.0, its baseline)."""

    metric: str = keys.DEFAULT_METRIC
    mode: Literal["max", "min"] = keys.DEFAULT_MODE
    accuracy_tolerance: float = Field(keys.DEFAULT_TOLERANCE, ge=0)
    confidence: float = Field(keys.DEFAULT_CONFIDENCE, gt=0.5, lt=1)  # of the verdicts' intervals
    equivalence: float = Field(keys.DEFAULT_EQUIVALENCE, gt=0, lt=1)  # speed-ups within ±this are `equivalent`
    # the training time verdicts compare: the steps' own wall time, the process's CPU time in them (steadier on a
    # shared CPU-only machine; blind to waits and to GPU work), or the whole fit's wall time (docs/report.md)
    timing: Literal["steps", "cpu", "wall"] = "steps"
    baseline_budgets: list[float] = Field(default_factory=list)
    control: bool = False

    def judging_keys(self) -> dict[str, Any]:
        """The judging keys' values, as a ``sweep`` section takes them (a find's rounds train as sweeps)."""
        return {key: getattr(self, key) for key in JUDGING_KEYS}
