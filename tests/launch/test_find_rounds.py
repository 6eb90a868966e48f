"""A find's round as sweep arms (raycomp.launch.find.rounds): the config each trial trains, without Ray.

A method arm trains its recipe's algorithms with its arguments; the baseline, its frontier and the control train
none of the candidates but keep the experiment's own algorithms; every arm of every round has Tune's columns."""

from __future__ import annotations

from raycomp.base import keys
from raycomp.config import ExperimentConfig, trial_config
from raycomp.find.race import Request
from raycomp.find.recipes import Candidate, Method, Recipe
from raycomp.launch.find.rounds import arm_of, round_config

EXPERIMENT = {
    "data": {"num_train": 64, "num_test": 32, "batch_size": 16},
    "max_duration": "2ep",
    "algorithms": {"gradient_clipping": {"clipping_threshold": 2.0}},
    "find": {"methods": ["selective_backprop", "label_smoothing"], "baseline_budgets": [0.5]},
}
CANDIDATES = (Candidate("selective_backprop"), Candidate("label_smoothing"))


def test_a_method_arm_trains_its_recipe_and_the_references_none_of_the_candidates():
    config = ExperimentConfig.from_dict(EXPERIMENT)
    both = Recipe.of(Method("selective_backprop", (("keep", 0.3),)), Method("label_smoothing"))
    rounds = round_config(config, CANDIDATES, [both])
    assert rounds.find is None and rounds.sweep.frontier_budgets == [0.5]
    method = trial_config(rounds, arm_of(Request(both.key, 3, keys.METHOD, both)))
    assert method.seed == 3
    assert method.to_dict()["algorithms"] == {
        "gradient_clipping": {"clipping_threshold": 2.0},
        "selective_backprop": {"keep": 0.3},
        "label_smoothing": {},
    }
    alone = Recipe.of(Method("label_smoothing", (("smoothing", 0.2),)))
    assert trial_config(rounds, arm_of(Request(alone.key, 0, keys.METHOD, alone))).to_dict()["algorithms"] == {
        "gradient_clipping": {"clipping_threshold": 2.0},
        "label_smoothing": {"smoothing": 0.2},
    }
    for request in (
        Request(keys.BASELINE, 1, keys.BASELINE),
        Request(keys.CONTROL, 1, keys.CONTROL),
        Request("frontier-0.5", 1, keys.FRONTIER, budget=0.5),
    ):
        arm = arm_of(request)
        assert arm.overrides == {"algorithms": None}  # Tune's table reads every swept column of every arm
        reference = trial_config(rounds, arm)
        assert reference.to_dict()["algorithms"] == {"gradient_clipping": {"clipping_threshold": 2.0}}
    frontier = trial_config(rounds, arm_of(Request("frontier-0.5", 1, keys.FRONTIER, budget=0.5)))
    assert str(frontier.max_duration) == "1ep"


def test_a_proxy_round_trains_its_share_of_the_run_with_time_arguments_keeping_their_share():
    """Issue 57: on the proxy (a quarter of 8 epochs), each trial trains 2 epochs, its frontier budgets shares of
    those, and a time argument in batches (EMA's half-life, the experiment's or a recipe's) its share of the run."""
    from raycomp.find.plan import Proxy

    experiment = {**EXPERIMENT, "max_duration": "8ep", "algorithms": {"ema": {"half_life": "8ba"}}}
    config = ExperimentConfig.from_dict({**experiment, "find": {**EXPERIMENT["find"], "proxy": {}}})
    proxy = Proxy(0.25, duration="0.25dur")
    recipe = Recipe.of(Method("progressive_resizing", (("delay_fraction", 0.5),)), Method("layer_freezing"))
    rounds = round_config(config, (Candidate("progressive_resizing"), Candidate("layer_freezing")), [recipe], proxy)
    assert str(rounds.max_duration) == "2ep"
    assert rounds.to_dict()["algorithms"]["ema"] == {"half_life": "0.25dur"}  # 8 of the run's 32 batches
    baseline = trial_config(rounds, arm_of(Request(f"{keys.BASELINE}@proxy", 0, keys.BASELINE), config))
    assert str(baseline.max_duration) == "2ep" and baseline.to_dict()["algorithms"] == {"ema": {"half_life": "0.25dur"}}
    assert (
        str(trial_config(rounds, arm_of(Request("frontier-0.5@proxy", 0, keys.FRONTIER, budget=0.5))).max_duration)
        == "1ep"
    )
    method = trial_config(rounds, arm_of(Request(f"{recipe.key}@proxy", 0, keys.METHOD, recipe), config))
    assert method.to_dict()["algorithms"]["progressive_resizing"]["delay_fraction"] == 0.5  # a fraction stays
    assert method.to_dict()["algorithms"]["layer_freezing"].get("freeze_start", "0.5dur").endswith("dur")
    full = round_config(config, (Candidate("progressive_resizing"),), [])
    assert str(full.max_duration) == "8ep" and full.to_dict()["algorithms"]["ema"] == {"half_life": "8ba"}


def test_a_proxy_with_a_data_fraction_trains_a_seeded_share_of_the_training_set():
    """find.proxy.data_fraction: the proxy's trials train on a share of the training set, the same share at every
    trial (drawn by the data's seed); the full run's trials on all of it."""
    from raycomp.config.recipe import build_loaders
    from raycomp.find.plan import Proxy

    find = {**EXPERIMENT["find"], "proxy": {"max_duration": "0.5dur", "data_fraction": 0.5}}
    config = ExperimentConfig.from_dict({**EXPERIMENT, "find": find})
    rounds = round_config(config, CANDIDATES, [], Proxy(0.5, duration="0.5dur", data_fraction=0.5, share=0.25))
    assert rounds.data.train_fraction == 0.5 and rounds.data.train_size == 32 and str(rounds.max_duration) == "1ep"
    baseline = trial_config(rounds, arm_of(Request(f"{keys.BASELINE}@proxy", 0, keys.BASELINE), config))
    first, again = build_loaders(baseline)[0].dataset, build_loaders(baseline)[0].dataset
    assert len(first) == 32 and list(first.indices) == list(again.indices)
    assert len(build_loaders(config)[0].dataset) == 64  # the full run's: all of it
