"""The verdict rule, written once: which verdict a configuration's two intervals support (docs/report.md, "Verdict").

"Faster at equal accuracy" has two halves, and each must be shown, not assumed:
- **Accuracy**: the interval of the paired accuracy difference must lie above ``-tolerance`` (non-inferiority at
  the look's level) for ``faster``; wholly below it is ``less accurate``; inside ``±tolerance`` is equal.
- **Time**: the speed-up interval, with the accuracy's uncertainty carried into it. Its low end is priced on the
  frontier at the accuracy interval's *worse* end, its high end at the *better* end (``Evidence.cautious``): a
  configuration is not called faster than the baseline at an accuracy it may not have, nor slower than a baseline
  it may out-score.

Pure numbers in (log speed-ups, gains in the metric's better direction), a verdict and its reason out.
"""

from __future__ import annotations

import dataclasses
import math

from raycomp.results.frontier import ROUNDING, Position

FASTER, SLOWER, NO_EVIDENCE, LESS_ACCURATE = "faster", "slower", "no evidence", "less accurate"
EQUIVALENT, TRADE_OFF = "equivalent", "trade-off"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, TRADE_OFF, NO_EVIDENCE, LESS_ACCURATE)
RESOLVED = frozenset({FASTER, SLOWER, EQUIVALENT, TRADE_OFF, LESS_ACCURATE})  # an answer: no more seeds needed

Interval = tuple[float, float, float]  # (estimate, low, high)
Bounds = tuple[float, float]  # the range a metric can take: an accuracy's (0.0, 1.0)


@dataclasses.dataclass(frozen=True)
class Evidence:
    """What one configuration's paired seeds show. ``gain``: the accuracy difference turned so that higher is
    better, (mean, worse end, better end); ``speed``: the log speed-up priced at the mean accuracy; ``cautious``:
    the same estimate with its low end priced at the worse accuracy and its high end at the better one. The
    positions say where each accuracy lies against the frontier (``frontier.Reach``)."""

    n: int
    gain: Interval | None
    speed: Interval | None
    cautious: Interval | None
    at_mean: Position = "within"
    at_worse: Position = "within"
    at_better: Position = "within"
    time_ratio: float | None = None

    @property
    def speed_shown(self) -> bool:
        """The speed-up at the accuracy the configuration measured is shown above 1 (the search's cue: Screen,
        Tune and Compose go on with it; a recommendation also needs the accuracy side)."""
        return self.speed is not None and self.speed[1] > ROUNDING and self.at_mean != "below"

    def accuracy_shown(self, tolerance: float) -> bool:
        """Non-inferiority: the accuracy interval's worse end lies within ``tolerance`` of the baseline."""
        return self.gain is not None and self.gain[1] >= -tolerance


def decide(evidence: Evidence, tolerance: float, equivalence: float, accuracy_words: str = "") -> tuple[str, str]:
    """The verdict and, when it needs one, its reason in a few words (``accuracy_words``: the tolerance and the Δ
    interval as that reason names them, ``within 0.5 points: Δ [−5.7, +4.6] points``)."""
    e = evidence
    if e.cautious is None or e.gain is None:
        return NO_EVIDENCE, "no paired seeds" if e.n == 0 else "one paired seed: no interval"
    _, worse, better = e.gain
    if better < -tolerance:
        return LESS_ACCURATE, ""
    _, low, high = e.cautious
    margin = math.log1p(equivalence)
    if -tolerance <= worse and better <= tolerance and -margin <= low and high <= margin:
        return EQUIVALENT, f"speed-up within ±{equivalence:.0%}, accuracy within tolerance"
    if low > ROUNDING and e.accuracy_shown(tolerance):
        return FASTER, ""
    if high < -ROUNDING:
        if e.at_worse == "beyond":
            ratio = f"{e.time_ratio:.2f}× the baseline's time" if e.time_ratio else "slower"
            return TRADE_OFF, f"more accurate than every budget, {ratio}"
        if e.at_better != "beyond":
            return SLOWER, ""
        return NO_EVIDENCE, "may be more accurate than every budget: the speed-up is a lower bound"
    if e.speed_shown and not e.accuracy_shown(tolerance):
        return NO_EVIDENCE, f"accuracy not shown {accuracy_words or 'within tolerance'}"
    if e.at_mean == "below":
        return NO_EVIDENCE, "below the frontier (less accurate than every budget): the speed-up is an upper bound"
    if e.at_better == "beyond":
        return NO_EVIDENCE, "beyond the frontier (more accurate than every budget): the speed-up is a lower bound"
    return NO_EVIDENCE, ""


def delta_text(
    low: float | None, high: float | None, points: bool, tolerance: float | None = None, sign: int = 1
) -> str:
    """An accuracy difference's interval as people read it: in points for a [0, 1] metric (``[−5.7, +4.6]
    points``), else in the metric's units; with ``tolerance``, what it rules out (``sign`` -1 for a metric to
    minimise, whose worse end is the high one): ``equal within ±0.5 points``, ``no worse than 0.5 points``,
    ``worse by more than 0.5 points`` or ``not shown within 0.5 points``."""
    if low is None or high is None:
        return ""
    scale, digits, unit = (100.0, 1, " points") if points else (1.0, 4, "")
    text = f"[{low * scale:+.{digits}f}, {high * scale:+.{digits}f}]{unit}"
    if tolerance is None:
        return text
    worse, better = (low, high) if sign == 1 else (-high, -low)
    limit = f"{tolerance * scale:g}{unit}"
    if better < -tolerance:
        return f"{text}: worse by more than {limit}"
    if worse < -tolerance:
        return f"{text}: not shown within {limit}"
    return f"{text}: {'equal within ±' if better <= tolerance else 'no worse than '}{limit}"


def bounded(interval: Interval | None, bounds: Bounds | None) -> Interval | None:
    """A difference interval cut to what a metric in ``bounds`` can differ by: an accuracy difference lies in
    [-1, 1], however few seeds stretched the t interval past it (docs/report.md, "Intervals at 2-5 seeds")."""
    if interval is None or bounds is None:
        return interval
    width = bounds[1] - bounds[0]
    mean, low, high = interval
    return mean, max(low, -width), min(high, width)


def accuracy_words(interval: Interval | None, tolerance: float, bounds: Bounds | None) -> str:
    """``within 0.5 points: Δ [-5.7, +4.6] points``: the tolerance and the interval, in points for [0, 1]."""
    points = bounds == (0.0, 1.0)
    limit = f"{tolerance * 100:g} points" if points else f"{tolerance:g}"
    return f"within {limit}: Δ {delta_text(interval[1], interval[2], points)}" if interval else ""


def as_gain(interval: Interval, sign: int) -> Interval:
    """A difference interval turned so that higher is better: (mean, worse end, better end)."""
    mean, low, high = interval
    return (mean, low, high) if sign == 1 else (-mean, -high, -low)
