"""eval.metrics: torchmetrics named in YAML, checked at their keys, built by the recipe, and usable as sweep.metric."""

import pytest
from config_files import only_problem, write
from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.recipe import build_trainer

METRICS = """\
model: {num_classes: 12}  # the synthetic data has 10 classes: more, so the metrics show they count the model's
eval:
  metrics:
    MulticlassF1Score:
    top2: {class: MulticlassAccuracy, top_k: 2}
"""


def test_named_metrics_are_built_with_the_models_classes(tmp_path):
    config = load_experiment(write(tmp_path, METRICS))
    metrics = config.build_eval_metrics()
    assert list(metrics) == ["MulticlassF1Score", "top2"]
    assert isinstance(metrics["MulticlassF1Score"], MulticlassF1Score)
    assert metrics["MulticlassF1Score"].num_classes == 12
    assert isinstance(metrics["top2"], MulticlassAccuracy) and metrics["top2"].top_k == 2
    assert ExperimentConfig.from_dict(config.to_dict()) == config  # written back as it was read


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("F1Scorer: {}", "eval.metrics.F1Scorer: 'F1Scorer' is not a torchmetrics class"),
        ("top2: {class: MulticlassAccuracy, top_k: 2, bogus: 1}", "eval.metrics.top2: MulticlassAccuracy("),
        ("accuracy: {class: MulticlassAccuracy}", "eval.metrics.accuracy: eval/accuracy is always computed"),
        ("top2: [2]", "eval.metrics.top2: "),
    ],
)
def test_bad_metrics_are_reported_at_their_key(tmp_path, entry, expected):
    path = write(tmp_path, f"eval:\n  metrics:\n    {entry}\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:") and expected in message, message


def sweep_on(metric: str, mode: str = "max") -> str:
    sweep = f"sweep:\n  metric: {metric}\n  mode: {mode}\n  space: {{}}\n"
    return METRICS + "algorithms:\n  selective_backprop: {}\n" + sweep


@pytest.mark.parametrize(
    ("metric", "mode"),
    [("eval/MulticlassF1Score", "max"), ("eval/top2", "max"), ("eval/loss", "min"), ("time/train_wall_s", "max")],
)
def test_a_sweep_may_optimise_any_computed_metric(tmp_path, metric, mode):
    assert load_experiment(write(tmp_path, sweep_on(metric, mode))).objective == (metric, mode)


def test_a_sweep_on_a_metric_never_computed_is_refused(tmp_path):
    path = write(tmp_path, sweep_on("eval/f1"))
    message = only_problem(path)
    assert "sweep.metric: 'eval/f1' is not computed" in message
    assert "eval/MulticlassF1Score, eval/top2" in message and "eval.metrics" in message


def test_the_recipe_evaluates_the_named_metrics():
    data = {"num_train": 64, "num_test": 32, "batch_size": 32}
    eval_section = {"metrics": {"top2": {"class": "MulticlassAccuracy", "top_k": 2, "average": "micro"}}}
    config = ExperimentConfig.from_dict({"data": data, "max_duration": "1ba", "eval": eval_section})
    metrics = build_trainer(config).evaluate()
    assert set(metrics) == {"eval/loss", "eval/accuracy", "eval/top2"}
    assert metrics["eval/accuracy"] <= metrics["eval/top2"] <= 1
