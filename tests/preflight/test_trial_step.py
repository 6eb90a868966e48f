"""A few real training steps per method before Ray starts (raycomp.preflight.trial_step): what a method's own code
trips on is found once, on the probe's batch, not in every trial (issue 59 item 1)."""

from __future__ import annotations

import random

import torch
from torch import nn

from raycomp.algorithms import CutMix, LabelSmoothing, MixUp, RandAugment, SelectiveBackprop
from raycomp.models import RaycompModel
from raycomp.preflight.probe import Workload
from raycomp.preflight.trial_step import training_failure


class Sums(RaycompModel):
    """Regression: float targets, squared error per sample."""

    def __init__(self) -> None:
        super().__init__()
        self.net = nn.Linear(4, 1)

    def forward(self, batch):
        return self.net(batch[0]).squeeze(1)

    def loss(self, outputs, batch, reduction="mean"):
        return nn.functional.mse_loss(outputs, batch[1], reduction=reduction)


def regression() -> Workload:
    inputs = torch.randn(2, 4)
    return Workload(Sums(), (inputs, inputs.sum(dim=1)), (inputs, inputs.sum(dim=1)))


def test_methods_that_fit_train_and_those_whose_code_cannot_take_the_batch_say_why():
    workload = regression()
    assert training_failure(workload, None) is None  # the baseline
    assert training_failure(workload, MixUp()) is None
    assert training_failure(workload, SelectiveBackprop(start=0.0, end=1.0, scale_factor=1.0)) is None
    assert training_failure(workload, LabelSmoothing()).startswith("IndexError")  # float targets: no classes
    assert "CutMix needs inputs of shape (N, ..., H, W), got (8, 4)" in training_failure(workload, CutMix())
    assert "at least two dimensions" in training_failure(workload, RandAugment())  # a 1-D example is no image


def test_the_trial_changes_neither_the_workloads_model_nor_the_drivers_random_draws():
    workload = regression()
    weights = {name: value.clone() for name, value in workload.model.state_dict().items()}
    random.seed(7)
    torch.manual_seed(7)
    expected = (random.random(), torch.rand(1))
    random.seed(7)
    torch.manual_seed(7)
    assert training_failure(workload, MixUp()) is None
    assert (random.random(), torch.rand(1)) == expected
    assert all(torch.equal(weights[name], value) for name, value in workload.model.state_dict().items())
