import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_dataset, tiny_model

from raycomp import Event, State
from raycomp.algorithms import LabelSmoothing
from raycomp.core import Engine
from raycomp.functional import ensure_targets_one_hot, smooth_labels


def test_smoothing_a_three_class_one_hot_by_hand():
    logits = torch.zeros(2, 3)
    smoothed = smooth_labels(logits, torch.tensor([1, 0]), smoothing=0.3)
    # (1 - 0.3) * one_hot + 0.3 / 3
    torch.testing.assert_close(smoothed, torch.tensor([[0.1, 0.8, 0.1], [0.8, 0.1, 0.1]]))
    torch.testing.assert_close(smoothed.sum(dim=1), torch.ones(2))


def test_zero_smoothing_is_the_one_hot_and_probabilities_are_smoothed_further():
    logits = torch.zeros(2, 4)
    torch.testing.assert_close(
        smooth_labels(logits, torch.tensor([3, 0]), 0.0), F.one_hot(torch.tensor([3, 0]), 4).float()
    )
    soft = torch.tensor([[0.5, 0.5, 0.0, 0.0]])
    torch.testing.assert_close(smooth_labels(torch.zeros(1, 4), soft, 0.2), torch.tensor([[0.45, 0.45, 0.05, 0.05]]))


def test_dense_targets_get_classes_on_dim_1_and_float32_under_low_precision_logits():
    logits = torch.zeros(2, 3, 4, 5, dtype=torch.bfloat16)
    target = torch.randint(0, 3, (2, 4, 5))
    one_hot = ensure_targets_one_hot(logits, target)
    assert one_hot.shape == (2, 3, 4, 5) and one_hot.dtype == torch.float32
    assert torch.equal(one_hot.argmax(dim=1), target)


def test_target_shape_errors():
    with pytest.raises(ValueError, match="one dimension fewer"):
        ensure_targets_one_hot(torch.zeros(2, 3), torch.zeros(2, 1, dtype=torch.long))
    with pytest.raises(ValueError, match="logits' shape"):
        ensure_targets_one_hot(torch.zeros(2, 3), torch.zeros(2, 4))
    with pytest.raises(ValueError, match=r"smoothing must be in \[0, 1\)"):
        smooth_labels(torch.zeros(2, 3), torch.tensor([0, 1]), 1.0)


@pytest.mark.parametrize(
    ("smoothing", "reason"),
    [
        (-0.1, "greater than or equal to 0"),
        (1.0, "less than 1"),
        (1.5, "less than 1"),
        ("0.1", "a valid number"),
        (True, "a valid number"),
    ],
)
def test_constructor_validates(smoothing, reason):
    with pytest.raises(ValueError, match=f"for LabelSmoothing\nsmoothing\n  Input should be {reason}"):
        LabelSmoothing(smoothing)


def test_smooths_on_before_loss_and_restores_on_after_loss():
    model = tiny_model()
    inputs, targets = tiny_dataset(8).tensors
    algorithm = LabelSmoothing(0.1)
    state = State(model, "1ep", algorithms=[algorithm])
    state.batch = [inputs, targets]
    state.outputs = model(state.batch)
    engine = Engine(state)
    assert [algorithm.match(e, state) for e in (Event.AFTER_FORWARD, Event.BEFORE_LOSS, Event.AFTER_LOSS)] == [
        False,
        True,
        True,
    ]

    engine.run_event(Event.BEFORE_LOSS)
    assert isinstance(state.batch, list) and state.batch[0] is inputs
    torch.testing.assert_close(state.batch[1], smooth_labels(state.outputs, targets, 0.1))
    loss = model.loss(state.outputs, state.batch)  # cross-entropy takes the probabilities
    expected = -(smooth_labels(state.outputs, targets, 0.1) * state.outputs.log_softmax(dim=1)).sum(dim=1).mean()
    torch.testing.assert_close(loss, expected)

    engine.run_event(Event.AFTER_LOSS)
    assert state.batch[1] is targets
