"""raycomp/results/frontier_steps.py: nothing is judged against a frontier whose arms' steps are not in their budgets'
order (issue 55), and configs.summarize_configs and a find's round refuse so."""

from __future__ import annotations

import pytest

from raycomp.base import keys
from raycomp.base.errors import FrontierOutOfOrder
from raycomp.config.arm import Arm
from raycomp.results.configs import summarize_configs
from raycomp.results.frontier_steps import frontier_out_of_order, trained_steps
from raycomp.results.summary import TrialRecord, TrialSummary, summarize


def trial(variant: str, steps: int, seed: int = 0, budget: float | None = None, status: str = keys.TERMINATED):
    config_id = f"{variant}-{budget:g}" if budget is not None else variant
    return TrialSummary(
        f"{config_id}-{seed}", variant, {}, status, 0.5, 10.0, None, None,
        curve=((steps // 2, 5.0, 0.4), (steps, 10.0, 0.5)), config_id=config_id, repeat=seed, budget=budget,
    )  # fmt: skip


def frontier(steps: dict[float, int], seed: int = 0) -> list[TrialSummary]:
    """The baseline (budget 1.0) and its frontier arms at one seed, each having trained ``steps[budget]``."""
    return [trial(keys.BASELINE if b == 1 else keys.FRONTIER, n, seed, None if b == 1 else b) for b, n in steps.items()]


def test_a_trial_trained_the_step_of_its_last_report():
    assert trained_steps(trial(keys.BASELINE, 39)) == 39
    assert trained_steps(TrialSummary("t", keys.BASELINE, {}, keys.ERROR, None, None, None, None)) is None


def test_steps_that_grow_with_the_budget_at_every_seed_pass():
    assert frontier_out_of_order(frontier({0.5: 20, 0.75: 29, 1.0: 39, 1.5: 58})) is None
    assert frontier_out_of_order([*frontier({1.0: 39}), trial(keys.METHOD, 5)]) is None  # methods are not its arms


def test_issue_55s_frontier_is_refused_with_the_steps_each_budget_trained():
    """The find's numbers: a data module batching by 32 (400 samples, 3ep) priced as if it batched by 128."""
    message = frontier_out_of_order(frontier({0.5: 6, 0.75: 9, 1.0: 39, 1.5: 18}))
    assert message is not None and "nothing was judged" in message
    assert "at seed 0: 0.5: 6, 0.75: 9, 1 (baseline): 39, 1.5: 18" in message


def test_each_seed_is_checked_and_only_finished_trials_count():
    good, bad = frontier({0.5: 20, 1.0: 39}, seed=0), frontier({0.5: 20, 1.0: 20}, seed=1)  # equal steps: no curve
    message = frontier_out_of_order(good + bad)
    assert message is not None and "at seed 1: 0.5: 20, 1 (baseline): 20" in message and "seed 0" not in message
    stopped = trial(keys.FRONTIER, 10, budget=1.5, status=keys.ERROR)  # a failed arm is never judged
    assert frontier_out_of_order([*good, stopped]) is None


def records(steps: dict[float, int]) -> list[TrialRecord]:
    """Three seeds of the baseline, its frontier and a method faster than it, as the trials reported them."""
    made = []
    for seed in range(3):
        for budget, count in steps.items():
            variant = keys.BASELINE if budget == 1 else keys.FRONTIER
            arm = Arm(variant, variant if budget == 1 else f"frontier-{budget:g}", repeat=seed)
            arm = arm if budget == 1 else arm.replace(budget=budget)
            made.append(TrialRecord(arm.config_id, arm, keys.TERMINATED, history(count, 0.8 * budget**0.1, seed)))
        made.append(TrialRecord(f"m-{seed}", Arm(keys.METHOD, "method-1", repeat=seed), keys.TERMINATED, history(20)))
    return made


def history(steps: int, accuracy: float = 0.8, seed: int = 0) -> list[dict]:
    wall = steps * (1 + 0.01 * seed)
    return [{keys.STEP: steps, keys.WALL: wall, keys.STEPS: wall, "eval/accuracy": accuracy, keys.FINISHED: True}]


def test_a_sweep_judges_nothing_against_an_out_of_order_frontier_and_says_why():
    judged = summarize_configs(summarize(records({0.5: 20, 1.0: 39, 1.5: 58})))
    method = next(config for config in judged.configs if config.config_id == "method-1")
    assert judged.frontier_refused is None and method.verdict is not None
    refused = summarize_configs(summarize(records({0.5: 6, 1.0: 39, 1.5: 18})))
    assert all(config.verdict is None for config in refused.configs)
    assert refused.warning() == refused.frontier_refused and "1 (baseline): 39, 1.5: 18" in refused.warning()
    assert refused.document()["frontier_refused"] == refused.frontier_refused


def test_a_finds_round_refuses_to_observe_an_out_of_order_frontier(monkeypatch):
    from raycomp.config import ExperimentConfig
    from raycomp.launch.find import rounds

    monkeypatch.setattr(rounds, "trial_records", lambda grids: grids)
    config = ExperimentConfig.from_dict({"sweep": {"space": {"optimizer.lr": {"grid": [0.1]}}}})
    assert len(rounds.observed(config, records({0.5: 20, 1.0: 39}))) == 9
    with pytest.raises(FrontierOutOfOrder, match=r"1 \(baseline\): 39, 1.5: 18"):
        rounds.observed(config, records({1.0: 39, 1.5: 18}))
