"""A random or ASHA sweep hands Tune its arms through a searcher (``space.ArmsInOrder``), one suggestion a trial,
not as a grid: Tune copies a grid's whole list of arms for every variant (n² over a sweep, docs/benchmarks.md
"At scale", twenty-second session). The trials' configs keep the shape a grid gave them."""

from __future__ import annotations

from ray.tune.search import Searcher

from raycomp.config import ExperimentConfig
from raycomp.config.arm import Arm
from raycomp.launch.sweep.ledger import CONFIG_DIGEST
from raycomp.launch.sweep.space import ArmsInOrder, search_space, sweep_arms

SB = "algorithms.selective_backprop"


def sweep_config(**sweep) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
        {
            "algorithms": {"selective_backprop": {}},
            "sweep": {"space": {f"{SB}.keep": {"grid": [0.25, 0.5, 0.75]}}, "repeats": 2, **sweep},
        }
    )


def test_a_random_sweep_suggests_each_arm_once_in_order_and_puts_no_grid_in_tunes_config():
    config = sweep_config()
    space, searcher, num_samples = search_space(config)
    assert set(space) == {CONFIG_DIGEST}  # no grid_search: nothing for Tune to copy per variant
    arms = sweep_arms(config)
    assert num_samples == len(arms)
    suggested = [searcher.suggest(f"t{index}") for index in range(len(arms))]
    assert [Arm.from_tune(suggestion["arm"]) for suggestion in suggested] == arms
    assert searcher.suggest("one-more") == Searcher.FINISHED


def test_the_searcher_saved_mid_sweep_goes_on_from_the_next_arm(tmp_path):
    arms = [Arm("method", f"method-{index}", {f"{SB}.keep": index / 10}) for index in range(5)]
    _, searcher, _ = search_space(sweep_config(), arms)
    first = [searcher.suggest(f"t{index}")["arm"] for index in range(2)]
    searcher.save(str(tmp_path / "searcher.pkl"))
    restored = ArmsInOrder([])
    restored.restore(str(tmp_path / "searcher.pkl"))
    rest = [restored.suggest(f"t{index}")["arm"] for index in range(2, 5)]
    assert [Arm.from_tune(arm) for arm in first + rest] == arms
    assert restored.suggest("t5") == Searcher.FINISHED
