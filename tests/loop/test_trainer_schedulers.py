"""How the Trainer steps schedulers: torch ones per epoch unless told, raycomp schedules per batch, across resumes."""

import math

import pytest
import torch
from helpers import InMemoryLogger, tiny_loader, tiny_model

from raycomp import Callback, Trainer
from raycomp.core.scheduled_lr import ScheduledLR
from raycomp.core.schedulers import CosineAnnealingScheduler, LinearScheduler, OneCycleScheduler


class LrSeen(Callback):
    """The lr each batch trained with (read before its forward pass)."""

    def __init__(self) -> None:
        self.lrs: list[float] = []

    def before_train_batch(self, state, logger):
        self.lrs.append(state.optimizers[0].param_groups[0]["lr"])


def fit(max_duration="2ep", lr=1.0, schedulers=(), torch_schedulers=None, **kwargs):
    """A 2-batch-an-epoch run; ``torch_schedulers(optimizer)`` makes the torch ones. Returns it and its lrs."""
    model = tiny_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    seen = LrSeen()
    if torch_schedulers is not None:
        schedulers = [*torch_schedulers(optimizer), *schedulers]
    trainer = Trainer(
        model,
        tiny_loader(n=32, batch_size=16),  # 2 batches an epoch
        max_duration,
        optimizers=optimizer,
        schedulers=schedulers,
        callbacks=[seen, *kwargs.pop("callbacks", ())],
        device="cpu",
        seed=0,
        **kwargs,
    )
    trainer.fit()
    return trainer, seen.lrs


def step_lr(optimizer):
    return [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


def test_a_torch_scheduler_steps_once_per_epoch_by_default():
    """Issue 13's example: StepLR(step_size=1, gamma=0.5) halves the lr once per 2-batch epoch, not per batch."""
    trainer, lrs = fit(torch_schedulers=step_lr)
    assert not trainer.step_schedulers_every_batch
    assert lrs == [1.0, 1.0, 0.5, 0.5] and trainer.state.optimizers[0].param_groups[0]["lr"] == 0.25


def test_a_torch_scheduler_steps_per_batch_on_request():
    _, lrs = fit(torch_schedulers=step_lr, step_schedulers_every_batch=True)
    assert lrs == [1.0, 0.5, 0.25, 0.125]


def test_raycomp_schedules_step_per_batch_from_elapsed_training():
    logger = InMemoryLogger()
    trainer, lrs = fit(schedulers=LinearScheduler(), loggers=[logger])
    assert trainer.step_schedulers_every_batch and isinstance(trainer.state.schedulers[0], ScheduledLR)
    assert lrs == pytest.approx([1.0, 0.75, 0.5, 0.25])
    assert [lr for _, lr in logger.history["trainer/lr"]] == pytest.approx([0.75, 0.5, 0.25, 0.0])  # after the step


def test_with_a_torch_scheduler_among_them_all_step_per_epoch_as_in_composer():
    trainer, lrs = fit(torch_schedulers=step_lr, schedulers=[LinearScheduler()])
    assert not trainer.step_schedulers_every_batch
    # the schedule, stepped last, writes the lr: 2 of 4 batches done at the epoch's end (per batch: 0.75 at batch 1)
    assert lrs == pytest.approx([1.0, 1.0, 0.5, 0.5])


def test_a_raycomp_schedule_drives_the_default_optimizer():
    trainer = Trainer(tiny_model(), tiny_loader(n=32), "2ba", schedulers=LinearScheduler(), device="cpu", seed=0)
    assert trainer.state.optimizers[0].param_groups[0]["lr"] == 0.1
    trainer.fit()
    assert trainer.state.optimizers[0].param_groups[0]["lr"] == 0.0


def test_torch_schedulers_without_their_optimizers_are_refused():
    optimizer = torch.optim.SGD(tiny_model().parameters(), lr=0.1)
    with pytest.raises(ValueError, match="torch schedulers were given without the optimizers"):
        Trainer(tiny_model(), tiny_loader(), "1ep", schedulers=step_lr(optimizer)[0])


def weights(trainer):
    return {k: v.clone() for k, v in trainer.state.model.state_dict().items()}


def test_a_one_cycle_run_resumes_with_a_longer_max_duration(tmp_path):
    """torch's OneCycleLR stops here ("Tried to step N times"); a schedule over elapsed training stretches."""
    first, _ = fit("2ep", schedulers=OneCycleScheduler(), save_folder=tmp_path, lr=0.1)
    assert first.state.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.1 / 25e4)
    resumed, lrs = fit("4ep", schedulers=OneCycleScheduler(), load_path=tmp_path / "latest.pt", lr=0.1)
    assert resumed.state.timestamp.batch == 8 and torch.isfinite(resumed.state.loss)
    # batches 4 to 7 of 8: past the peak at 30 %, on the way down, from the first resumed batch on
    floor = 1 / 25e4
    expected = [0.1 * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * (n / 8 - 0.3) / 0.7))) for n in range(4, 8)]
    assert lrs == pytest.approx(expected, rel=1e-9)


def test_an_interrupted_run_with_a_schedule_resumes_bit_for_bit(tmp_path):
    full, full_lrs = fit("3ep", schedulers=CosineAnnealingScheduler(), save_folder=tmp_path, save_interval="1ba")
    resumed, resumed_lrs = fit("3ep", schedulers=CosineAnnealingScheduler(), load_path=tmp_path / "ep1-ba3.pt")
    assert resumed_lrs == full_lrs[3:]
    for key, value in weights(full).items():
        assert torch.equal(value, weights(resumed)[key]), key
