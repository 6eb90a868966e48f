import io
import math

import pytest
import torch
from helpers import tiny_loader, tiny_model

from raycomp.core import State
from raycomp.core.scheduled_lr import ScheduledLR, compile_composer_scheduler
from raycomp.core.schedulers import (
    ComposerScheduler,
    ConstantScheduler,
    ConstantWithWarmupScheduler,
    CosineAnnealingScheduler,
    CosineAnnealingWithWarmupScheduler,
    LinearScheduler,
    LinearWithWarmupScheduler,
    MultiStepScheduler,
    OneCycleScheduler,
    StepScheduler,
    fraction_of_training,
)


def make_state(max_duration="10ba", **kwargs):
    return State(tiny_model(), max_duration, train_dataloader=tiny_loader(n=64, batch_size=16), **kwargs)  # 4/epoch


def after(state, batches):
    """``state`` with its timestamp ``batches`` batches into training (epochs of steps_per_epoch)."""
    state.timestamp = state.timestamp.__class__()
    for _ in range(batches):
        state.timestamp = state.timestamp.to_next_batch(16)
        if state.timestamp.batch_in_epoch == state.steps_per_epoch:
            state.timestamp = state.timestamp.to_next_epoch()
    return state


def multipliers(schedule, batches, **kwargs):
    state = make_state(**kwargs)
    return [schedule(after(state, n)) for n in batches]


def cos(progress):
    return 0.5 * (1 + math.cos(math.pi * progress))


@pytest.mark.parametrize(
    ("schedule", "batches", "expected"),
    [
        (ConstantScheduler(alpha=0.5, t_max="5ba"), [0, 4, 5, 10], [0.5, 0.5, 1.0, 1.0]),
        (LinearScheduler(), [0, 5, 10], [1.0, 0.5, 0.0]),
        (LinearScheduler(alpha_i=0.2, alpha_f=1.0, t_max="0.5dur"), [0, 5, 8], [0.2, 1.0, 1.0]),
        (CosineAnnealingScheduler(), [0, 5, 10], [1.0, 0.5, 0.0]),
        (CosineAnnealingScheduler(alpha_f=0.1), [5], [0.1 + 0.9 * 0.5]),
        (ConstantWithWarmupScheduler("2ba", alpha=0.5), [0, 1, 2, 10], [0.0, 0.25, 0.5, 1.0]),
        (LinearWithWarmupScheduler("2ba"), [0, 1, 2, 6, 10], [0.0, 0.5, 1.0, 0.5, 0.0]),
        (CosineAnnealingWithWarmupScheduler("0.2dur"), [0, 1, 2, 6, 10], [0.0, 0.5, 1.0, 0.5, 0.0]),
        (StepScheduler("3ba", gamma=0.5), [0, 2, 3, 6, 9], [1.0, 1.0, 0.5, 0.25, 0.125]),
        (MultiStepScheduler(["2ba", "0.5dur"], gamma=0.1), [0, 1, 2, 5, 9], [1.0, 1.0, 0.1, 0.01, 0.01]),
        (OneCycleScheduler(), [0, 3, 10], [1 / 25, 1.0, 1 / 25e4]),
        (OneCycleScheduler(), [1, 6], [1 + (1 / 25 - 1) * cos(1 / 3), 1 / 25e4 + (1 - 1 / 25e4) * cos(3 / 7)]),
    ],
)
def test_each_schedule_is_a_function_of_elapsed_training(schedule, batches, expected):
    assert isinstance(schedule, ComposerScheduler)
    assert multipliers(schedule, batches) == pytest.approx(expected)


def test_one_cycle_moves_the_momentum_against_the_lr():
    schedule = OneCycleScheduler()
    state = make_state()
    assert [schedule.momentum(after(state, n)) for n in (0, 3, 10)] == pytest.approx([0.95, 0.85, 0.95])
    assert OneCycleScheduler(cycle_momentum=False).momentum(state) is None


def test_times_in_epochs_and_batches_become_fractions_of_max_duration():
    in_epochs, in_batches = make_state("2ep"), make_state("8ba")  # 4 batches an epoch
    assert fraction_of_training("4ba", in_epochs) == fraction_of_training("1ep", in_batches) == 0.5
    assert fraction_of_training("0.25dur", in_epochs) == 0.25 and fraction_of_training("1ep", in_epochs) == 0.5
    assert multipliers(LinearWithWarmupScheduler("1ep"), [2, 4, 6], max_duration="2ep") == [0.5, 1.0, 0.5]
    with pytest.raises(ValueError, match="10sp cannot be read against max_duration 2ep"):
        fraction_of_training("10sp", in_epochs)


def test_a_bad_time_fails_where_the_schedule_is_built():
    with pytest.raises(ValueError, match="Invalid time string '2 epochs'"):
        CosineAnnealingWithWarmupScheduler(t_warmup="2 epochs")
    with pytest.raises(ValueError, match="Invalid time string"):
        MultiStepScheduler(["0.5dur", "later"])


def test_a_longer_max_duration_stretches_the_schedule():
    schedule, state = CosineAnnealingScheduler(), after(make_state("10ba"), 5)
    assert schedule(state) == pytest.approx(0.5)
    state.max_duration = "20ba"
    assert schedule(state) == pytest.approx(cos(0.25))


def scheduled(schedule, max_duration="10ba", lr=0.1, optimizer_class=torch.optim.SGD, **optimizer_kwargs):
    state = make_state(max_duration)
    state.optimizers = [optimizer_class(state.model.parameters(), lr=lr, **optimizer_kwargs)]
    return state, compile_composer_scheduler(schedule, state)


def step_to(state, scheduler, batches):
    """Train to ``batches`` (no gradients: the optimizer step changes nothing) and step the scheduler, in that order."""
    after(state, batches)
    state.optimizers[0].step()
    scheduler.step()


def test_scheduled_lr_sets_the_initial_lr_times_the_multiplier_at_each_step():
    state, scheduler = scheduled(LinearScheduler())
    group = state.optimizers[0].param_groups[0]
    seen = [group["lr"]]
    for n in range(1, 4):
        step_to(state, scheduler, n)
        seen.append(group["lr"])
    assert seen == pytest.approx([0.1, 0.09, 0.08, 0.07]) and scheduler.get_last_lr() == [group["lr"]]


@pytest.mark.parametrize(("optimizer_class", "key"), [(torch.optim.SGD, "momentum"), (torch.optim.AdamW, "betas")])
def test_one_cycle_sets_sgd_momentum_or_adam_beta1(optimizer_class, key):
    state, scheduler = scheduled(OneCycleScheduler(), optimizer_class=optimizer_class)
    group = state.optimizers[0].param_groups[0]
    first = group[key] if key == "momentum" else group[key][0]
    step_to(state, scheduler, 3)
    peak = group[key] if key == "momentum" else group[key][0]
    assert (first, peak) == pytest.approx((0.95, 0.85))
    if key == "betas":
        assert group["betas"][1] == 0.999


def save_and_load(state_dict):
    buffer = io.BytesIO()
    torch.save(state_dict, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=True)  # as checkpoints are read: plain data only


def test_state_dict_is_plain_data_and_round_trips():
    source, scheduler = scheduled(CosineAnnealingWithWarmupScheduler("2ba"))
    step_to(source, scheduler, 4)
    saved = save_and_load(scheduler.state_dict())
    assert saved["max_duration"] == "10ba" and "schedule" not in saved and "training_state" not in saved
    target, restored = scheduled(CosineAnnealingWithWarmupScheduler("2ba"))
    target.timestamp = source.timestamp
    target.optimizers[0].load_state_dict(source.optimizers[0].state_dict())
    restored.load_state_dict(saved)
    assert restored.last_epoch == scheduler.last_epoch and restored.get_last_lr() == scheduler.get_last_lr()
    assert target.optimizers[0].param_groups[0]["lr"] == source.optimizers[0].param_groups[0]["lr"]


def test_loaded_into_a_longer_run_the_lr_follows_the_new_schedule_at_once():
    source, scheduler = scheduled(LinearScheduler())
    step_to(source, scheduler, 5)
    assert source.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.05)
    target, restored = scheduled(LinearScheduler(), max_duration="20ba")
    target.timestamp = source.timestamp
    target.optimizers[0].load_state_dict(source.optimizers[0].state_dict())
    restored.load_state_dict(save_and_load(scheduler.state_dict()))
    assert target.optimizers[0].param_groups[0]["lr"] == pytest.approx(0.075)  # 5 of 20 batches
    assert restored.get_last_lr() == pytest.approx([0.075])


def test_several_optimizers_must_be_named():
    state = make_state()
    state.optimizers = [torch.optim.SGD(state.model.parameters(), lr=0.1) for _ in range(2)]
    with pytest.raises(ValueError, match="Name the optimizer to schedule: the State has 2"):
        compile_composer_scheduler(LinearScheduler(), state)
    assert isinstance(compile_composer_scheduler(LinearScheduler(), state, state.optimizers[1]), ScheduledLR)
