"""``Judging``: the settings a sweep's trials are judged with, and the clock whose time they compare.

Read once from the ``sweep`` or ``find`` section (``Judging.of``), or from ``results.json`` (``results_files``) so a
sweep read back is judged as when it ran; handed whole to ``summarize_configs`` and kept by its ``SweepVerdicts``.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from raycomp.base import keys
from raycomp.results.summary import TrialSummary
from raycomp.results.verdicts import DEFAULT_CONFIDENCE, DEFAULT_EQUIVALENCE, DEFAULT_TOLERANCE, Bounds, Run

if TYPE_CHECKING:
    from raycomp.config.judging import JudgingSection

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
    (repeats, max_repeats) of a sweep that adds seeds while unresolved (None when it adds none), ``timing``,
    the clock the verdicts compare (a key of ``TIMINGS``), and ``metric``, whose range bounds its intervals."""

    tolerance: float = DEFAULT_TOLERANCE
    confidence: float = DEFAULT_CONFIDENCE
    equivalence: float = DEFAULT_EQUIVALENCE
    looks: tuple[int, int] | None = None
    timing: str = "steps"
    metric: str = keys.DEFAULT_METRIC

    def __post_init__(self) -> None:
        if self.looks is not None and self.looks[1] <= self.looks[0]:  # no seed is ever added: one look
            object.__setattr__(self, "looks", None)
        if self.timing not in TIMINGS:
            raise ValueError(f"timing is one of {', '.join(TIMINGS)}, got {self.timing!r}")

    @classmethod
    def of(cls, section: JudgingSection) -> Judging:
        """The judging keys of a ``sweep`` or ``find`` section (``config.judging``): the one place that reads them.
        A sweep's looks are its repeats; a find's stages each have their own (``FindPlan``)."""
        tolerance = getattr(section, "numeric_tolerance", section.accuracy_tolerance)  # a find's: auto or a number
        looks = getattr(section, "looks", None)
        return cls(tolerance, section.confidence, section.equivalence, looks, section.timing, section.metric)

    @property
    def bounds(self) -> Bounds | None:
        """The range the metric can take (an accuracy's [0, 1]), or None when it is not known to be bounded."""
        return metric_bounds(self.metric)

    def verdict_options(self, mode: str) -> dict[str, Any]:
        """What ``verdict_for`` takes from these settings (its level aside, which a sequential look sets)."""
        return {"mode": mode, "tolerance": self.tolerance, "equivalence": self.equivalence, "bounds": self.bounds}

    @property
    def clock(self) -> str:
        """What the compared times are, in words (``training steps' CPU time``)."""
        return CLOCK_LABELS[self.timing]


# Metrics known to lie in [0, 1], by a word of their name: torchmetrics' classification and segmentation scores.
_UNIT_WORDS = ("accuracy", "precision", "recall", "f1", "fbeta", "auroc", "specificity", "jaccard", "dice", "iou")
_UNIT_TOKENS = frozenset({"acc", "auc", "ap", "map"})


def metric_bounds(metric: str) -> Bounds | None:
    """[0, 1] for a metric whose name says it is a rate or a score (``eval/accuracy``, ``eval/top5_accuracy``,
    ``eval/MulticlassF1Score``); None for the rest (a loss, an error in the data's units, a perplexity), whose
    intervals are left as the t distribution gives them."""
    name = metric.rpartition("/")[2].lower()
    tokens = set(name.replace("-", "_").split("_"))
    return (0.0, 1.0) if any(word in name for word in _UNIT_WORDS) or tokens & _UNIT_TOKENS else None


DEFAULT_JUDGING = Judging()  # the sweep section's defaults


def trial_time(trial: TrialSummary, timing: str = "steps") -> float | None:
    """The training time verdicts use (``sweep.timing``): the steps' own wall time, the process's CPU time in
    them, or the whole fit's wall time; a trial without it (a results.json written before steps were
    timed) falls back to its wall time."""
    value = getattr(trial, TIMINGS[timing])
    return value if value is not None else trial.wall_s


def run_of(trial: TrialSummary, timing: str = "steps") -> Run:
    """A trial as the statistics see it (``verdicts.Run``), for a sweep's verdicts and a find's race alike: only a
    trial that trained to its end has a final value and time; only a frontier arm has a budget (the full baseline's
    is 1.0, a method's none)."""
    done = trial.status == keys.TERMINATED
    curve = tuple((wall, value) for _, wall, value in trial.curve if wall is not None)
    return Run(
        seed=trial.repeat or 0,
        accuracy=trial.final_metric if done else None,
        time_s=trial_time(trial, timing) if done else None,
        curve=curve,
        budget=trial.budget if trial.variant == keys.FRONTIER else None,
    )
