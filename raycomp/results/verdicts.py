"""Speed-up verdicts a user can trust: paired seeds, a pooled monotone frontier, t intervals (issues 12, 23).

Pure numbers in, a ``Verdict`` out (no Ray, MLflow or torch). Every configuration runs with seeds
0..N-1; the seed index pairs a configuration's trial with the baseline's and the frontier's.

**Where the accuracy places a configuration** on the frontier (``frontier.py``: the baseline's accuracy against
budget, fitted once over every seed, monotone; a budget's *time* stays per seed). Its paired differences from the
baseline count only by the part of their mean *beyond* ``tolerance``: the budget where the frontier reaches the
full baseline's accuracy plus that part is every seed's reference. Beyond the frontier's best (slower than that
best: a ``trade-off``), or below its cheapest budget (no ``faster`` claimed), the reference is only a bound.

**Intervals: paired Student t on log ratios** (exact for log-normal time noise), and on the accuracy differences;
``confidence`` is one look's level (``look_confidence`` spends alpha over a sequential sweep's looks).

**Verdict** (``decision.py``, the rule written once): ``faster`` needs both halves shown, the speed-up interval
above 1 with the accuracy's uncertainty carried into it, and the accuracy interval above ``-tolerance``; where the
time is shown and the accuracy is not, the verdict is ``no evidence`` with that reason. A bounded metric's
difference interval is cut to what the metric can take (``bounds``). Missing values (None, NaN, a time <= 0) drop
that seed's pair; ``n`` counts the pairs.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from raycomp.base import keys
from raycomp.results.decision import (
    EQUIVALENT,
    FASTER,
    LESS_ACCURATE,
    NO_EVIDENCE,
    RESOLVED,
    SLOWER,
    TRADE_OFF,
    VERDICTS,
    Bounds,
    Evidence,
    accuracy_words,
    as_gain,
    bounded,
    decide,
    delta_text,
)
from raycomp.results.frontier import Frontier, reference_reach, time_at
from raycomp.results.intervals import DEFAULT_CONFIDENCE, t_interval

__all__ = [  # the verdicts' names are decision.py's, re-exported here where every reader of a Verdict looks
    "EQUIVALENT", "FASTER", "LESS_ACCURATE", "NO_EVIDENCE", "RESOLVED", "SLOWER", "TRADE_OFF", "VERDICTS", "Bounds",
    "Run", "Verdict", "best_config", "verdict_for",
]  # fmt: skip
DEFAULT_TOLERANCE, DEFAULT_EQUIVALENCE = keys.DEFAULT_TOLERANCE, keys.DEFAULT_EQUIVALENCE

Mode = Literal["max", "min"]


@dataclasses.dataclass(frozen=True)
class Run:
    """One trial of one configuration at one seed; None where the trial has no value.

    ``budget`` is a baseline trial's fraction of ``max_duration`` (the full baseline is 1.0); a frontier run
    without one is placed by its time against the same seed's full baseline."""

    seed: int
    accuracy: float | None  # the final value of the sweep's metric
    time_s: float | None  # training time (the steady-state estimate when the trial has one)
    curve: tuple[tuple[float, float], ...] = ()  # (time_s, metric) at each evaluation
    budget: float | None = None


@dataclasses.dataclass(frozen=True)
class Verdict:
    """One configuration against the baseline over its paired seeds; None where there is no value."""

    verdict: str
    n: int  # paired seeds used
    seeds: tuple[int, ...]
    speedup: float | None  # geometric mean of reference / time over the paired seeds, priced at the mean accuracy
    speedup_ci_low: float | None  # priced at the accuracy interval's worse end (decision.py)
    speedup_ci_high: float | None  # priced at its better end
    speedup_to_full_baseline: float | None  # geometric mean over the seeds that reached the full baseline
    full_baseline_reached: int  # paired seeds whose curve reached the full baseline's accuracy
    accuracy_median: float | None  # over the configuration's own runs with a value
    time_median_s: float | None
    accuracy_delta: float | None  # mean of paired differences, config - baseline
    accuracy_delta_ci_low: float | None
    accuracy_delta_ci_high: float | None
    beyond_frontier: int  # paired seeds priced beyond the frontier's best (0 or n: the mean gain decides)
    below_frontier: int  # paired seeds priced below every budget (speed-up an upper bound; 0 or n)
    note: str = ""  # why the verdict is what it is, when it is not plain
    time_ratio: float | None = None  # geometric mean of time / the full baseline's time at the seed
    confidence: float | None = None  # the level the intervals were computed at (one look's, when sequential)
    speed_shown: bool = False  # the speed-up at the measured accuracy is shown above 1 (the search's cue)
    accuracy_shown: bool = False  # the accuracy interval's worse end is within tolerance (non-inferiority)
    tolerance: float | None = None  # what it was judged with, so that its words can say what the Δ rules out
    points: bool = False  # the metric lies in [0, 1]: its differences read in points
    mode: str = "max"

    def accuracy_text(self) -> str:
        """``Δ -0.6 points [-5.7, +4.6]: not shown within 0.5 points``, or "" without an interval."""
        if self.accuracy_delta is None or self.accuracy_delta_ci_low is None:
            return ""
        low, high, sign = self.accuracy_delta_ci_low, self.accuracy_delta_ci_high, _sign(self.mode)  # type: ignore
        mean = f"{self.accuracy_delta * 100:+.1f} points" if self.points else f"{self.accuracy_delta:+.4f}"
        return f"Δ {mean} {delta_text(low, high, self.points, self.tolerance, sign).replace(' points:', ':', 1)}"


def _value(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _usable(run: Run | None) -> bool:
    return run is not None and _value(run.accuracy) is not None and _value(run.time_s) is not None and run.time_s > 0


def _sign(mode: Mode) -> int:
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', not {mode!r}")
    return 1 if mode == "max" else -1


def _first_reaching(run: Run, target: float, sign: int) -> float | None:
    points = sorted(
        (t, v) for t, v in (*run.curve, (run.time_s, run.accuracy)) if _value(t) is not None and _value(v) is not None
    )
    return next((t for t, value in points if sign * value >= sign * target), None)


def _exp(log_value: float) -> float:
    """exp, kept finite: one look's interval at two seeds and a tiny alpha can span hundreds of e-folds."""
    return math.exp(min(max(log_value, -700.0), 700.0))


def _geometric_mean(log_values: Sequence[float]) -> float | None:
    return math.exp(sum(log_values) / len(log_values)) if log_values else None


def verdict_for(
    config_runs: Iterable[Run],
    baseline_runs: Iterable[Run],
    frontier_runs: Iterable[Run],
    *,
    mode: Mode = "max",
    tolerance: float = DEFAULT_TOLERANCE,
    confidence: float = DEFAULT_CONFIDENCE,
    equivalence: float = DEFAULT_EQUIVALENCE,
    bounds: Bounds | None = None,
    same_model: bool = False,
) -> Verdict:
    """The verdict of one configuration. ``frontier_runs`` are the baseline's other-budget runs, all seeds
    together; the baseline's own runs join them at budget 1.0. A seed counts when the configuration and
    the baseline both have a final accuracy and time there. ``bounds``: the metric's range, which its
    difference interval cannot leave. ``same_model``: the configuration is the baseline itself (the control
    arm), equal in accuracy by construction, so only its time is judged: it tests the machine's timing."""
    sign = _sign(mode)
    config = {r.seed: r for r in config_runs}
    baseline = {r.seed: r for r in baseline_runs if _usable(r)}
    budget_times: dict[int, dict[float, float]] = {seed: {1.0: run.time_s} for seed, run in baseline.items()}
    points = [(1.0, sign * run.accuracy) for run in baseline.values()]
    for run in frontier_runs:
        if not _usable(run):
            continue
        budget = run.budget
        if budget is None:  # placed by its time against its seed's full baseline
            if run.seed not in baseline:
                continue
            budget = run.time_s / baseline[run.seed].time_s
        budget_times.setdefault(run.seed, {})[budget] = run.time_s
        points.append((budget, sign * run.accuracy))
    frontier = Frontier.fit(points)

    paired = [
        (seed, config[seed], baseline[seed])
        for seed in sorted(config)
        if _usable(config[seed]) and seed in baseline and frontier is not None
    ]
    seeds = [seed for seed, _, _ in paired]
    deltas = [run.accuracy - base.accuracy for _, run, base in paired]  # paired: what the seed shares cancels
    accuracy = bounded(t_interval(deltas, confidence), bounds)
    gain = None if accuracy is None else as_gain(accuracy, sign)

    def log_speedups(budget: float) -> list[float]:
        return [math.log(time_at(budget_times[seed], budget) / run.time_s) for seed, run, _ in paired]

    log_to_full, log_ratios = [], []
    for _, run, base in paired:
        log_ratios.append(math.log(run.time_s / base.time_s))
        reached = _first_reaching(run, base.accuracy, sign)
        if reached is not None and reached > 0:
            log_to_full.append(math.log(base.time_s / reached))
    evidence, speedups = Evidence(len(seeds), None, None, None), []
    if paired and frontier is not None:
        at_mean = reference_reach(frontier, sign * statistics.fmean(deltas), tolerance)
        speedups = log_speedups(at_mean.budget)
        speed = t_interval(speedups, confidence)
        ends = (0.0, 0.0) if same_model or gain is None else gain[1:]
        worse, better = (reference_reach(frontier, g, tolerance) for g in ends)
        cautious = None
        if speed is not None:  # its low end priced at the worse accuracy, its high end at the better
            low, high = (t_interval(log_speedups(r.budget), confidence) for r in (worse, better))
            cautious = (speed[0], low[1], high[2])  # type: ignore[index]
        positions = (at_mean.position, worse.position, better.position)
        evidence = Evidence(len(seeds), gain, speed, cautious, *positions, _geometric_mean(log_ratios))
    beyond, below = (len(paired) if paired and evidence.at_mean == side else 0 for side in ("beyond", "below"))
    if same_model and evidence.gain is not None:
        evidence = dataclasses.replace(evidence, gain=(0.0, 0.0, 0.0))
    verdict, note = decide(evidence, tolerance, equivalence, accuracy_words(accuracy, tolerance, bounds))
    own, interval = [r for r in config.values() if _usable(r)], evidence.cautious
    return Verdict(
        verdict=verdict,
        n=len(seeds),
        seeds=tuple(seeds),
        speedup=_geometric_mean(speedups),
        speedup_ci_low=_exp(interval[1]) if interval else None,
        speedup_ci_high=_exp(interval[2]) if interval else None,
        speedup_to_full_baseline=_geometric_mean(log_to_full),
        full_baseline_reached=len(log_to_full),
        accuracy_median=statistics.median(r.accuracy for r in own) if own else None,
        time_median_s=statistics.median(r.time_s for r in own) if own else None,
        accuracy_delta=sum(deltas) / len(deltas) if deltas else None,
        accuracy_delta_ci_low=accuracy[1] if accuracy else None,
        accuracy_delta_ci_high=accuracy[2] if accuracy else None,
        beyond_frontier=beyond,
        below_frontier=below,
        note=note,
        time_ratio=evidence.time_ratio,
        confidence=confidence,
        speed_shown=evidence.speed_shown,
        accuracy_shown=evidence.accuracy_shown(tolerance),
        tolerance=tolerance,
        points=bounds == (0.0, 1.0),
        mode=mode,
    )


def best_config(verdicts: Mapping[str, Verdict]) -> str | None:
    """The ``faster`` configuration with the highest lower bound of speed-up (ties: the higher point estimate);
    None when none was shown faster: a ``no evidence`` or ``slower`` one is no speed-up to name."""
    candidates = [
        (v.speedup_ci_low, v.speedup or 0.0, key)
        for key, v in verdicts.items()
        if v.verdict == FASTER and v.speedup_ci_low is not None
    ]
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None
