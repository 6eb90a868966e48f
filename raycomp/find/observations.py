"""What the find's trials measured, by arm and seed: the only input of its decisions (``Observations``).

An arm is a recipe's key, or one of the baseline's references: ``baseline``, ``control`` and ``frontier-<budget>``
(the names a sweep gives them). A trial that failed or did not finish is kept with no accuracy or time: it is
never asked for again, and the verdicts drop its seed as they drop any missing value.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterable

from raycomp.base import keys
from raycomp.results.verdicts import Run


def frontier_arm(budget: float) -> str:
    return f"{keys.FRONTIER}-{budget:g}"


@dataclasses.dataclass(frozen=True)
class Trial:
    """One finished (or failed) trial: the arm it trained, its seed index and what it measured."""

    arm: str
    seed: int
    accuracy: float | None  # the final value of the metric (a loss under mode min)
    time_s: float | None  # the training time verdicts compare
    curve: tuple[tuple[float, float], ...] = ()  # (time_s, metric) at each evaluation
    budget: float | None = None  # a frontier trial's fraction of max_duration
    error: str | None = None  # why it has no values, when it failed
    trial_id: str | None = None  # its Tune trial (and so its MLflow run)
    stage: str | None = None  # the stage whose round trained it

    @functools.cached_property
    def run(self) -> Run:
        return Run(self.seed, self.accuracy, self.time_s, self.curve, self.budget)


class Observations:
    """Every trial of the find so far, one per (arm, seed): a later trial of the same arm and seed replaces it."""

    def __init__(self, trials: Iterable[Trial] = ()) -> None:
        self._trials: dict[tuple[str, int], Trial] = {}
        self.add(trials)

    def add(self, trials: Iterable[Trial]) -> None:
        for trial in trials:
            self._trials[trial.arm, trial.seed] = trial

    def has(self, arm: str, seed: int) -> bool:
        return (arm, seed) in self._trials

    def get(self, arm: str, seed: int) -> Trial | None:
        return self._trials.get((arm, seed))

    def runs(self, arm: str, seeds: Iterable[int]) -> list[Run]:
        return [self._trials[arm, seed].run for seed in seeds if (arm, seed) in self._trials]

    def frontier_runs(self, budgets: Iterable[float], seeds: Iterable[int]) -> list[Run]:
        seeds = list(seeds)
        return [run for budget in budgets for run in self.runs(frontier_arm(budget), seeds)]

    def seeds_of(self, arm: str) -> list[int]:
        return sorted(seed for name, seed in self._trials if name == arm)

    def error_of(self, arm: str) -> str | None:
        """The first error among the arm's trials, when none of them has a value (its method cannot train)."""
        trials = [trial for (name, _), trial in sorted(self._trials.items()) if name == arm]
        if not trials or any(trial.accuracy is not None and trial.time_s is not None for trial in trials):
            return None
        return next((trial.error for trial in trials if trial.error), None)

    def __iter__(self):
        return iter(self._trials.values())

    def __len__(self) -> int:
        return len(self._trials)
