import math

import pytest
import torch

from raycomp.algorithms import BlurPool, SelectiveBackprop
from raycomp.config import ExperimentConfig
from raycomp.config.optimization_recipe import build_scheduler
from raycomp.config.recipe import build_trainer
from raycomp.core import State
from raycomp.core.scheduled_lr import compile_composer_scheduler
from raycomp.loop.checkpoint import CheckpointError


def anneal(start, end, progress):
    return end + (start - end) * 0.5 * (1 + math.cos(math.pi * progress))


SMALL = {"data": {"num_train": 128, "num_test": 64, "batch_size": 32}, "max_duration": "2ep"}


def test_a_config_becomes_a_trainer_that_runs(tmp_path):
    config = ExperimentConfig.from_dict(
        {**SMALL, "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "interrupt": 0}}}
    )
    trainer = build_trainer(config, save_folder=tmp_path)
    [sb] = trainer.state.algorithms
    assert isinstance(sb, SelectiveBackprop) and sb.interrupt == 0
    trainer.fit()
    assert trainer.state.timestamp.batch == 8 and "eval/accuracy" in trainer.state.eval_metrics
    assert (tmp_path / "latest.pt").exists()


def test_same_config_same_initial_weights():
    first, second = (build_trainer(ExperimentConfig.from_dict(SMALL)) for _ in range(2))
    for a, b in zip(first.state.model.parameters(), second.state.model.parameters(), strict=True):
        assert torch.equal(a, b)


@pytest.mark.parametrize(
    ("schedule", "lrs"),
    [
        ({"name": "constant"}, [0.1] * 4),
        ({"name": "step", "step_size": "1ep", "gamma": 0.5}, [0.1, 0.1, 0.05, 0.05]),
        ({"name": "step", "gamma": 0.5}, [0.1, 0.1, 0.05, 0.025]),  # no step_size: at 1/3 and 2/3 of the run
        ({"name": "cosine"}, [0.1, 0.1 * 0.5 * (1 + 0.7071067811865476), 0.05, 0.1 * 0.5 * (1 - 0.7071067811865476)]),
        ({"name": "linear", "warmup_fraction": 0.5}, [0.0, 0.05, 0.1, 0.05]),
        # torch's OneCycleLR shape: a cosine up from lr/25 to lr over 30 % of the run, then down towards lr/25e4
        (
            {"name": "onecycle"},
            [0.1 * anneal(1 / 25, 1, p) for p in (0, 0.25 / 0.3)]
            + [0.1 * anneal(1, 1 / 25e4, p) for p in (0.2 / 0.7, 0.45 / 0.7)],
        ),
    ],
)
def test_schedules_follow_elapsed_training(schedule, lrs):
    """Each schedule as the Trainer steps it: after every batch, from the State's elapsed fraction (4 batches)."""
    config = ExperimentConfig.from_dict(
        {**SMALL, "max_duration": "4ba", "optimizer": {"lr": 0.1}, "schedule": schedule}
    )
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
    state = State(torch.nn.Linear(1, 1), config.max_duration, optimizers=optimizer, steps_per_epoch=2)
    built = build_scheduler(config)
    scheduler = compile_composer_scheduler(built, state) if built is not None else None
    seen = []
    for _ in range(4):
        seen.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        state.timestamp = state.timestamp.to_next_batch(1)
        if scheduler is not None:
            scheduler.step()
    assert seen == pytest.approx(lrs)


def test_recreate_required_reaches_the_trainer(tmp_path):
    """A checkpoint trained with BlurPool (required_on_load) loads into a config without it only on request."""
    with_blurpool = ExperimentConfig.from_dict({**SMALL, "max_duration": "1ep", "algorithms": {"blurpool": {}}})
    build_trainer(with_blurpool, save_folder=tmp_path, device="cpu").fit()
    bare = ExperimentConfig.from_dict({**SMALL, "max_duration": "1ep"})
    with pytest.raises(CheckpointError, match="BlurPool"):
        build_trainer(bare, load_path=tmp_path)
    trainer = build_trainer(bare, load_path=tmp_path, recreate_required=True)
    assert [type(a) for a in trainer.state.algorithms] == [BlurPool] and trainer.state.timestamp.batch == 4


def test_compile_reaches_the_trainer_with_full_training_batches():
    """torch.compile is lazy: building the Trainer compiles nothing yet (tests/test_trainer_compile.py runs it)."""
    trainer = build_trainer(ExperimentConfig.from_dict({**SMALL, "compile": "reduce-overhead"}))
    assert trainer.state.compile_mode == "reduce-overhead"
    assert isinstance(trainer.train_model, torch._dynamo.eval_frame.OptimizedModule)
    assert trainer.state.train_dataloader.drop_last  # every batch one shape: static graphs
    eager = build_trainer(ExperimentConfig.from_dict(SMALL))
    assert eager.state.compile_mode is None and eager.train_model is eager.state.model
    assert not eager.state.train_dataloader.drop_last
