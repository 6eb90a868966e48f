import datetime

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import InMemoryLogger, leave_rank, tiny_dataset, tiny_loader, tiny_model
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from raycomp import Event, State, Trainer
from raycomp.algorithms import LayerFreezing
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core import Engine
from raycomp.functional import freeze_layers
from raycomp.loop.checkpoint import CheckpointError
from raycomp.models.base import ClassifierModel


def linear_stack() -> nn.Sequential:
    """Four parameterised leaf layers (the last is the head, never frozen), a ReLU and a nested block."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Sequential(nn.Linear(4, 4), nn.Linear(4, 4)), nn.Linear(4, 2))


def frozen_layers(model: nn.Module) -> list[bool]:
    leaves = [m for m in model.modules() if not list(m.children()) and list(m.parameters())]
    return [not any(p.requires_grad for p in m.parameters()) for m in leaves]


@pytest.mark.parametrize(
    ("duration", "start", "level", "depth", "fraction"),
    [
        (0.5, 0.5, 1.0, 0, 0.0),  # freezing starts after freeze_start
        (0.75, 0.5, 1.0, 1, 0.5),  # half of the 3 freezable layers, rounded down
        (1.0, 0.5, 1.0, 3, 1.0),  # everything but the head
        (1.0, 0.5, 0.5, 1, 0.5),  # freeze_level caps the fraction
        (0.5, 0.0, 1.0, 1, 0.5),
    ],
)
def test_which_layers_freeze_at_a_given_duration(duration, start, level, depth, fraction):
    model = linear_stack()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    assert freeze_layers(model, optimizer, duration, start, level) == (depth, fraction)
    assert frozen_layers(model) == [True] * depth + [False] * (4 - depth)
    kept = {id(p) for p in optimizer.param_groups[0]["params"]}
    assert kept == {id(p) for p in model.parameters() if p.requires_grad}


def test_frozen_params_leave_the_optimizer_with_their_momentum():
    model = linear_stack()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()  # every param now has a momentum buffer
    first = model[0].weight
    freeze_layers(model, [optimizer], 0.75, 0.5, 1.0)
    assert first not in optimizer.state and first.grad is None and not first.requires_grad
    assert len(optimizer.state_dict()["state"]) == 6  # Composer's version raises a KeyError here
    before = first.detach().clone()
    optimizer.zero_grad()
    model(torch.randn(3, 4)).sum().backward()
    optimizer.step()
    assert first.grad is None and torch.equal(first, before)


def test_layers_never_thaw():
    model = linear_stack()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    freeze_layers(model, optimizer, 1.0, 0.5, 1.0)
    assert freeze_layers(model, optimizer, 0.75, 0.5, 1.0) == (1, 0.5)
    assert frozen_layers(model) == [True, True, True, False]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(freeze_start=1.0), "freeze_start\n  Input should be less than 1"),
        (dict(freeze_start=-0.1), "freeze_start\n  Input should be greater than or equal to 0"),
        (dict(freeze_start="half"), "freeze_start\n  Input should be a valid number"),
        (dict(freeze_level=1.5), "freeze_level\n  Input should be less than or equal to 1"),
        (dict(freeze_level=True), "freeze_level\n  Input should be a valid number"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        LayerFreezing(**kwargs)


def test_events_flags_and_logged_metrics():
    algorithm = LayerFreezing(freeze_start=0.0)
    assert algorithm.find_unused_parameters and LayerFreezing.required_on_load()
    model = ClassifierModel(linear_stack())
    state = State(model, "4ep", optimizers=torch.optim.SGD(model.parameters(), lr=0.1), algorithms=[algorithm])
    engine = Engine(state)
    logger = InMemoryLogger()
    engine.logger.destinations.append(logger)
    assert [e for e in Event if algorithm.match(e, state)] == [Event.BATCH_END]
    state.timestamp = state.timestamp.to_next_epoch().to_next_epoch()
    engine.run_event(Event.BATCH_END)  # half way: 0.5 of 3 layers
    assert algorithm.num_frozen_layers == 1 and frozen_layers(model) == [True, False, False, False]
    assert logger.latest("layer_freezing/layers_frozen") == 1
    assert logger.latest("layer_freezing/percentage_frozen") == 0.5
    assert algorithm.match(Event.BEFORE_LOAD, state)  # re-freezes on resume, once it has frozen something


def make_trainer(tmp_path, algorithms, seed=0, **kwargs):
    kwargs.setdefault("save_folder", tmp_path / "ckpt")
    model = tiny_model(seed=seed)  # conv, batchnorm, linear: conv and batchnorm can freeze
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=1e-3)
    return Trainer(
        model,
        tiny_loader(n=64, batch_size=16),
        "4ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=algorithms,
        optimizers=optimizer,
        device="cpu",
        seed=seed,
        **kwargs,
    )


def test_a_fit_freezes_progressively_and_frozen_weights_stop_moving(tmp_path):
    seen = []

    class Watch(__import__("raycomp").Callback):
        def epoch_end(self, state, logger):
            seen.append((frozen_layers(state.model), state.model.module[0].weight.detach().clone()))

    trainer = make_trainer(tmp_path, [LayerFreezing(freeze_start=0.0)], callbacks=[Watch()], save_folder=None)
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    assert [flags for flags, _ in seen] == [
        [False] * 3,
        [True, False, False],
        [True, False, False],
        [True, True, False],
    ]
    assert torch.equal(seen[1][1], seen[3][1])  # the conv froze at the end of epoch 2
    assert not torch.equal(seen[0][1], seen[1][1])


@pytest.mark.parametrize(("save_interval", "resume_from"), [("3ba", "ep2-ba9.pt"), ("1ep", "ep2-ba8.pt")])
def test_a_resumed_fit_freezes_the_same_layers_and_ends_with_the_same_weights(tmp_path, save_interval, resume_from):
    full = make_trainer(tmp_path, [LayerFreezing(freeze_start=0.0)], save_interval=save_interval)
    full.fit()
    resumed = make_trainer(
        tmp_path,
        [LayerFreezing(freeze_start=0.0)],
        seed=999,
        load_path=tmp_path / "ckpt" / resume_from,
        save_folder=tmp_path / "resumed",
    )
    assert frozen_layers(resumed.state.model) == [True, False, False]  # frozen again before the optimizer loaded
    resumed.fit()
    assert frozen_layers(resumed.state.model) == frozen_layers(full.state.model) == [True, True, False]
    assert [len(g["params"]) for g in resumed.state.optimizers[0].param_groups] == [2]
    expected = full.state.model.state_dict()
    for key, value in resumed.state.model.state_dict().items():
        assert torch.equal(value, expected[key]), key


def test_loading_without_it_is_refused_by_name(tmp_path):
    make_trainer(tmp_path, [LayerFreezing(freeze_start=0.0)]).fit()
    with pytest.raises(CheckpointError, match=r"layer_freezing\.LayerFreezing.*required_on_load"):
        make_trainer(tmp_path, [], load_path=tmp_path / "ckpt", save_folder=None)
    loaded = make_trainer(
        tmp_path, [], load_path=tmp_path / "ckpt", save_folder=None, load_recreate_required_algorithms=True
    )
    assert frozen_layers(loaded.state.model) == [True, True, False]


# ---- DDP: frozen parameters get no gradient, so DDP must look for unused ones ---------------------------


def run_rank(rank, world_size, init_file, out_dir):
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        torch.manual_seed(0)
        model = ClassifierModel(
            nn.Sequential(nn.Flatten(), nn.Linear(192, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 4))
        )
        dataset = tiny_dataset(64)
        loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=True, seed=0))
        trainer = Trainer(model, loader, "4ep", algorithms=[LayerFreezing(freeze_start=0.0)], device="cpu", seed=0)
        trainer.fit()
        torch.save(
            {
                "find_unused_parameters": trainer.train_model.find_unused_parameters,
                "frozen": frozen_layers(model),
                "weights": model.state_dict(),
                "loss": trainer.state.loss,
            },
            f"{out_dir}/rank{rank}.pt",
        )
    finally:
        dist.destroy_process_group()
    leave_rank()


@pytest.mark.spawns
def test_ddp_is_told_to_find_unused_parameters(tmp_path):
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    assert [r["find_unused_parameters"] for r in ranks] == [True, True]
    assert ranks[0]["frozen"] == ranks[1]["frozen"] == [True, True, False]  # the first froze after epoch 2
    assert all(torch.isfinite(r["loss"]) for r in ranks)
    for key, value in ranks[0]["weights"].items():
        assert torch.equal(value, ranks[1]["weights"][key]), key


# ---- the YAML name -------------------------------------------------------------------------------------


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  layer_freezing:\n    freeze_start: 0.25\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, LayerFreezing) and (algorithm.freeze_start, algorithm.freeze_level) == (0.25, 1.0)
    path.write_text("algorithms:\n  layer_freezing:\n    freeze_level: 2\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    assert info.value.problems == [
        f"{path}:3: algorithms.layer_freezing.freeze_level: must be in [0, 1], got 2 (default: 1.0)"
    ]
