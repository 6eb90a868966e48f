"""A model's own metrics are the sweep's, and a model without class labels has no accuracy (issue 32 item 3): a
regression RaycompModel with per-sample squared error and its own MAE, swept on ``eval/mae``."""

from __future__ import annotations

import pytest
import torch
from config_files import only_problem, write
from user_code import REGRESSION_MODULE

from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.recipe import build_trainer
from raycomp.models import ClassifierModel, RaycompModel
from raycomp.preflight.experiment import check_experiment, load_checked_experiment

REGRESSION = """\
name: regression
model: {class_path: my_project.regression.SumRegression}
data: {class_path: my_project.regression.sums, batch_size: 16}
optimizer: {name: adam, lr: 0.01}
max_duration: 2ep
tracking: {enabled: false}
algorithms:
  selective_backprop: {start: 0.0, end: 1.0, keep: 0.5, scale_factor: 1.0}
sweep:
  space:
    algorithms.selective_backprop.keep: {grid: [0.5]}
"""


@pytest.fixture
def regression(user_project):
    (user_project / "my_project" / "regression.py").write_text(REGRESSION_MODULE)
    return user_project


def test_a_models_own_metric_is_a_valid_sweep_metric(tmp_path, regression):
    config = load_experiment(write(tmp_path, REGRESSION + "  metric: eval/mae\n  mode: min\n"))
    assert config.objective == ("eval/mae", "min")


def test_a_regression_has_no_accuracy_and_logs_its_own_metric(regression):
    config = load_experiment(write(regression, REGRESSION + "  metric: eval/mae\n  mode: min\n"))
    trainer = build_trainer(config.model_copy(update={"sweep": None}), device="cpu")
    trainer.fit()
    metrics = trainer.state.eval_metrics
    assert set(metrics) == {"eval/loss", "eval/mae"}  # no eval/accuracy = 0.0
    assert metrics["eval/mae"] > 0 and metrics["eval/loss"] > 0


def test_a_regression_sweep_on_the_default_accuracy_is_refused_naming_what_it_can_be(tmp_path, regression):
    path = write(tmp_path, REGRESSION)
    assert only_problem(path) == (
        f"{path}:9: sweep.metric: 'eval/accuracy' (the default) is not computed: my_project.regression.SumRegression "
        "has no accuracy (its num_correct gives None on the eval batch: no class labels) (set sweep.metric to one of "
        "eval/loss, eval/mae, with sweep.mode: min for a loss or an error)"
    )
    other = write(tmp_path, REGRESSION + "  metric: eval/r2\n  mode: max\n", "other.yaml")
    assert only_problem(other) == (
        f"{other}:12: sweep.metric: 'eval/r2' is not computed: the evaluator computes eval/loss, eval/mae (name more "
        "metrics under eval.metrics, or return them from the model's get_metrics())"
    )


def test_a_metric_better_lower_cannot_be_maximised(tmp_path, regression):
    path = write(tmp_path, REGRESSION + "  metric: eval/mae\n")
    assert only_problem(path) == (
        f"{path}:9: sweep.mode: is 'max' (the default) but eval/mae is better lower: the sweep would rank its worst "
        "trials best (set sweep.mode: min)"
    )


def test_a_classifier_counts_accuracy_and_anything_else_has_none():
    class Plain(RaycompModel):
        def forward(self, batch):
            return batch[0]

        def loss(self, outputs, batch, reduction="mean"):
            return outputs.sum()

    model = Plain()
    logits, labels = torch.tensor([[0.1, 0.9], [0.8, 0.2]]), torch.tensor([1, 1])
    assert model.num_correct(logits, (logits, labels)).item() == 1
    assert ClassifierModel(torch.nn.Identity()).num_correct(logits, (logits, labels)).item() == 1
    assert model.num_correct(logits[:, 0], (logits, labels.float())) is None  # a regression: float targets
    assert model.num_correct(logits, (logits, labels.float())) is None
    assert model.num_correct(logits, {"inputs": logits}) is None  # a batch without labels


def test_a_run_without_a_sweep_ranks_a_regressions_checkpoints_by_its_loss(tmp_path, regression):
    """No sweep section: the objective (best checkpoint, MLflow's page) is eval/accuracy for a classifier and
    eval/loss (min) for a model without accuracy, as the workload check found. The config never builds the model to
    find out: asked before any check, it says so instead of guessing (issue 56 item 1)."""
    unswept = REGRESSION.split("sweep:")[0]
    config, facts = load_checked_experiment(write(tmp_path, unswept))
    assert not facts.has_accuracy and config.objective == ("eval/loss", "min")
    data = {"class_path": "my_project.regression.sums", "init_args": {"features": 4}}  # not the checked data
    fresh = ExperimentConfig.from_dict({"model": {"class_path": "my_project.regression.SumRegression"}, "data": data})
    with pytest.raises(RuntimeError, match="check the experiment first"):
        _ = fresh.objective
    assert check_experiment(fresh).workload is not None and fresh.objective == ("eval/loss", "min")
    classifier = ExperimentConfig.from_dict({"model": {"class_path": "my_project.regression.three_classes"},
                                             "data": {"class_path": "my_project.regression.labelled"}})  # fmt: skip
    assert check_experiment(classifier).has_accuracy and classifier.objective == ("eval/accuracy", "max")
