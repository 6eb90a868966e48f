"""An arm's Tune config (``Arm.as_tune``): a copy shares it (Tune's variant generator makes each variant with the
arm itself), it reads back the same through pickle and JSON, and it cannot change."""

from __future__ import annotations

import json
import pickle

import cloudpickle
import pytest
from ray import tune
from ray.tune.search.variant_generator import generate_variants

from raycomp.config.arm import Arm


def arms(count: int) -> list[Arm]:
    return [
        Arm("method", f"method-{index}", {"algorithms.selective_backprop.keep": index / count})
        for index in range(count)
    ]


def test_tunes_grid_over_the_arms_makes_each_variant_with_the_arm_itself():
    grid = [arm.as_tune() for arm in arms(50)]
    variants = [spec["config"]["arm"] for _, spec in generate_variants({"config": {"arm": tune.grid_search(grid)}})]
    assert sorted(map(id, variants)) == sorted(map(id, grid))  # each arm once, none copied


def test_an_arms_tune_config_reads_back_the_same_through_pickle_and_json_and_refuses_changes():
    arm = Arm("frontier", "frontier-0.5", {"optimizer.lr": 0.1, "algorithms.mixup.alpha": None}, repeat=2, budget=0.5)
    data = arm.as_tune()
    for copied in (pickle.loads(pickle.dumps(data)), cloudpickle.loads(cloudpickle.dumps(data))):
        assert copied == data and type(copied) is type(data)
        assert Arm.from_tune(copied) == arm
    assert Arm.from_tune(json.loads(json.dumps(data))) == arm
    for change in (lambda: data.__setitem__("repeat", 3), lambda: data.update(repeat=3), lambda: data.pop("repeat")):
        with pytest.raises(TypeError, match="read-only"):
            change()
    assert data["repeat"] == 2
