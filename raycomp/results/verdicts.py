"""Speed-up verdicts a user can trust: paired seeds, a pooled monotone frontier, t intervals (issues 12, 23).

Pure numbers in, a ``Verdict`` out (no Ray, MLflow or torch). Every configuration runs with seeds
0..N-1; the seed index pairs a configuration's trial with the baseline's and the frontier's.

**The frontier is a curve** (``frontier.py``): the baseline's accuracy against its budget, fitted once over
every seed, monotone; the *time* of a budget stays per seed.

**Equal accuracy means equal.** A configuration's accuracy counts by its paired differences from the
baseline (what a seed shares, its data order and initialisation, cancels), averaged over its seeds, and
only by the part of that mean *beyond* ``tolerance``: the target is the fitted full-baseline accuracy plus
that part, and the budget where the frontier reaches it is every seed's reference (per seed, accuracy
noise became time noise through the frontier's slope). Within tolerance it reaches the frontier at the
full baseline's budget, so its speed-up is the full baseline's time over its own, seed by seed: a
configuration that is slower and not more accurate beyond tolerance is ``slower``. A mean gain larger
than the tolerance is priced on the frontier (budgets above 1.0); more than the frontier's best reaches
is *beyond*, and a configuration slower than that best is a
``trade-off`` ("more accurate, X× the baseline's time"). Worse than the frontier's cheapest budget is
*below*: its reference is an upper bound, so ``faster`` is not claimed there.

**Intervals: paired Student t on log ratios** (``log(reference_i / time_i)``, n-1 degrees of freedom),
exact for log-normal time noise. The accuracy difference (config - baseline, paired) gets one too.
``confidence`` is the level of one look; a sweep that adds seeds while it looks (``sweep.max_repeats``)
passes the level ``look_confidence`` spends for its n (a group-sequential t test: alpha spent over the looks).

**Verdict**, in this order: ``less accurate`` when the accuracy interval lies wholly below ``-tolerance``;
``equivalent`` when the speed-up interval lies inside [1/(1+equivalence), 1+equivalence], the mean
accuracy difference is within tolerance and no seed is off the frontier (two one-sided tests at the
interval's level); ``faster`` / ``slower`` when the interval lies wholly above / below 1 (``slower``
becomes ``trade-off`` when seeds are beyond the frontier, ``faster`` is held back below it); else
``no evidence``. Missing values (None, NaN, a time <= 0) drop that seed's pair; ``n`` counts the pairs.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from raycomp.results.frontier import ROUNDING, Frontier, reference_reach, time_at
from raycomp.results.intervals import DEFAULT_CONFIDENCE, t_interval

FASTER, SLOWER, NO_EVIDENCE, LESS_ACCURATE = "faster", "slower", "no evidence", "less accurate"
EQUIVALENT, TRADE_OFF = "equivalent", "trade-off"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, TRADE_OFF, NO_EVIDENCE, LESS_ACCURATE)
RESOLVED = frozenset({FASTER, SLOWER, EQUIVALENT, TRADE_OFF, LESS_ACCURATE})  # an answer: no more seeds needed
DEFAULT_TOLERANCE = 0.005  # 0.5 point of accuracy, in the metric's units
DEFAULT_EQUIVALENCE = 0.05  # speed-ups within ±5 % are no practical difference

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
    speedup: float | None  # geometric mean of reference / time over the paired seeds
    speedup_ci_low: float | None
    speedup_ci_high: float | None
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
) -> Verdict:
    """The verdict of one configuration. ``frontier_runs`` are the baseline's other-budget runs, all seeds
    together; the baseline's own runs join them at budget 1.0. A seed counts when the configuration and
    the baseline both have a final accuracy and time there."""
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
    reach = reference_reach(frontier, sign * statistics.fmean(deltas), tolerance) if paired else None
    log_speedups, log_to_full, log_ratios = [], [], []
    budget = reach.budget if reach is not None else 0.0  # None only when nothing is paired
    for seed, run, base in paired:
        log_speedups.append(math.log(time_at(budget_times[seed], budget) / run.time_s))
        log_ratios.append(math.log(run.time_s / base.time_s))
        reached = _first_reaching(run, base.accuracy, sign)
        if reached is not None and reached > 0:
            log_to_full.append(math.log(base.time_s / reached))
    beyond, below = (len(paired) if reach and reach.position == side else 0 for side in ("beyond", "below"))

    own = [r for r in config.values() if _usable(r)]
    speed, accuracy = t_interval(log_speedups, confidence), t_interval(deltas, confidence)
    time_ratio = _geometric_mean(log_ratios)
    verdict, note = _decide(len(seeds), speed, accuracy, sign, tolerance, equivalence, beyond, below, time_ratio)
    return Verdict(
        verdict=verdict,
        n=len(seeds),
        seeds=tuple(seeds),
        speedup=_geometric_mean(log_speedups),
        speedup_ci_low=_exp(speed[1]) if speed else None,
        speedup_ci_high=_exp(speed[2]) if speed else None,
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
        time_ratio=time_ratio,
        confidence=confidence,
    )


def _decide(
    n: int,
    speed: tuple[float, float, float] | None,
    accuracy: tuple[float, float, float] | None,
    sign: int,
    tolerance: float,
    equivalence: float,
    beyond: int,
    below: int,
    time_ratio: float | None,
) -> tuple[str, str]:
    """The verdict and, when it needs one, the reason in a few words."""
    if speed is None or accuracy is None:
        return NO_EVIDENCE, "no paired seeds" if n == 0 else "one paired seed: no interval"
    best_gain = accuracy[2] if sign == 1 else -accuracy[1]  # the interval's better end, as a gain
    if best_gain < -tolerance:
        return LESS_ACCURATE, ""
    margin = math.log1p(equivalence)
    on_frontier = not (beyond or below)
    if on_frontier and -margin <= speed[1] and speed[2] <= margin and abs(accuracy[0]) <= tolerance:
        return EQUIVALENT, f"speed-up within ±{equivalence:.0%}, accuracy within tolerance"
    if speed[1] > ROUNDING:
        if below:
            return NO_EVIDENCE, "below the frontier (less accurate than every budget): the speed-up is an upper bound"
        return FASTER, ""
    if speed[2] < -ROUNDING:
        if 2 * beyond > n:
            ratio = f"{time_ratio:.2f}× the baseline's time" if time_ratio else "slower"
            return TRADE_OFF, f"more accurate than every budget, {ratio}"
        if not beyond:
            return SLOWER, ""
        return NO_EVIDENCE, "beyond the frontier (more accurate than every budget): the speed-up is a lower bound"
    if beyond:
        return NO_EVIDENCE, "beyond the frontier (more accurate than every budget): the speed-up is a lower bound"
    return NO_EVIDENCE, ""


def best_config(verdicts: Mapping[str, Verdict]) -> str | None:
    """The ``faster`` configuration with the highest lower bound of speed-up (ties: the higher point estimate);
    None when none was shown faster: a ``no evidence`` or ``slower`` one is no speed-up to name."""
    candidates = [
        (v.speedup_ci_low, v.speedup or 0.0, key)
        for key, v in verdicts.items()
        if v.verdict == FASTER and v.speedup_ci_low is not None
    ]
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def noise_floor(times_s: Iterable[float | None]) -> float | None:
    """The coefficient of variation of repeated times (e.g. the baseline's seeds); None with fewer than two."""
    values = [t for t in times_s if _value(t) is not None]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)
