"""The power table of raycomp's speed-up verdicts (docs/report.md): how often a planted speed-up is found.

Simulated sweeps, drawn with numpy and judged by ``raycomp.results.verdicts.verdict_for`` itself. The model:
each seed has a baseline frontier (budgets 0.5, 0.75, 1.0 of a 100 s run, accuracies 0.90, 0.94, 0.96) and
one configuration that reaches the full baseline's accuracy ``effect`` times sooner. Every run's wall time
has independent log-normal noise of coefficient of variation ``cv``, and every final accuracy independent
normal noise (``accuracy_sd``, 0.1 point by default: runs with the same seed differ by nondeterminism only).

    python bench/simulate_verdicts.py                  # the table in docs/report.md (about a minute)
    python bench/simulate_verdicts.py --sweeps 200     # a quick look

tests/report/test_verdicts.py draws its A/A and planted-effect sweeps from ``simulate`` too.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from typing import Any

import numpy as np

from raycomp.results.intervals import look_confidence
from raycomp.results.verdicts import (
    DEFAULT_CONFIDENCE,
    FASTER,
    RESOLVED,
    SLOWER,
    Run,
    Verdict,
    verdict_for,
)

BUDGETS = (0.5, 0.75, 1.0, 1.5)
FRONTIER_ACCURACY = (0.90, 0.94, 0.96, 0.97)
BASELINE_TIME_S = 100.0
EFFECTS = (1.0, 1.1, 1.25, 1.5, 2.0)
CVS = (0.05, 0.1, 0.2, 0.3)
SEED_COUNTS = (3, 5, 8)


def draw(
    rng: np.random.Generator,
    *,
    sweeps: int,
    seeds: int,
    effect: float,
    cv: float,
    accuracy_sd: float = 0.001,
    accuracy_drop: float = 0.0,
    budgets: tuple[float, ...] = BUDGETS,
    frontier_accuracy: tuple[float, ...] = FRONTIER_ACCURACY,
) -> list[tuple[list[Run], list[Run], list[Run]]]:
    """``sweeps`` simulated sweeps of one configuration: (config, baseline, frontier) runs, ``seeds`` each."""
    sigma = math.sqrt(math.log1p(cv * cv))  # log-normal noise with this coefficient of variation
    budget, accuracy = np.array(budgets), np.array(frontier_accuracy)
    full = budgets.index(1.0)
    frontier_s = BASELINE_TIME_S * budget * np.exp(sigma * rng.standard_normal((sweeps, seeds, len(budgets))))
    frontier_acc = accuracy + accuracy_sd * rng.standard_normal((sweeps, seeds, len(budgets)))
    config_s = BASELINE_TIME_S / effect * np.exp(sigma * rng.standard_normal((sweeps, seeds)))
    config_acc = accuracy[full] - accuracy_drop + accuracy_sd * rng.standard_normal((sweeps, seeds))
    drawn = []
    for k in range(sweeps):
        config = [Run(i, float(config_acc[k, i]), float(config_s[k, i])) for i in range(seeds)]
        baseline = [Run(i, float(frontier_acc[k, i, full]), float(frontier_s[k, i, full])) for i in range(seeds)]
        frontier = [
            Run(i, float(frontier_acc[k, i, b]), float(frontier_s[k, i, b]), budget=budgets[b])
            for i in range(seeds)
            for b in range(len(budgets))
            if b != full
        ]
        drawn.append((config, baseline, frontier))
    return drawn


def simulate(rng: np.random.Generator, *, sweeps: int, seeds: int, **model: float) -> list[Verdict]:
    """The verdicts of ``sweeps`` simulated sweeps of one configuration against the baseline frontier."""
    return [verdict_for(*sweep) for sweep in draw(rng, sweeps=sweeps, seeds=seeds, **model)]


def simulate_adaptive(
    rng: np.random.Generator,
    *,
    sweeps: int,
    repeats: int,
    max_repeats: int,
    confidence: float = DEFAULT_CONFIDENCE,
    **model: Any,
) -> list[Verdict]:
    """Sweeps judged as ``sweep.max_repeats`` runs them: a look at ``repeats`` seeds, then one more seed at a
    time until the verdict resolves or ``max_repeats``, each look at ``look_confidence``'s level."""
    verdicts = []
    for config, baseline, frontier in draw(rng, sweeps=sweeps, seeds=max_repeats, **model):
        for n in range(repeats, max_repeats + 1):
            level = look_confidence(n, repeats, max_repeats, confidence)
            verdict = verdict_for(config[:n], baseline[:n], [r for r in frontier if r.seed < n], confidence=level)
            if verdict.verdict in RESOLVED:
                break
        verdicts.append(verdict)
    return verdicts


def coverage_with_outliers(
    rng: np.random.Generator,
    *,
    sweeps: int,
    seeds: int,
    effect: float,
    cv: float,
    outlier_rate: float,
    outlier_factor: float,
    confidence: float = DEFAULT_CONFIDENCE,
) -> float:
    """How often the speed-up interval covers ``effect`` when each run's time is, with probability
    ``outlier_rate``, ``outlier_factor`` times longer (a transient load on the machine), in any arm."""
    hits = 0
    for config, baseline, frontier in draw(rng, sweeps=sweeps, seeds=seeds, effect=effect, cv=cv, accuracy_sd=0.0):
        slow = lambda run: Run(  # noqa: E731
            run.seed,
            run.accuracy,
            run.time_s * (outlier_factor if rng.random() < outlier_rate else 1.0),
            budget=run.budget,
        )
        verdict = verdict_for(
            list(map(slow, config)), list(map(slow, baseline)), list(map(slow, frontier)), confidence=confidence
        )
        hits += verdict.speedup_ci_low < effect < verdict.speedup_ci_high
    return hits / sweeps


def shares(verdicts: list[Verdict]) -> Counter[str]:
    counts = Counter(v.verdict for v in verdicts)
    return Counter({name: count / len(verdicts) for name, count in counts.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sweeps", type=int, default=2000, help="simulated sweeps per cell")
    parser.add_argument("--seed", type=int, default=0, help="the random generator's seed")
    parser.add_argument("--accuracy-sd", type=float, default=0.001)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    faster: dict[tuple[float, float, int], float] = {}
    false_verdicts: dict[tuple[float, int], float] = {}
    for cv in CVS:
        for effect in EFFECTS:
            for n in SEED_COUNTS:
                share = shares(
                    simulate(rng, sweeps=args.sweeps, seeds=n, effect=effect, cv=cv, accuracy_sd=args.accuracy_sd)
                )
                faster[cv, effect, n] = share[FASTER]
                if effect == 1.0:
                    false_verdicts[cv, n] = share[FASTER] + share[SLOWER]
    seeds_header = " | ".join(f"{n} seeds" for n in SEED_COUNTS)
    print(f"Fraction `faster` over {args.sweeps} simulated sweeps per cell (accuracy sd {args.accuracy_sd}):\n")
    print(f"| time CV | speed-up | {seeds_header} |\n|---|---|" + "---|" * len(SEED_COUNTS))
    for cv in CVS:
        for effect in EFFECTS:
            cells = " | ".join(f"{faster[cv, effect, n]:.2f}" for n in SEED_COUNTS)
            print(f"| {cv:g} | {effect:g}× | {cells} |")
    print("\nA/A (speed-up 1×): fraction `faster` or `slower`, a false verdict:\n")
    print(f"| time CV | {seeds_header} |\n|---|" + "---|" * len(SEED_COUNTS))
    for cv in CVS:
        print(f"| {cv:g} | " + " | ".join(f"{false_verdicts[cv, n]:.3f}" for n in SEED_COUNTS) + " |")


if __name__ == "__main__":
    main()
