"""One trial builds each of its algorithms once, in the recipe: the config keeps validated arguments, so neither
its validation (at the driver, for every arm, in the trial) nor Ray's pickling builds an algorithm."""

import functools
import pickle

import pytest

from raycomp.algorithms import LabelSmoothing, SelectiveBackprop
from raycomp.base import keys
from raycomp.config import ExperimentConfig, trial_config
from raycomp.config.recipe import build_trainer
from raycomp.launch.sweep.space import check_arms, sweep_arms

SB = "algorithms.selective_backprop"


@pytest.fixture
def built(monkeypatch):
    """How many of each algorithm were constructed, counted by wrapping its constructor."""
    counts = {SelectiveBackprop: 0, LabelSmoothing: 0}
    for cls in counts:
        original = cls.__init__

        @functools.wraps(original)
        def counting(self, *args, __original=original, __cls=cls, **kwargs):
            counts[__cls] += 1
            __original(self, *args, **kwargs)

        monkeypatch.setattr(cls, "__init__", counting)
    return counts


def test_one_trial_builds_each_algorithm_once(built):
    config = ExperimentConfig.from_dict(
        {
            "data": {"num_train": 64, "num_test": 32, "batch_size": 32},
            "max_duration": "1ep",
            "algorithms": {"selective_backprop": {"start": 0.0, "end": 0.8}, "label_smoothing": {}},
            "sweep": {"space": {f"{SB}.keep": {"grid": [0.3, 0.7]}, f"{SB}.end": {"uniform": [0.6, 1.0]}}},
        }
    )
    check_arms(config)  # every arm's trial config, at the driver
    shipped = pickle.loads(pickle.dumps(config))  # as Ray hands the config to a trial
    arm = next(arm for arm in sweep_arms(shipped) if arm.variant == keys.METHOD)
    trial = trial_config(shipped, arm)
    assert built == {SelectiveBackprop: 0, LabelSmoothing: 0}, "validation built an algorithm"

    trainer = build_trainer(trial)
    assert built == {SelectiveBackprop: 1, LabelSmoothing: 1}
    sb = next(a for a in trainer.state.algorithms if isinstance(a, SelectiveBackprop))
    assert (sb.start, sb.keep) == (0.0, trial.algorithms["selective_backprop"].keep)
