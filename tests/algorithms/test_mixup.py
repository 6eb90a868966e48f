import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_dataset, tiny_model

from raycomp import Event, State
from raycomp.algorithms import MixUp
from raycomp.core import Engine
from raycomp.functional import mixup_batch


def test_fixed_mixing_and_indices_by_hand():
    x = torch.tensor([0.0, 4.0, 8.0, 12.0]).view(4, 1, 1, 1)
    y = torch.tensor([0, 1, 2, 3])
    mixed, permuted, mixing = mixup_batch(x, y, mixing=0.25, indices=torch.tensor([1, 0, 3, 2]))
    # 0.75 * x + 0.25 * x[perm]
    assert mixed.flatten().tolist() == [1.0, 3.0, 9.0, 11.0]
    assert permuted.tolist() == [1, 0, 3, 2] and mixing == 0.25


def test_drawn_mixing_is_at_most_one_half_and_alpha_zero_does_not_mix():
    torch.manual_seed(0)
    x, y = torch.randn(8, 3), torch.arange(8)
    draws = [mixup_batch(x, y, alpha=1.0)[2] for _ in range(200)]
    assert all(0 <= m <= 0.5 for m in draws) and len(set(draws)) > 100
    mixed, _, mixing = mixup_batch(x, y, alpha=0.0)
    assert mixing == 0.0 and torch.equal(mixed, x)
    _, permuted, _ = mixup_batch(x, y, mixing=0.3)
    assert sorted(permuted.tolist()) == list(range(8))  # a permutation of the batch


def test_argument_errors():
    x, y = torch.zeros(2, 3), torch.zeros(2)
    with pytest.raises(ValueError, match=r"mixing must be in \[0, 1\]"):
        mixup_batch(x, y, mixing=1.5)
    with pytest.raises(ValueError, match="alpha must be >= 0"):
        mixup_batch(x, y, alpha=-1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(alpha=-0.1), "for MixUp\nalpha\n  Input should be greater than or equal to 0"),
        (dict(alpha="0.2"), "for MixUp\nalpha\n  Input should be a valid number"),
        (dict(interpolate_loss="yes"), "for MixUp\ninterpolate_loss\n  Input should be a valid boolean"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MixUp(**kwargs)


def make_state(algorithm):
    model = tiny_model()
    inputs, targets = tiny_dataset(8).tensors
    state = State(model, "1ep", algorithms=[algorithm])
    state.batch = (inputs, targets)
    return state, Engine(state), inputs, targets


def forward_and_loss(state, engine):
    engine.run_event(Event.BEFORE_FORWARD)
    state.outputs = state.model(state.batch)
    engine.run_event(Event.AFTER_FORWARD)
    engine.run_event(Event.BEFORE_LOSS)
    state.loss = state.model.loss(state.outputs, state.batch)
    engine.run_event(Event.AFTER_LOSS)


def test_events_follow_interpolate_loss():
    soft, interpolated = MixUp(), MixUp(interpolate_loss=True)
    state = State(tiny_model(), "1ep")
    events = (Event.AFTER_DATALOADER, Event.BEFORE_FORWARD, Event.BEFORE_LOSS, Event.AFTER_LOSS, Event.BEFORE_BACKWARD)
    assert [soft.match(e, state) for e in events] == [False, True, True, True, False]
    assert [interpolated.match(e, state) for e in events] == [False, True, False, True, False]


def test_mixes_inputs_then_targets_and_restores_them():
    torch.manual_seed(0)
    mixup = MixUp(alpha=1.0)
    state, engine, inputs, targets = make_state(mixup)
    engine.run_event(Event.BEFORE_FORWARD)
    assert 0 < mixup.mixing <= 0.5
    expected_input = (1 - mixup.mixing) * inputs + mixup.mixing * inputs[mixup.indices]
    torch.testing.assert_close(state.batch[0], expected_input)
    assert state.batch[1] is targets and isinstance(state.batch, tuple)

    state.outputs = state.model(state.batch)
    engine.run_event(Event.BEFORE_LOSS)
    one_hot = F.one_hot(targets, 4).float()
    torch.testing.assert_close(state.batch[1], (1 - mixup.mixing) * one_hot + mixup.mixing * one_hot[mixup.indices])
    state.loss = state.model.loss(state.outputs, state.batch)
    engine.run_event(Event.AFTER_LOSS)
    assert state.batch[1] is targets


def test_interpolating_the_loss_equals_mixing_targets_for_cross_entropy():
    """Cross-entropy is linear in its targets, so both modes give the same loss for the same draw."""
    losses = []
    for interpolate_loss in (False, True):
        torch.manual_seed(0)
        mixup = MixUp(alpha=1.0, interpolate_loss=interpolate_loss)
        state, engine, _, targets = make_state(mixup)
        forward_and_loss(state, engine)
        assert state.batch[1] is targets  # neither mode leaves changed targets behind
        losses.append(state.loss)
    torch.testing.assert_close(losses[0], losses[1])


def test_interpolated_loss_by_hand():
    torch.manual_seed(0)
    mixup = MixUp(alpha=1.0, interpolate_loss=True)
    state, engine, _, targets = make_state(mixup)
    forward_and_loss(state, engine)
    own = F.cross_entropy(state.outputs, targets)
    permuted = F.cross_entropy(state.outputs, targets[mixup.indices])
    torch.testing.assert_close(state.loss, (1 - mixup.mixing) * own + mixup.mixing * permuted)


def test_loss_events_without_a_mix_are_an_error():
    state, engine, _, _ = make_state(MixUp())
    state.outputs = torch.zeros(8, 4)
    with pytest.raises(RuntimeError, match="without mixing on before_forward"):
        engine.run_event(Event.BEFORE_LOSS)
