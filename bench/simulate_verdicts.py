"""The power table of raycomp's speed-up verdicts (docs/report.md): how often a planted speed-up is found.

Simulated sweeps, drawn with numpy and judged by ``raycomp.report.verdicts.verdict_for`` itself. The model:
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

import numpy as np

from raycomp.report.verdicts import FASTER, SLOWER, Run, Verdict, verdict_for

BUDGETS = (0.5, 0.75, 1.0)
FRONTIER_ACCURACY = (0.90, 0.94, 0.96)
BASELINE_TIME_S = 100.0
EFFECTS = (1.0, 1.1, 1.25, 1.5, 2.0)
CVS = (0.05, 0.1, 0.2, 0.3)
SEED_COUNTS = (3, 5, 8)


def simulate(
    rng: np.random.Generator,
    *,
    sweeps: int,
    seeds: int,
    effect: float,
    cv: float,
    accuracy_sd: float = 0.001,
    accuracy_drop: float = 0.0,
) -> list[Verdict]:
    """The verdicts of ``sweeps`` simulated sweeps of one configuration against the baseline frontier."""
    sigma = math.sqrt(math.log1p(cv * cv))  # log-normal noise with this coefficient of variation
    budgets, accuracy = np.array(BUDGETS), np.array(FRONTIER_ACCURACY)
    frontier_s = BASELINE_TIME_S * budgets * np.exp(sigma * rng.standard_normal((sweeps, seeds, len(BUDGETS))))
    frontier_acc = accuracy + accuracy_sd * rng.standard_normal((sweeps, seeds, len(BUDGETS)))
    config_s = BASELINE_TIME_S / effect * np.exp(sigma * rng.standard_normal((sweeps, seeds)))
    config_acc = accuracy[-1] - accuracy_drop + accuracy_sd * rng.standard_normal((sweeps, seeds))
    verdicts = []
    for k in range(sweeps):
        config = [Run(i, float(config_acc[k, i]), float(config_s[k, i])) for i in range(seeds)]
        baseline = [Run(i, float(frontier_acc[k, i, -1]), float(frontier_s[k, i, -1])) for i in range(seeds)]
        frontier = [
            Run(i, float(frontier_acc[k, i, b]), float(frontier_s[k, i, b]))
            for i in range(seeds)
            for b in range(len(BUDGETS) - 1)
        ]
        verdicts.append(verdict_for(config, baseline, frontier))
    return verdicts


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
