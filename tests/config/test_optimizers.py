"""Optimizers and schedules by name or by ``class_path``/``init_args`` (issue 32 item 4): any torch.optim class, a
user's own, torch's schedulers and raycomp's, checked at their keys before Ray starts, and resuming bit for bit."""

from __future__ import annotations

import pytest
import torch
from config_files import only_problem, write

from raycomp.base.import_path import import_callable
from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.optimization import FUSED_OPTIMIZERS, OPTIMIZERS
from raycomp.config.optimization_recipe import build_optimizer, build_scheduler
from raycomp.config.recipe import build_trainer
from raycomp.core.schedulers import StepScheduler

TINY = {"data": {"num_train": 64, "num_test": 32, "batch_size": 16}, "model": {"name": "cnn_plain"}, "seed": 5}
ADAM = {"class_path": "torch.optim.Adam", "init_args": {"lr": 1e-3, "betas": [0.9, 0.99]}}
STEP_LR = {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"step_size": 2, "gamma": 0.5}}
OWN_OPTIMIZER = '''
import torch


class SignDescent(torch.optim.Optimizer):
    """A user's own optimizer: a step of lr against the gradient's sign."""

    def __init__(self, params, lr: float = 0.01) -> None:
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for parameter in group["params"]:
                if parameter.grad is not None:
                    parameter.add_(parameter.grad.sign(), alpha=-group["lr"])
'''


def _config(**sections) -> ExperimentConfig:
    return ExperimentConfig.from_dict({**TINY, "max_duration": "2ba", **sections})


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_every_named_optimizer_is_its_torch_class_with_lr_and_weight_decay(name):
    config = _config(optimizer={"name": name, "lr": 0.02, "weight_decay": 1e-4})
    optimizer = build_optimizer(config, torch.nn.Linear(2, 2))
    assert type(optimizer).__name__ == OPTIMIZERS[name]
    assert optimizer.defaults["lr"] == 0.02 and optimizer.defaults["weight_decay"] == 1e-4


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_a_gpu_runs_optimizer_is_fused_where_torch_has_a_fused_kernel(name):
    """Issue 58: on a CUDA run the recipe asks for torch's fused update (one kernel for every parameter) where the
    named optimizer has one, and leaves the others as they are (torch refuses ``fused`` for them). On the CPU
    the recipe asks for nothing: results there stay bit for bit those of torch's default update."""
    config = _config(optimizer={"name": name})
    fused = build_optimizer(config, torch.nn.Linear(2, 2), fused=True)
    assert bool(fused.defaults.get("fused")) == (name in FUSED_OPTIMIZERS)
    assert not build_optimizer(config, torch.nn.Linear(2, 2)).defaults.get("fused")
    assert set(OPTIMIZERS) >= FUSED_OPTIMIZERS


@pytest.mark.parametrize("name", sorted(FUSED_OPTIMIZERS))
def test_a_fused_optimizer_resumed_from_an_unfused_checkpoint_stays_fused_and_steps_under_a_grad_scaler(name):
    """torch's load_state_dict takes the checkpoint's ``fused`` flag: a run saved unfused and resumed on a GPU lost
    its fused update, and under fp16's GradScaler its first step raised (the foreach update refuses the scaler's
    inf check). The CPU's fused kernels and GradScaler stand in for the GPU's here."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    config = _config(optimizer={"name": name, "lr": 0.01})
    saved = build_optimizer(config, model)
    model(torch.randn(3, 4)).sum().backward()
    saved.step()
    resumed = build_optimizer(config, model, fused=True)
    resumed.load_state_dict(saved.state_dict())
    assert all(group["fused"] is True for group in resumed.param_groups)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    scaler = torch.amp.GradScaler("cpu")
    resumed.zero_grad()
    scaler.scale(model(torch.randn(3, 4)).sum()).backward()
    scaler.unscale_(resumed)  # as the Trainer does before AFTER_TRAIN_BATCH
    scaler.step(resumed)
    scaler.update()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


@pytest.mark.parametrize("name", sorted(FUSED_OPTIMIZERS))
def test_an_unfused_optimizer_resumed_from_a_fused_checkpoint_steps_unfused(name):
    """The other way: a run saved fused (on a GPU) and resumed on a CPU takes the CPU recipe's update, not the
    checkpoint's (the CPU's fused kernels stand in for the GPU's here)."""
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 2)
    config = _config(optimizer={"name": name, "lr": 0.01})
    saved = build_optimizer(config, model, fused=True)
    model(torch.randn(3, 4)).sum().backward()
    saved.step()
    resumed = build_optimizer(config, model)
    resumed.load_state_dict(saved.state_dict())
    assert all(not group["fused"] and group["foreach"] is None for group in resumed.param_groups)
    before = [parameter.detach().clone() for parameter in model.parameters()]
    resumed.zero_grad()
    model(torch.randn(3, 4)).sum().backward()
    resumed.step()
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))


def test_a_cpu_trainer_from_the_recipe_has_neither_pinned_batches_nor_a_fused_optimizer():
    trainer = build_trainer(_config(), device="cpu")
    assert not trainer.state.train_dataloader.pin_memory
    assert not trainer.state.evaluators[0].dataloader.pin_memory
    assert not trainer.state.optimizers[0].defaults.get("fused")


def test_adam_by_name_trains_and_its_lr_comes_from_the_config():
    trainer = build_trainer(_config(optimizer={"name": "adam", "lr": 0.003}, schedule={"name": "constant"}))
    trainer.fit()
    [optimizer] = trainer.state.optimizers
    assert isinstance(optimizer, torch.optim.Adam) and optimizer.param_groups[0]["lr"] == 0.003
    assert trainer.state.timestamp.batch == 2


def test_the_library_classes_an_optimizer_or_schedule_names_are_allowed():
    for path in ("torch.optim.Adam", "torch.optim.lr_scheduler.StepLR", "raycomp.core.schedulers.StepScheduler"):
        assert isinstance(import_callable(path), type)
    with pytest.raises(ValueError, match="neither a model or dataset class"):
        import_callable("raycomp.core.schedulers.fraction_of_training")  # a function of raycomp: not a schedule


def test_set_optimizer_lr_is_init_args_lr_beside_a_class_path(tmp_path):
    path = write(tmp_path, "optimizer:\n  class_path: torch.optim.Adam\n  init_args: {lr: 0.001}\n")
    config = load_experiment(path, ["optimizer.lr=0.02", "max_duration=1ba"])
    assert config.optimizer.init_args == {"lr": 0.02}
    assert config.to_dict()["optimizer"] == {"class_path": "torch.optim.Adam", "init_args": {"lr": 0.02}}
    assert config.with_overrides({"optimizer.lr": 0.5}).optimizer.init_args == {"lr": 0.5}  # a sweep's value
    named = load_experiment(write(tmp_path, "optimizer: {name: adam}\n", "named.yaml"), ["optimizer.lr=0.02"])
    assert named.optimizer.lr == 0.02 and "class_path" not in named.to_dict()["optimizer"]


@pytest.mark.parametrize(
    ("section", "problem"),
    [
        ("optimizer: {class_path: torch.optim.Adam, init_args: {lr: 0.001, betaz: [0.9, 0.99]}}",
         "optimizer.init_args.betaz: Adam takes no argument 'betaz' (did you mean 'betas'?; valid arguments: lr, "
         "betas, eps, weight_decay, amsgrad, foreach, maximize, capturable, differentiable, fused, "
         "decoupled_weight_decay)"),
        ("optimizer: {class_path: torch.optim.Adam, init_args: {lr: -1.0}}",
         "optimizer.init_args: calling torch.optim.Adam failed: ValueError: Invalid learning rate: -1.0"),
        ("optimizer: {class_path: torch.optim.LBFGS}",
         "optimizer.class_path: torch.optim.LBFGS.step() needs 'closure', which raycomp's Trainer does not pass (it "
         "steps optimizers and schedulers without arguments): choose another class"),
        ("optimizer: {name: adam, class_path: torch.optim.Adam}",
         "optimizer.name: give optimizer.name or optimizer.class_path, not both"),
        ("optimizer: {class_path: torch.nn.Linear}", "optimizer.class_path: torch.nn.Linear is not a torch.optim."
         "Optimizer class"),
        ("optimizer: {name: adma}", "optimizer.name: unknown optimizer 'adma' (did you mean 'adamax'?; valid "
         "optimizers: sgd, adam, adamw, rmsprop, adagrad, adadelta, adamax, nadam, radam, asgd)"),
        ("schedule: {class_path: torch.optim.lr_scheduler.ReduceLROnPlateau}",
         "schedule.class_path: torch.optim.lr_scheduler.ReduceLROnPlateau.step() needs 'metrics', which raycomp's "
         "Trainer does not pass (it steps optimizers and schedulers without arguments): choose another class"),
        ("schedule: {class_path: torch.optim.lr_scheduler.StepLR, gamma: 0.5, init_args: {step_size: 1}}",
         "schedule.gamma: is a setting of the named schedules: give the class's arguments under schedule.init_args"),
        ("schedule: {class_path: torch.optim.lr_scheduler.StepLR, init_args: {optimizer: sgd, step_size: 1}}",
         "schedule.init_args.optimizer: StepLR's 'optimizer' is the optimizer, which raycomp passes: remove it"),
        ("schedule: {class_path: raycomp.core.schedulers.StepScheduler, init_args: {step_size: 2 epochs}}",
         "schedule.init_args: calling raycomp.core.schedulers.StepScheduler failed: ValueError: "),
    ],
    ids=["unknown-argument", "refused-value", "needs-a-closure", "name-and-class", "not-an-optimizer", "unknown-name",
         "steps-on-a-metric", "named-setting", "optimizer-given", "bad-time"],
)  # fmt: skip
def test_an_optimizer_or_schedule_that_cannot_be_built_is_one_line_at_its_key(tmp_path, section, problem):
    path = write(tmp_path, section + "\n")
    assert only_problem(path).startswith(f"{path}:1: {problem}")


def test_a_users_own_optimizer_and_raycomps_schedule_by_class_path_train(user_project):
    (user_project / "my_project" / "optim.py").write_text(OWN_OPTIMIZER)
    schedule = {"class_path": "raycomp.core.schedulers.StepScheduler", "init_args": {"step_size": "1ba", "gamma": 0.5}}
    config = _config(optimizer={"class_path": "my_project.optim.SignDescent", "lr": 0.01}, schedule=schedule)
    assert config.optimizer.init_args == {"lr": 0.01}
    trainer = build_trainer(config, device="cpu")
    before = [parameter.clone() for parameter in trainer.state.model.parameters()]
    trainer.fit()
    [optimizer] = trainer.state.optimizers
    assert type(optimizer).__name__ == "SignDescent" and isinstance(build_scheduler(config), StepScheduler)
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.01 * 0.5**2)  # stepped after each of the 2 batches
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.state.model.parameters(), strict=True))


def test_a_sweep_may_vary_an_optimizers_init_args_that_its_class_takes(tmp_path):
    base = "optimizer: {class_path: torch.optim.Adam}\nsweep:\n  space:\n"
    accepted = load_experiment(write(tmp_path, base + "    optimizer.init_args.lr: {grid: [0.001, 0.01]}\n"))
    assert accepted.sweep is not None and "optimizer.init_args.lr" in accepted.sweep.space
    path = write(tmp_path, base + "    optimizer.init_args.momentum: {grid: [0.9]}\n", "bad.yaml")
    assert only_problem(path).startswith(f"{path}:4: sweep.space.optimizer.init_args.momentum: Adam takes no argument")


def _weights(trainer) -> dict[str, torch.Tensor]:
    return {key: value.clone() for key, value in trainer.state.model.state_dict().items()}


def test_adam_and_step_lr_by_class_path_resume_bit_for_bit_to_a_longer_run(tmp_path):
    """2 epochs, stopped; resumed to 3: the weights, Adam's moments and StepLR's lr equal an uninterrupted 3-epoch
    run's (on the CPU). StepLR steps once per epoch (Composer's rule for torch schedulers)."""
    sections = {"optimizer": ADAM, "schedule": STEP_LR, "checkpoint": {"interval": "1ep"}}
    stopped = build_trainer(_config(**sections, max_duration="2ep"), save_folder=tmp_path / "two", device="cpu")
    stopped.fit()
    longer = _config(**sections, max_duration="3ep")
    resumed = build_trainer(longer, load_path=tmp_path / "two" / "latest.pt", device="cpu")
    assert resumed.state.timestamp.epoch == 2
    resumed.fit()
    uninterrupted = build_trainer(longer, device="cpu")
    uninterrupted.fit()
    expected, got = _weights(uninterrupted), _weights(resumed)
    assert expected.keys() == got.keys() and all(torch.equal(expected[key], got[key]) for key in expected)
    [adam], [again] = resumed.state.optimizers, uninterrupted.state.optimizers
    assert isinstance(adam, torch.optim.Adam) and adam.param_groups[0]["betas"] == (0.9, 0.99)
    assert adam.param_groups[0]["lr"] == again.param_groups[0]["lr"] == pytest.approx(1e-3 * 0.5)  # one step at 2ep
    for mine, theirs in zip(adam.param_groups[0]["params"], again.param_groups[0]["params"], strict=True):
        assert all(torch.equal(value, again.state[theirs][name]) for name, value in adam.state[mine].items())
    [scheduler] = resumed.state.schedulers
    assert isinstance(scheduler, torch.optim.lr_scheduler.StepLR) and scheduler.last_epoch == 3


@pytest.mark.parametrize("name", sorted(set(OPTIMIZERS) - {"sgd"}))
def test_a_named_optimizer_takes_torchs_defaults_for_what_is_not_set(name):
    """`optimizer: {name: adam, lr: 0.003}` trained with the SGD recipe's weight_decay of 5e-4, where torch's Adam
    has 0 (issue 59): a name other than sgd now starts from its torch.optim signature's defaults."""
    import inspect

    signature = inspect.signature(getattr(torch.optim, OPTIMIZERS[name])).parameters
    section = _config(optimizer={"name": name}).optimizer
    assert (section.lr, section.weight_decay) == (signature["lr"].default, signature["weight_decay"].default)
    given = _config(optimizer={"name": name, "lr": 0.003})
    assert given.optimizer.lr == 0.003 and given.optimizer.weight_decay == signature["weight_decay"].default
    built = build_optimizer(given, torch.nn.Linear(2, 2))
    assert built.defaults["weight_decay"] == signature["weight_decay"].default


def test_sgd_keeps_the_built_in_recipes_defaults():
    section = _config(optimizer={"name": "sgd"}).optimizer
    assert (section.lr, section.momentum, section.weight_decay) == (0.05, 0.9, 5e-4)
