"""Student t intervals over paired seeds, and the level each look of a sequential sweep spends.

``t_interval`` is the paired t interval the verdicts use (on log speed-ups and on accuracy differences).
``look_confidence`` is the level of one look of a sweep that adds seeds while it looks (``sweep.max_repeats``):
a group-sequential t test, alpha spent over the looks, its boundaries set once by a seeded simulation.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from raycomp.base import keys

DEFAULT_CONFIDENCE = keys.DEFAULT_CONFIDENCE
SPENDING_POWER = 3.0  # alpha spent by information fraction f: alpha * f**3 (Kim-DeMets power family)


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
