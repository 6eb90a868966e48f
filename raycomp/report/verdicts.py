"""Speed-up verdicts a user can trust: paired seeds, the baseline's budget frontier, t intervals (issue 12).

Pure numbers in, a ``Verdict`` out (no Ray, MLflow or torch). Every configuration runs with seeds
0..N-1; the seed index pairs a configuration's trial with the baseline's and the frontier's.

**Speed-up against the frontier.** The baseline's *frontier* at a seed is its runs trained with complete
schedules for several budgets (the full baseline is its largest). At seed i the reference time is the time
the frontier needs to reach the configuration's final accuracy (``frontier_reach``), and the speed-up is
``reference_i / time_i``. The point estimate is the geometric mean over the paired seeds.

**Intervals: paired Student t on log ratios.** ``log(reference_i / time_i)`` gets a t interval with n-1
degrees of freedom, exponentiated. It is exact for any n >= 2 when the log ratios are normal, as they are
for independent log-normal wall times (multiplicative machine noise, the model of
``bench/simulate_verdicts.py``; between two budgets the reference is interpolated, and nearly so). A
bootstrap over 3 seeds is not: it sees 10 distinct resamples, and its 95 % intervals cover about 75 %.
The accuracy difference (config - baseline, the metric's units) gets a paired t interval too. One paired
seed gives no interval, hence ``no evidence``.

**Verdict.** ``less accurate`` when the accuracy-difference interval lies wholly below ``-tolerance``
(wholly above ``+tolerance`` for ``mode="min"``); else ``faster`` when the speed-up interval lies
wholly above 1, ``slower`` wholly below 1, else ``no evidence``. Under A/A, in that model, each of ``faster``
and ``slower`` comes out at most (1 - confidence) / 2 of the time.

**Off the frontier, conservatively.** *Beyond* (more accurate than every budget at that seed): the reference
is the time the frontier reached its best, so the speed-up is a lower bound there and ``slower`` is not
claimed. *Below* (less accurate than every budget): the reference is the frontier's earliest time, an upper
bound, so ``faster`` is not claimed. Both are counted. Missing values (None, NaN, a time <= 0) drop
that seed's pair; ``n`` says how many pairs remain.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from typing import Literal, NamedTuple

FASTER, SLOWER, NO_EVIDENCE, LESS_ACCURATE = "faster", "slower", "no evidence", "less accurate"
VERDICTS = (FASTER, SLOWER, NO_EVIDENCE, LESS_ACCURATE)
DEFAULT_TOLERANCE = 0.005  # 0.5 point of accuracy, in the metric's units
DEFAULT_CONFIDENCE = 0.95
_ROUNDING = 1e-9  # an interval must clear 1 (log 0) by more than this: equal times, interpolated, are not faster

Mode = Literal["max", "min"]
Position = Literal["within", "below", "beyond"]


@dataclasses.dataclass(frozen=True)
class Run:
    """One trial of one configuration at one seed; None where the trial has no value."""

    seed: int
    accuracy: float | None  # the final value of the sweep's metric
    time_s: float | None  # training wall time
    curve: tuple[tuple[float, float], ...] = ()  # (time_s, metric) at each evaluation


class Reach(NamedTuple):
    """When the frontier reaches a target: ``time_s`` (None if the frontier has no point) and where it lies."""

    time_s: float | None
    position: Position | None


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
    beyond_frontier: int  # paired seeds more accurate than every budget (speed-up a lower bound)
    below_frontier: int  # paired seeds less accurate than every budget (speed-up an upper bound)
    note: str = ""  # why the verdict is what it is, when it is not plain


def _value(x: float | None) -> float | None:
    return x if x is not None and math.isfinite(x) else None


def _usable(run: Run | None) -> bool:
    return run is not None and _value(run.accuracy) is not None and _value(run.time_s) is not None and run.time_s > 0


def _sign(mode: Mode) -> int:
    if mode not in ("max", "min"):
        raise ValueError(f"mode must be 'max' or 'min', not {mode!r}")
    return 1 if mode == "max" else -1


def frontier_reach(frontier_runs_at_seed: Iterable[Run], target: float, mode: Mode = "max") -> Reach:
    """The time the frontier (points (time, accuracy), one per budget) needs to reach ``target``.

    The frontier is the best accuracy reached by each time (a later budget that did worse does not pull it
    down), linearly interpolated between budgets. Worse than every point: ``below``, at the earliest point's
    time. Better than every point: ``beyond``, at the time the frontier reached its best.
    """
    sign = _sign(mode)
    points = sorted((r.time_s, sign * r.accuracy) for r in frontier_runs_at_seed if _usable(r))
    if not points:
        return Reach(None, None)
    goal = sign * target
    if goal < min(score for _, score in points):
        return Reach(points[0][0], "below")
    best_time, best = points[0]
    for time_s, score in points:
        if score >= goal:
            if best >= goal:  # reached at the first point
                return Reach(time_s, "within")
            return Reach(best_time + (goal - best) / (score - best) * (time_s - best_time), "within")
        best_time, best = time_s, max(best, score)  # a budget that did worse leaves the envelope flat
    peak = max(score for _, score in points)
    return Reach(next(t for t, score in points if score == peak), "beyond")


def frontier_time(frontier_runs_at_seed: Iterable[Run], target: float, mode: Mode = "max") -> float | None:
    """``frontier_reach``'s time; None beyond the frontier (or with no point). Below: the earliest time."""
    reach = frontier_reach(frontier_runs_at_seed, target, mode)
    return None if reach.position == "beyond" else reach.time_s


@lru_cache(maxsize=256)
def _t_quantile(degrees: int, confidence: float) -> float:
    from scipy import stats  # on first use: scipy.stats takes a second to import, and the report may need no verdict

    return float(stats.t.ppf(0.5 + confidence / 2, degrees))


def t_interval(values: Sequence[float], confidence: float = DEFAULT_CONFIDENCE) -> tuple[float, float, float] | None:
    """(mean, low, high) of the Student t interval for the mean of ``values``; None with fewer than two."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1))
    half = _t_quantile(n - 1, confidence) * sd / math.sqrt(n)
    return mean, mean - half, mean + half


def _first_reaching(run: Run, target: float, sign: int) -> float | None:
    points = sorted(
        (t, v) for t, v in (*run.curve, (run.time_s, run.accuracy)) if _value(t) is not None and _value(v) is not None
    )
    return next((t for t, value in points if sign * value >= sign * target), None)


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
) -> Verdict:
    """The verdict of one configuration. ``frontier_runs`` are the baseline's shorter-budget runs, all seeds
    together; the baseline's own run at each seed joins them as the full budget. A seed counts when the
    configuration, the baseline and so the frontier all have a final accuracy and time there."""
    sign = _sign(mode)
    config = {r.seed: r for r in config_runs}
    baseline = {r.seed: r for r in baseline_runs}
    frontier: dict[int, list[Run]] = {}
    for run in frontier_runs:
        frontier.setdefault(run.seed, []).append(run)

    seeds, log_speedups, log_to_full, deltas = [], [], [], []
    beyond = below = 0
    for seed in sorted(config):
        run, base = config[seed], baseline.get(seed)
        if not (_usable(run) and _usable(base)):
            continue
        reach = frontier_reach([*frontier.get(seed, ()), base], run.accuracy, mode)
        seeds.append(seed)
        beyond += reach.position == "beyond"
        below += reach.position == "below"
        log_speedups.append(math.log(reach.time_s / run.time_s))
        deltas.append(run.accuracy - base.accuracy)
        reached = _first_reaching(run, base.accuracy, sign)
        if reached is not None and reached > 0:
            log_to_full.append(math.log(base.time_s / reached))

    own = [r for r in config.values() if _usable(r)]
    speed, accuracy = t_interval(log_speedups, confidence), t_interval(deltas, confidence)
    verdict, note = _decide(len(seeds), speed, accuracy, sign, tolerance, beyond, below)
    return Verdict(
        verdict=verdict,
        n=len(seeds),
        seeds=tuple(seeds),
        speedup=_geometric_mean(log_speedups),
        speedup_ci_low=math.exp(speed[1]) if speed else None,
        speedup_ci_high=math.exp(speed[2]) if speed else None,
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
    )


def _decide(
    n: int,
    speed: tuple[float, float, float] | None,
    accuracy: tuple[float, float, float] | None,
    sign: int,
    tolerance: float,
    beyond: int,
    below: int,
) -> tuple[str, str]:
    """The verdict and, when it needs one, the reason in a few words."""
    if speed is None or accuracy is None:
        return NO_EVIDENCE, "no paired seeds" if n == 0 else "one paired seed: no interval"
    best_gain = accuracy[2] if sign == 1 else -accuracy[1]  # the interval's better end, as a gain
    if best_gain < -tolerance:
        return LESS_ACCURATE, ""
    if speed[1] > _ROUNDING:
        if below:
            return NO_EVIDENCE, f"{below} of {n} seeds below the frontier: the speed-up is an upper bound"
        return FASTER, ""
    if speed[2] < -_ROUNDING:
        if beyond:
            return NO_EVIDENCE, f"{beyond} of {n} seeds beyond the frontier: the speed-up is a lower bound"
        return SLOWER, ""
    return NO_EVIDENCE, ""


def best_config(verdicts: Mapping[str, Verdict]) -> str | None:
    """The configuration with the highest lower bound of speed-up among those not ``less accurate`` (ties:
    the higher point estimate); None when none has an interval. Never a single run: one seed has no bound."""
    candidates = [
        (v.speedup_ci_low, v.speedup or 0.0, key)
        for key, v in verdicts.items()
        if v.verdict != LESS_ACCURATE and v.speedup_ci_low is not None
    ]
    return max(candidates, key=lambda c: (c[0], c[1]))[2] if candidates else None


def noise_floor(times_s: Iterable[float | None]) -> float | None:
    """The coefficient of variation of repeated times (e.g. the baseline's seeds); None with fewer than two."""
    values = [t for t in times_s if _value(t) is not None]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)
