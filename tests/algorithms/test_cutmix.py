import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_dataset, tiny_model

from raycomp import Event, State
from raycomp.algorithms import CutMix
from raycomp.algorithms.cutmix import _rand_bbox
from raycomp.core import Engine
from raycomp.functional import cutmix_batch


def test_given_bbox_pastes_rows_x1_x2_and_columns_y1_y2_of_the_permuted_example():
    x = torch.arange(32.0).view(2, 1, 4, 4)  # example 0 holds 0..15, example 1 holds 16..31
    mixed, permuted, kept, bbox = cutmix_batch(x, torch.tensor([0, 1]), bbox=(0, 1, 2, 3), indices=torch.tensor([1, 0]))
    expected = x.clone()
    expected[0, 0, 0:2, 1:3] = torch.tensor([[17.0, 18.0], [21.0, 22.0]])
    expected[1, 0, 0:2, 1:3] = torch.tensor([[1.0, 2.0], [5.0, 6.0]])
    assert torch.equal(mixed, expected)
    assert permuted.tolist() == [1, 0]
    assert kept == 1 - 4 / 16 and bbox == (0, 1, 2, 3)
    assert torch.equal(x, torch.arange(32.0).view(2, 1, 4, 4))  # the input is not changed in place


def test_length_sets_the_box_sides_as_a_fraction_of_height_and_width():
    torch.manual_seed(0)
    for _ in range(50):
        _, _, kept, (x1, y1, x2, y2) = cutmix_batch(torch.zeros(2, 3, 8, 16), torch.zeros(2), length=0.5)
        assert x2 - x1 <= 4 and y2 - y1 <= 8  # clipped at the borders, never larger
        assert kept == pytest.approx(1 - (x2 - x1) * (y2 - y1) / 128)
    _, _, kept, bbox = cutmix_batch(torch.zeros(2, 3, 8, 8), torch.zeros(2), length=1.0)
    assert bbox[2] - bbox[0] >= 4  # a full-size box is at least half inside


def test_drawn_box_area_and_uniform_sampling_covers_pixels_evenly():
    torch.manual_seed(0)
    kept = [cutmix_batch(torch.zeros(2, 1, 32, 32), torch.zeros(2))[2] for _ in range(300)]
    assert all(0 <= k <= 1 for k in kept) and 0.45 < sum(kept) / len(kept) < 0.8
    counts = {False: torch.zeros(10), True: torch.zeros(10)}
    for uniform in (False, True):
        for _ in range(4000):
            x1, _, x2, _ = _rand_bbox(10, 10, 0.6, uniform)
            counts[uniform][x1:x2] += 1
    paper, even = counts[False], counts[True]
    assert paper[0] < 0.8 * paper[5]  # centre sampling: 4/10 for a border pixel, 6/10 in the middle
    assert (even.max() - even.min()) / even.mean() < 0.2


def test_argument_errors():
    x, y = torch.zeros(2, 3, 4, 4), torch.zeros(2)
    with pytest.raises(ValueError, match="either length or bbox"):
        cutmix_batch(x, y, length=0.5, bbox=(0, 0, 1, 1))
    with pytest.raises(ValueError, match=r"length must be in \[0, 1\]"):
        cutmix_batch(x, y, length=2)
    with pytest.raises(ValueError, match="bbox must satisfy"):
        cutmix_batch(x, y, bbox=(0, 0, 5, 1))
    with pytest.raises(ValueError, match=r"shape \(N, ..., H, W\)"):
        cutmix_batch(torch.zeros(2, 3), y)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        cutmix_batch(x, y, alpha=0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(alpha=0), "for CutMix\nalpha\n  Input should be greater than 0"),
        (dict(alpha=-1.0), "for CutMix\nalpha\n  Input should be greater than 0"),
        (dict(interpolate_loss=1), "for CutMix\ninterpolate_loss\n  Input should be a valid boolean"),
        (dict(uniform_sampling="no"), "for CutMix\nuniform_sampling\n  Input should be a valid boolean"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        CutMix(**kwargs)


def test_pastes_on_before_forward_mixes_targets_by_area_and_restores_them():
    torch.manual_seed(0)
    cutmix = CutMix(alpha=1.0)
    model = tiny_model()
    inputs, targets = tiny_dataset(8).tensors
    state = State(model, "1ep", algorithms=[cutmix])
    state.batch = (inputs, targets)
    engine = Engine(state)
    assert not cutmix.match(Event.AFTER_DATALOADER, state)

    engine.run_event(Event.BEFORE_FORWARD)
    x1, y1, x2, y2 = cutmix.bbox
    expected = inputs.clone()
    expected[..., x1:x2, y1:y2] = inputs[cutmix.indices][..., x1:x2, y1:y2]
    assert torch.equal(state.batch[0], expected)
    assert cutmix.permuted_weight == (x2 - x1) * (y2 - y1) / 64

    state.outputs = model(state.batch)
    engine.run_event(Event.BEFORE_LOSS)
    one_hot, w = F.one_hot(targets, 4).float(), cutmix.permuted_weight
    torch.testing.assert_close(state.batch[1], (1 - w) * one_hot + w * one_hot[cutmix.indices])
    state.loss = model.loss(state.outputs, state.batch)
    engine.run_event(Event.AFTER_LOSS)
    assert state.batch[1] is targets


def test_interpolated_loss_weights_by_pasted_area():
    torch.manual_seed(0)
    cutmix = CutMix(interpolate_loss=True)
    model = tiny_model()
    inputs, targets = tiny_dataset(8).tensors
    state = State(model, "1ep", algorithms=[cutmix])
    state.batch = (inputs, targets)
    engine = Engine(state)
    engine.run_event(Event.BEFORE_FORWARD)
    state.outputs = model(state.batch)
    engine.run_event(Event.BEFORE_LOSS)
    assert state.batch[1] is targets  # interpolate_loss leaves the targets alone
    own = model.loss(state.outputs, state.batch)
    state.loss = own
    engine.run_event(Event.AFTER_LOSS)
    w = cutmix.permuted_weight
    torch.testing.assert_close(state.loss, (1 - w) * own + w * F.cross_entropy(state.outputs, targets[cutmix.indices]))
