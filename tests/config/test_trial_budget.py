"""raycomp/config/trial.py: a frontier arm's duration, named by the config where it can be, else counted by the
trial's workers in their train loader's steps (issue 55; tests/launch/test_frontier_budget.py trains them)."""

from __future__ import annotations

import pytest

from raycomp.base import keys
from raycomp.config import ExperimentConfig, trial_config
from raycomp.config.arm import Arm
from raycomp.config.recipe import budget_steps
from raycomp.config.trial import budget_duration, worker_budget
from raycomp.core.time import Time


@pytest.mark.parametrize(
    ("duration", "budget", "steps_per_epoch", "expected"),
    [
        ("4ep", 1.5, None, "6ep"),  # whole epochs: the same steps on any data
        ("3ep", 1.5, None, None),  # 4.5 epochs: only the train loader knows how many steps that is
        ("3ep", 1.5, 13, "58ba"),  # a data module batching 400 samples by 32: round(1.5 x 39)
        ("3ep", 0.75, 13, "29ba"),
        ("100ba", 0.75, None, "75ba"),
        ("4096sp", 0.5, None, "2048sp"),
        ("1ep", 0.1, 3, "1ba"),  # never nothing
    ],
)
def test_a_budget_counts_the_steps_the_baseline_takes(duration, budget, steps_per_epoch, expected):
    resolved = budget_duration(Time.from_timestring(duration), budget, steps_per_epoch)
    assert (str(resolved) if resolved else None) == expected


def test_the_workers_resolve_only_what_the_config_cannot_name():
    sweep = ExperimentConfig.from_dict({"max_duration": "3ep", "sweep": {"space": {"optimizer.lr": {"grid": [0.1]}}}})
    half, double = Arm(keys.FRONTIER, "frontier-0.5", budget=0.5), Arm(keys.FRONTIER, "frontier-2", budget=2.0)
    assert (worker_budget(sweep, half), str(trial_config(sweep, half).max_duration)) == (0.5, "3ep")
    assert (worker_budget(sweep, double), str(trial_config(sweep, double).max_duration)) == (None, "6ep")
    assert worker_budget(sweep, Arm(keys.BASELINE)) is None


def test_a_loader_without_a_length_cannot_count_a_budget_in_epochs():
    with pytest.raises(ValueError, match="train loader has no length"):
        budget_steps(Time.from_timestring("3ep"), 1.5, iter([]))
    assert str(budget_steps(Time.from_timestring("3ep"), 1.5, range(13))) == "58ba"
