"""BatchNorm statistics recomputed before each evaluation (raycomp/loop/batchnorm.py, issue 35)."""

import copy

import torch
from helpers import tiny_dataset, tiny_loader, tiny_model
from torch import nn
from torch.utils.data import DataLoader

from raycomp import Callback, Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.loop.batchnorm import recalibrate_batchnorm, running_stat_layers
from raycomp.models.base import ClassifierModel


def running_stats(model: nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items() if "running" in k}


class StatisticsAtEvaluation(Callback):
    """The running statistics each evaluation's first batch sees, and the model's weights then (a copy)."""

    def __init__(self) -> None:
        self.seen: list[tuple[dict[str, torch.Tensor], nn.Module]] = []

    def eval_start(self, state, logger) -> None:
        self._first = True

    def eval_before_forward(self, state, logger) -> None:
        if self._first:
            self.seen.append((running_stats(state.model), copy.deepcopy(state.model)))
        self._first = False


def assert_recomputed(stats: dict[str, torch.Tensor], model: nn.Module, batches: list) -> None:
    """``stats`` are ``recalibrate_batchnorm`` over ``batches`` with ``model``'s weights."""
    expected = copy.deepcopy(model)
    recalibrate_batchnorm(expected, batches)
    for key, value in running_stats(expected).items():
        assert torch.allclose(stats[key], value, atol=1e-6), key


def test_each_evaluation_sees_statistics_recomputed_from_the_last_two_batches_with_its_weights():
    """Not the moving average of earlier weights: exactly ``recalibrate_batchnorm`` over the last two batches the
    loader gave, with the weights the evaluation runs."""
    loader = DataLoader(tiny_dataset(64), batch_size=16)  # unshuffled: the last two batches of an epoch are known
    probe = StatisticsAtEvaluation()
    trainer = Trainer(tiny_model(), loader, "2ep", eval_dataloader=tiny_loader(n=16), callbacks=[probe], seed=0)
    trainer.fit()
    assert len(probe.seen) == 2  # after each epoch
    for stats, model in probe.seen:
        assert_recomputed(stats, model, list(loader)[-2:])


def test_with_selective_backprop_the_batches_are_the_full_ones_it_pruned():
    loader = DataLoader(tiny_dataset(64), batch_size=16)
    sb = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=1.0, interrupt=0)
    trainer = Trainer(tiny_model(), loader, "2ep", eval_dataloader=tiny_loader(n=16), algorithms=[sb], seed=0)
    trainer.fit()
    assert sb.last_num_kept == 8  # it pruned every batch to half
    assert_recomputed(running_stats(trainer.state.model), trainer.state.model, list(loader)[-2:])


def test_a_fit_without_evaluators_ends_with_recomputed_statistics():
    loader = DataLoader(tiny_dataset(64), batch_size=16)
    trainer = Trainer(tiny_model(), loader, "1ep", seed=0)
    trainer.fit()
    assert_recomputed(running_stats(trainer.state.model), trainer.state.model, list(loader)[-2:])


def test_zero_evaluates_with_the_running_averages_as_composer_does():
    """``recompute_batchnorm=0``: the statistics are the moving average the training forwards left, which lag."""
    loader = DataLoader(tiny_dataset(64), batch_size=16)
    trainer = Trainer(tiny_model(), loader, "1ep", eval_dataloader=tiny_loader(n=16), seed=0, recompute_batchnorm=0)
    trainer.fit()
    model = trainer.state.model
    recomputed = copy.deepcopy(model)
    recalibrate_batchnorm(recomputed, list(loader)[-2:])
    moved = [k for k, v in running_stats(recomputed).items() if not torch.allclose(running_stats(model)[k], v)]
    assert moved


def test_a_model_without_batchnorm_keeps_no_batches():
    model = ClassifierModel(nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 4)))
    trainer = Trainer(model, tiny_loader(n=32, batch_size=16), "1ep", seed=0)
    assert not running_stat_layers(model) and trainer._recent_batches.size == 0
    trainer.fit()


def test_with_ema_each_evaluation_recomputes_with_the_averaged_weights_and_training_keeps_its_own():
    """EMA swaps its averages in at EVAL_START: the statistics are recomputed after that, with the weights evaluated;
    swapped back at EVAL_END, the training weights keep theirs."""
    from raycomp.algorithms import EMA

    loader = DataLoader(tiny_dataset(64), batch_size=16)
    probe = StatisticsAtEvaluation()
    ema = EMA(half_life=None, smoothing=0.5)
    trainer = Trainer(
        tiny_model(), loader, "2ep", eval_dataloader=tiny_loader(n=16), algorithms=[ema], callbacks=[probe], seed=0
    )
    trainer.fit()
    for stats, model in probe.seen:
        assert_recomputed(stats, model, list(loader)[-2:])
