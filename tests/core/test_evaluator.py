"""Evaluators with torchmetrics: values against a hand computation, selection by metric_names, logging, and the
reduction across two real gloo ranks equal to one process's values."""

from __future__ import annotations

import datetime
import math

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import InMemoryLogger, leave_rank
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from raycomp import Trainer
from raycomp.core import Evaluator
from raycomp.core.evaluator import build_metric, metric_values, named_metrics, select_metrics
from raycomp.models.base import ClassifierModel

# Six samples of three classes whose logits are given outright (the model is the identity): the top class
# scores 3, the second 1, the third 0. Predictions and targets:
#   pred 0/t 0, pred 0/t 0, pred 0/t 1 (second choice 1), pred 1/t 1, pred 2/t 2, pred 1/t 2 (second choice 0)
TOP_AND_SECOND = [(0, 1), (0, 2), (0, 1), (1, 0), (2, 0), (1, 0)]
TARGETS = [0, 0, 1, 1, 2, 2]
# By hand: accuracy 4/6; top-2 accuracy 5/6 (only the last sample misses both choices);
# F1 per class: 0: TP 2 FP 1 FN 0 -> 0.8; 1: TP 1 FP 1 FN 1 -> 0.5; 2: TP 1 FP 0 FN 1 -> 2/3; macro the mean.
HAND = {"accuracy": 4 / 6, "top2": 5 / 6, "MulticlassF1Score": (0.8 + 0.5 + 2 / 3) / 3}


def logits() -> torch.Tensor:
    rows = torch.zeros(len(TARGETS), 3)
    for row, (top, second) in zip(rows, TOP_AND_SECOND, strict=True):
        row[top], row[second] = 3.0, 1.0
    return rows


def hand_loss() -> float:
    """Cross-entropy by its formula: -log(e^{l_t} / sum e^{l})."""
    total = 0.0
    for (top, second), target in zip(TOP_AND_SECOND, TARGETS, strict=True):
        scores = [0.0] * 3
        scores[top], scores[second] = 3.0, 1.0
        total -= scores[target] - math.log(sum(math.exp(s) for s in scores))
    return total / len(TARGETS)


def identity_model(**kwargs) -> ClassifierModel:
    layer = nn.Linear(3, 3)
    with torch.no_grad():
        layer.weight.copy_(torch.eye(3))
        layer.bias.zero_()
    return ClassifierModel(layer, **kwargs)


def samples_loader(indices: list[int], batch_size: int = 4) -> DataLoader:
    targets = torch.tensor(TARGETS)
    return DataLoader(TensorDataset(logits()[indices], targets[indices]), batch_size=batch_size)


def extra_metrics() -> dict:
    return {"top2": accuracy(top_k=2), **named_metrics(f1())}


# torchmetrics is imported inside these, after raycomp: mp.spawn's children import this module, and on the
# CPU torch with PyPI's torchvision, torchmetrics' import of torchvision needs raycomp's shim first.
def f1():
    from torchmetrics.classification import MulticlassF1Score

    return MulticlassF1Score(num_classes=3, average="macro")


def accuracy(top_k: int = 1, average: str = "micro"):
    from torchmetrics.classification import MulticlassAccuracy

    return MulticlassAccuracy(num_classes=3, top_k=top_k, average=average)


def evaluate(evaluators, model=None, loggers=()) -> Trainer:
    model = model or identity_model()
    trainer = Trainer(model, samples_loader([0]), "1ba", eval_dataloader=evaluators, loggers=loggers)
    trainer.evaluate()
    return trainer


def test_metrics_match_the_hand_computation_over_several_batches():
    memory = InMemoryLogger()
    trainer = evaluate(Evaluator("eval", samples_loader(list(range(6))), metrics=extra_metrics()), loggers=[memory])
    metrics = trainer.state.eval_metrics
    assert metrics["eval/loss"] == pytest.approx(hand_loss())
    for name, value in HAND.items():
        assert metrics[f"eval/{name}"] == pytest.approx(value), name
    assert memory.latest("eval/MulticlassF1Score") == pytest.approx(HAND["MulticlassF1Score"])  # logged too
    assert memory.latest("eval/top2") == pytest.approx(HAND["top2"])


def test_a_second_evaluation_starts_from_fresh_metric_states():
    trainer = evaluate(Evaluator("eval", samples_loader(list(range(6))), metrics=extra_metrics()))
    again = trainer.evaluate()
    assert again["eval/top2"] == pytest.approx(HAND["top2"])


def test_metric_names_pick_from_the_models_metrics_and_each_evaluator_keeps_its_own():
    top2 = accuracy(top_k=2)
    model = identity_model(val_metrics={"top2": top2, "F1": f1()})
    first_half, second_half = Evaluator("a", samples_loader([0, 1, 2]), ["top"]), Evaluator("b", samples_loader([5]))
    metrics = evaluate([first_half, second_half], model).state.eval_metrics
    assert "a/F1" not in metrics and metrics["a/top2"] == 1.0  # samples 0-2: the top two choices hold each target
    assert metrics["b/top2"] == 0.0 and metrics["b/accuracy"] == 0.0  # sample 5 alone: neither choice is right
    assert "b/F1" in metrics  # metric_names None: every metric the model offers


def test_a_metric_name_matching_nothing_is_an_error():
    with pytest.raises(ValueError, match="match none of the model's eval metrics"):
        evaluate(Evaluator("eval", samples_loader([0]), ["f1"]))


def test_loss_and_accuracy_cannot_be_shadowed():
    with pytest.raises(ValueError, match="may not be named 'accuracy'"):
        evaluate(Evaluator("eval", samples_loader([0]), metrics={"accuracy": f1()}))


def test_selection_naming_and_values():
    metrics = named_metrics([f1(), accuracy(average="macro")])
    assert list(metrics) == ["MulticlassF1Score", "MulticlassAccuracy"]
    assert list(select_metrics(metrics, ["f1"])) == ["MulticlassF1Score"]
    with pytest.raises(ValueError, match="two metrics are named"):
        named_metrics([f1(), f1()])
    assert metric_values("eval/F1", torch.tensor([0.5, 1.0])) == {"eval/F1/0": 0.5, "eval/F1/1": 1.0}
    assert metric_values("eval/x", {"a": torch.tensor(2.0)}) == {"eval/x/a": 2.0}


def test_build_metric_fills_num_classes_and_says_what_is_wrong():
    metric = build_metric("MulticlassAccuracy", {"top_k": 2, "num_classes": 5}, num_classes=3)
    assert type(metric).__name__ == "MulticlassAccuracy" and metric.top_k == 2 and metric.num_classes == 5  # as written
    assert build_metric("MulticlassF1Score", {}, num_classes=7).num_classes == 7
    assert build_metric("torchmetrics.classification.MulticlassAccuracy", {}, 3).num_classes == 3
    with pytest.raises(ValueError, match="not a torchmetrics class"):
        build_metric("F1Scorer", {}, 3)
    with pytest.raises(ValueError, match="bogus"):
        build_metric("MulticlassF1Score", {"bogus": 1}, 3)
    with pytest.raises(ValueError, match="not a torchmetrics Metric class"):
        build_metric("torch.nn.Linear", {})


# -- two gloo ranks: torchmetrics reduces the states, not the per-rank values ---------------------------------
# Rank 0 evaluates samples 0-3 (two batches), rank 1 samples 4-5: per-rank F1 averaged would not be the global F1.
RANK_SAMPLES = [[0, 1, 2, 3], [4, 5]]


def run_rank(rank: int, init_file: str, out_dir: str) -> None:
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=2, timeout=datetime.timedelta(seconds=60)
    )
    try:
        loader = samples_loader(RANK_SAMPLES[rank], batch_size=3)
        trainer = evaluate(Evaluator("eval", loader, metrics=extra_metrics()))
        torch.save(trainer.state.eval_metrics, f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()
    leave_rank()


@pytest.mark.spawns
def test_two_ranks_reduce_to_the_single_process_values(tmp_path):
    mp.spawn(run_rank, args=(str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)]
    single = evaluate(Evaluator("eval", samples_loader(list(range(6))), metrics=extra_metrics())).state.eval_metrics
    assert ranks[0] == ranks[1]
    assert ranks[0] == pytest.approx(single)
    assert ranks[0]["eval/MulticlassF1Score"] == pytest.approx(HAND["MulticlassF1Score"])
