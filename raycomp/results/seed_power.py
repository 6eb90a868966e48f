"""How many seeds a speed-up needs: the power of the paired t test the verdicts use (docs/report.md, power table).

A seed's log speed-up is the difference of two runs' log times, each with the machine's noise (a coefficient of
variation ``cv``: sd σ = √log(1 + cv²) in log time), so it has sd √2·σ. A configuration ``speedup`` times as
fast is called ``faster`` when its t interval lies wholly above 1: with n seeds, the chance that a noncentral t
(n - 1 degrees of freedom, noncentrality log(speedup)·√n / (√2·σ)) exceeds the interval's quantile. This
closed form gives the simulated power table of docs/report.md to within 0.02 in every cell
(tests/results/test_seed_power.py), so a sweep is told before it runs, and the page after, what its seeds
can resolve.

Two seeds have an interval, but at 95 % its half-width is 12.7 standard errors (t with one degree of
freedom): ``[0.07×, 15.53×]`` on a real sweep, ``[0.00×, 125592×]`` for its control. Such an interval rules
nothing out, so "no evidence" from it says nothing, about a method or about the machine's timing; it is
marked uninformative. (One that does clear 1 is a valid test at its level, and its verdict stands.)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable
from typing import TYPE_CHECKING

from raycomp.results.verdicts import DEFAULT_CONFIDENCE, RESOLVED, Verdict

if TYPE_CHECKING:
    from raycomp.config import SweepConfig

MIN_INFORMATIVE_SEEDS = 3  # an interval from fewer paired seeds is uninformative
POWER = 0.8  # "resolves": finds the speed-up this often
QUIET_MACHINE_CV = 0.05  # a time noise to quote before a sweep has measured its own (docs/report.md, power table)
_LARGEST_LOG_SPEEDUP = 50.0


def uninformative(verdict: Verdict) -> bool:
    """An open verdict from an interval of too few seeds: the interval rules nothing out, so that it left the
    verdict open says nothing. A verdict it resolved stands (its level holds at any n >= 2)."""
    return 2 <= verdict.n < MIN_INFORMATIVE_SEEDS and verdict.verdict not in RESOLVED


def detection_power(speedup: float, cv: float, seeds: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The chance that ``seeds`` paired seeds call a configuration ``speedup`` times as fast ``faster``, when
    each run's time has noise ``cv``; 0 below two seeds (no interval)."""
    if seeds < 2 or speedup <= 0 or cv <= 0:
        return 0.0
    spread = math.sqrt(2 * math.log1p(cv * cv))
    return _beyond_t_quantile(seeds - 1, confidence, math.log(speedup) * math.sqrt(seeds) / spread)


def resolvable_speedup(
    cv: float, seeds: int, confidence: float = DEFAULT_CONFIDENCE, power: float = POWER
) -> float | None:
    """The smallest speed-up that ``seeds`` paired seeds find ``power`` of the time at noise ``cv``; None below
    two seeds or without noise."""
    if seeds < 2 or cv <= 0:
        return None
    from scipy.optimize import brentq

    def short_of(log_speedup: float) -> float:
        return detection_power(math.exp(log_speedup), cv, seeds, confidence) - power

    if short_of(_LARGEST_LOG_SPEEDUP) < 0:
        return None
    return math.exp(brentq(short_of, 1e-9, _LARGEST_LOG_SPEEDUP, xtol=1e-6))


def resolvable_text(cv: float, seeds: int, confidence: float = DEFAULT_CONFIDENCE) -> str:
    """``a speed-up beyond 1.26×`` (or ``no speed-up``) that ``seeds`` seeds find 80 % of the time at ``cv``."""
    speedup = resolvable_speedup(cv, seeds, confidence)
    return "no speed-up" if speedup is None else f"a speed-up of {speedup:.2f}× or more"


def few_seeds_warning(sweep: SweepConfig | None) -> str | None:
    """What a sweep is told before it runs when its seeds cannot resolve a speed-up: fewer than
    ``MIN_INFORMATIVE_SEEDS`` at most (``sweep.repeats``, or ``sweep.max_repeats`` when it adds seeds).
    None when they can, or when nothing is judged (no baseline)."""
    if sweep is None or not sweep.baseline:
        return None
    seeds = max(sweep.repeats, sweep.max_repeats or 0)
    if seeds >= MIN_INFORMATIVE_SEEDS:
        return None
    fix = (
        f"set sweep.repeats: {MIN_INFORMATIVE_SEEDS} or more, or sweep.max_repeats to add seeds where a verdict is "
        "still open (docs/report.md, power table)"
    )
    if seeds < 2:
        return (
            "sweep.repeats: 1 gives no speed-up interval, so every verdict will be 'no evidence' and the control "
            f"tests nothing; {fix}"
        )
    level, cv = sweep.confidence, QUIET_MACHINE_CV
    more = ", ".join(f"{n} seeds: {resolvable_speedup(cv, n, level):.2f}×" for n in (3, 5, 8))
    return (
        f"sweep.repeats: {seeds} gives intervals from {seeds} seeds, which are uninformative: even at a quiet "
        f"machine's {cv:.0%} time noise they find only {resolvable_text(cv, seeds, level)} {POWER:.0%} of the time "
        f"({more}), and a 'no evidence' from them says nothing; {fix}"
    )


def noise_floor(times_s: Iterable[float | None]) -> float | None:
    """The coefficient of variation of repeated times (e.g. the baseline's seeds); None with fewer than two."""
    values = [t for t in times_s if t is not None and math.isfinite(t)]
    if len(values) < 2:
        return None
    return statistics.stdev(values) / statistics.fmean(values)


def equal_accuracy_power(spread: float, tolerance: float, seeds: int, confidence: float = DEFAULT_CONFIDENCE) -> float:
    """The chance that ``seeds`` paired seeds show a truly equal configuration's accuracy within ``tolerance`` (its
    Δ interval's worse end above -tolerance: ``faster``'s accuracy half), when one seed's paired difference has
    sd ``spread``: a noncentral t (n - 1 degrees of freedom, noncentrality tolerance·√n / spread), as above."""
    if seeds < 2:
        return 0.0
    if spread <= 0 or tolerance * math.sqrt(seeds) / spread > _LARGEST_LOG_SPEEDUP:  # no noise to speak of
        return 1.0
    return _beyond_t_quantile(seeds - 1, confidence, tolerance * math.sqrt(seeds) / spread)


def _beyond_t_quantile(degrees: int, confidence: float, noncentrality: float) -> float:
    """P(T > the t quantile of ``confidence``'s two-sided interval) for T noncentral t (``degrees``,
    ``noncentrality``). scipy.special's functions, not scipy.stats' distributions: the same numbers without the
    ~80 µs a call that stats spends checking its arguments, and a simulated find calls this thousands of times.
    Far in the tail ``nctdtr`` gives NaN; stats' own survival function (Boost's) is exact there."""
    from scipy import special  # on first use, as verdicts.py does

    quantile = special.stdtrit(degrees, 0.5 + confidence / 2)
    below = special.nctdtr(degrees, noncentrality, quantile)
    if math.isnan(below):
        from scipy import stats

        return float(stats.nct.sf(quantile, degrees, noncentrality))
    return float(1.0 - below)


def equal_accuracy_seeds(
    spread: float, tolerance: float, confidence: float = DEFAULT_CONFIDENCE, power: float = POWER, most: int = 100
) -> int | None:
    """The fewest paired seeds that show equal accuracy within ``tolerance`` ``power`` of the time; None past
    ``most``."""
    return next(
        (n for n in range(2, most + 1) if equal_accuracy_power(spread, tolerance, n, confidence) >= power), None
    )


def reachable_tolerance(
    spread: float, seeds: int, confidence: float = DEFAULT_CONFIDENCE, power: float = POWER
) -> float:
    """The smallest tolerance that ``seeds`` paired seeds show a truly equal accuracy within ``power`` of the time."""
    if spread <= 0:
        return 0.0
    from scipy.optimize import brentq

    def short_of(tolerance: float) -> float:
        return equal_accuracy_power(spread, tolerance, seeds, confidence) - power

    high = spread
    while short_of(high) < 0:
        high *= 2
    return float(brentq(short_of, 0.0, high, xtol=spread * 1e-6))
