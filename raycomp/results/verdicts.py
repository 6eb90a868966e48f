"""Speed-up verdicts a user can trust: paired seeds, a pooled monotone frontier, t intervals (issues 12, 23).

Pure numbers in, a ``Verdict`` out (no Ray, MLflow or torch). Every configuration runs with seeds
0..N-1; the seed index pairs a configuration's trial with the baseline's and the frontier's.

**The frontier is a curve.** The baseline trains at several budgets (fractions of ``max_duration``, 1.0
is the baseline itself, above 1 prices accuracy gains). Its accuracy against budget is fitted once over
every seed's runs, monotone (isotonic regression, pool-adjacent-violators), so one seed whose shorter
budget happened to beat its full one no longer turns metric noise into time noise. Its *time* stays per
seed: at seed i the reference time for a budget is that seed's own measured time of it (interpolated
between budgets), which keeps the pairing in time that cancels slow spells of the machine.

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
from functools import lru_cache
from typing import Literal, NamedTuple

import numpy as np

FASTER, SLOWER, NO_EVIDENCE, LESS_ACCURATE = "faster", "slower", "no evidence", "less accurate"
EQUIVALENT, TRADE_OFF = "equivalent", "trade-off"
VERDICTS = (FASTER, SLOWER, EQUIVALENT, TRADE_OFF, NO_EVIDENCE, LESS_ACCURATE)
RESOLVED = frozenset({FASTER, SLOWER, EQUIVALENT, TRADE_OFF, LESS_ACCURATE})  # an answer: no more seeds needed
DEFAULT_TOLERANCE = 0.005  # 0.5 point of accuracy, in the metric's units
DEFAULT_CONFIDENCE = 0.95
DEFAULT_EQUIVALENCE = 0.05  # speed-ups within ±5 % are no practical difference
SPENDING_POWER = 3.0  # alpha spent by information fraction f: alpha * f**3 (Kim-DeMets power family)
_ROUNDING = 1e-9  # an interval must clear 1 (log 0) by more than this: equal times, interpolated, are not faster

Mode = Literal["max", "min"]
Position = Literal["within", "below", "beyond"]


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


class Reach(NamedTuple):
    """The budget at which the fitted frontier reaches a target, and where the target lies against it."""

    budget: float
    position: Position


@dataclasses.dataclass(frozen=True)
class Frontier:
    """The baseline's score (accuracy, or minus a loss) against budget: non-decreasing, fitted over all seeds.

    ``budgets`` ascending; ``scores`` the isotonic fit of the mean score at each budget, weighted by its
    number of runs. Linear between budgets."""

    budgets: tuple[float, ...]
    scores: tuple[float, ...]

    @classmethod
    def fit(cls, points: Iterable[tuple[float, float]]) -> Frontier | None:
        """From (budget, score) points of every seed; None without any."""
        by_budget: dict[float, list[float]] = {}
        for budget, score in points:
            by_budget.setdefault(budget, []).append(score)
        if not by_budget:
            return None
        budgets = sorted(by_budget)
        means = np.array([statistics.fmean(by_budget[b]) for b in budgets])
        weights = np.array([float(len(by_budget[b])) for b in budgets])
        if len(budgets) > 1:
            from scipy.optimize import isotonic_regression

            means = isotonic_regression(means, weights=weights, increasing=True).x
        return cls(tuple(budgets), tuple(float(m) for m in means))

    def score_at(self, budget: float) -> float:
        return float(np.interp(budget, self.budgets, self.scores))

    def reach(self, score: float) -> Reach:
        """The earliest budget whose fitted score reaches ``score``: beyond the best, at the best's budget."""
        budgets, scores = self.budgets, self.scores
        if score > scores[-1] + _ROUNDING:
            return Reach(budgets[scores.index(scores[-1])], "beyond")
        if score < scores[0] - _ROUNDING:
            return Reach(budgets[0], "below")
        for k, reached in enumerate(scores):
            if reached >= score - _ROUNDING:
                if k == 0 or reached <= scores[k - 1]:
                    return Reach(budgets[k], "within")
                share = (score - scores[k - 1]) / (reached - scores[k - 1])
                return Reach(budgets[k - 1] + share * (budgets[k] - budgets[k - 1]), "within")
        return Reach(budgets[-1], "within")  # unreachable: score <= scores[-1]


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


def look_confidence(n: int, first: int, last: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The interval level at the look with ``n`` seeds of a sweep that looks at ``first``, ``first+1``, ..,
    ``last`` seeds and stops a configuration as soon as it is resolved.

    A group-sequential t test: by information fraction f = n/last the looks may have spent alpha·f³ in
    all (Kim-DeMets power family, rho = 3: most of it kept for the later looks, where it buys the most
    power), and each look's t boundary is set so that the chance an A/A configuration *first* crosses it
    there is that look's increment (``_look_levels``). The increments sum to alpha, so the chance that any
    look says ``faster`` or ``slower`` of an A/A configuration is alpha; stopping earlier, or skipping
    looks, only lowers it. ``first == last`` (no adaptive seeds) is one look at ``confidence`` itself."""
    if last <= first:
        return confidence
    return _look_levels(first, last, round(confidence, 12))[min(max(n, first), last) - first]


SEQUENTIAL_PATHS = 200_000  # simulated A/A paths that set the boundaries: each look's alpha to a few % of itself


@lru_cache(maxsize=16)
def _look_levels(first: int, last: int, confidence: float) -> tuple[float, ...]:
    """Each look's two-sided level, from simulated A/A sequences of per-seed log speed-ups.

    Successive looks share their seeds, so a union bound over them (each look at its own increment of
    alpha) wastes most of it: at 8 seeds it asked for t > 3.14 where 2.67 keeps the same overall rate.
    The t statistic of normal data with mean 0 does not depend on its spread, so one simulation of
    standard-normal paths gives every look's boundary exactly (up to Monte Carlo error); the generator is
    seeded, so every sweep, report and rerun gets the same levels."""
    from scipy import stats  # as in _t_quantile

    alpha = 1 - confidence
    draws = np.random.default_rng(0).standard_normal((SEQUENTIAL_PATHS, last))
    sums, squares = np.cumsum(draws, axis=1), np.cumsum(draws**2, axis=1)
    crossed = np.zeros(SEQUENTIAL_PATHS, dtype=bool)
    levels = []
    for n in range(first, last + 1):
        if n < 2:  # one seed has no interval, so no look: its share of alpha stays unspent
            levels.append(confidence)
            continue
        mean = sums[:, n - 1] / n
        t = np.abs(mean) * math.sqrt(n) / np.sqrt((squares[:, n - 1] - n * mean**2) / (n - 1))
        spent_before = 0.0 if n == first else alpha * ((n - 1) / last) ** SPENDING_POWER
        first_crossings = round((alpha * (n / last) ** SPENDING_POWER - spent_before) * SEQUENTIAL_PATHS)
        open_t = np.sort(t[~crossed])[::-1]
        bound = float(open_t[min(first_crossings, len(open_t) - 1)])  # exactly that many open paths lie above
        crossed |= t > bound
        levels.append(1 - 2 * float(stats.t.sf(bound, n - 1)))
    return tuple(levels)


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


def _time_at(budget_times: Mapping[float, float], budget: float) -> float:
    """A seed's training time at ``budget``: ``budget`` times the median of its budgets' time per unit of budget.

    Every budget trains the same steps (only more or fewer of them), so each of a seed's baseline trials
    measures the same step cost; their median is the seed's reference, not the full baseline's one trial.
    That trial alone carried whatever ran beside it: two trials share the machine's two cores, and in the
    default sweep the baseline happened to run beside the same lighter SelectiveBackprop arm at every seed
    (the arms' order is seeded), 4-7 % below its own frontier budgets and its control, which then came out
    a false ``slower``. The median of four trials with different neighbours halves that spread."""
    return budget * statistics.median(time_s / b for b, time_s in budget_times.items())


def _reference(frontier: Frontier, mean_gain: float, tolerance: float) -> Reach:
    """Where the configuration's accuracy reaches the frontier: from its *mean* paired gain over the seeds.

    Equal within tolerance is the full baseline's own budget (the fitted curve may be flat up to it: a
    shorter budget that matched the full one would otherwise price an identical arm at that budget); only
    the part of the gain beyond tolerance moves the reference along the frontier. One budget for every
    seed: read seed by seed, each seed's accuracy noise (a few tenths of a point on 1,000 test images)
    became time noise through the frontier's slope (0.4 point was 12 % of the baseline's time between
    budgets 0.75 and 1.0), and it, not the timing, kept configurations near 1.0x open at 8 seeds."""
    excess = mean_gain - min(max(mean_gain, -tolerance), tolerance)
    return Reach(1.0, "within") if excess == 0 else frontier.reach(frontier.score_at(1.0) + excess)


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
    reach = _reference(frontier, sign * statistics.fmean(deltas), tolerance) if paired else None
    log_speedups, log_to_full, log_ratios = [], [], []
    for seed, run, base in paired:
        log_speedups.append(math.log(_time_at(budget_times[seed], reach.budget) / run.time_s))  # type: ignore[union-attr]
        log_ratios.append(math.log(run.time_s / base.time_s))
        reached = _first_reaching(run, base.accuracy, sign)
        if reached is not None and reached > 0:
            log_to_full.append(math.log(base.time_s / reached))
    beyond = len(paired) if reach and reach.position == "beyond" else 0
    below = len(paired) if reach and reach.position == "below" else 0

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
    if speed[1] > _ROUNDING:
        if below:
            return NO_EVIDENCE, "below the frontier (less accurate than every budget): the speed-up is an upper bound"
        return FASTER, ""
    if speed[2] < -_ROUNDING:
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
