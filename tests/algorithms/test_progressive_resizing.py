import pytest
import torch
from helpers import InMemoryLogger, tiny_model

from raycomp import Event, State
from raycomp.algorithms import ProgressiveResizing
from raycomp.core import Engine
from raycomp.functional import resize_batch


def test_resize_is_nearest_neighbour_to_the_floor_of_the_scaled_size():
    x = torch.arange(16.0).view(1, 1, 4, 4)
    y = torch.tensor([3])
    resized, target = resize_batch(x, y, 0.5)
    assert torch.equal(resized, torch.tensor([[[[0.0, 2.0], [8.0, 10.0]]]]))
    assert target is y
    assert resize_batch(torch.zeros(2, 3, 32, 24), y, 0.375)[0].shape == (2, 3, 12, 9)
    assert resize_batch(torch.zeros(2, 3, 4, 4), y, 0.1)[0].shape == (2, 3, 1, 1)  # never 0
    assert resize_batch(x, y, 1.0)[0] is x


def test_crop_is_a_window_of_the_original_shared_by_the_batch():
    torch.manual_seed(0)
    x = torch.arange(2 * 64.0).view(2, 1, 8, 8)
    starts = set()
    for _ in range(100):
        cropped, _ = resize_batch(x, torch.zeros(2), 0.5, mode="crop")
        assert cropped.shape == (2, 1, 4, 4)
        top, left = divmod(int(cropped[0, 0, 0, 0]), 8)
        assert torch.equal(cropped, x[:, :, top : top + 4, left : left + 4])
        starts.add((top, left))
    assert {(0, 0), (4, 4)} <= starts  # the first and the last offsets both occur


@pytest.mark.parametrize("mode", ["resize", "crop"])
def test_dense_targets_are_resized_with_the_inputs(mode):
    torch.manual_seed(0)
    x = torch.arange(64.0).view(1, 1, 8, 8)
    index_target = torch.arange(64).view(1, 8, 8)
    new_x, new_y = resize_batch(x, index_target, 0.5, mode=mode, resize_targets=True)
    assert new_y.shape == (1, 4, 4) and new_y.dtype == torch.long
    assert torch.equal(new_y.float(), new_x[:, 0])  # same pixels picked from both
    prob_target = torch.rand(1, 3, 8, 8)
    assert resize_batch(x, prob_target, 0.5, mode=mode, resize_targets=True)[1].shape == (1, 3, 4, 4)


def test_argument_errors():
    x, y = torch.zeros(2, 3, 8, 8), torch.zeros(2, dtype=torch.long)
    with pytest.raises(ValueError, match="mode must be 'resize' or 'crop'"):
        resize_batch(x, y, 0.5, mode="pad")
    with pytest.raises(ValueError, match="resize_targets needs dense targets"):
        resize_batch(x, y, 0.5, resize_targets=True)
    with pytest.raises(ValueError, match="scale_factor must be > 0"):
        resize_batch(x, y, 0.0)
    with pytest.raises(ValueError, match="inputs of shape"):
        resize_batch(torch.zeros(2, 3), y, 0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(mode="bilinear"), "for ProgressiveResizing\nmode\n  Input should be 'resize' or 'crop'"),
        (dict(initial_scale=0), "initial_scale\n  Input should be greater than 0"),
        (dict(initial_scale=1.5), "initial_scale\n  Input should be less than or equal to 1"),
        (dict(finetune_fraction=-0.1), "finetune_fraction\n  Input should be greater than or equal to 0"),
        (dict(delay_fraction=1.1), "delay_fraction\n  Input should be less than or equal to 1"),
        (dict(delay_fraction=0.6, finetune_fraction=0.5), r"ProgressiveResizing needs delay_fraction \+ finetune"),
        (dict(size_increment=0), "size_increment\n  Input should be greater than or equal to 1"),
        (dict(size_increment=2.0), "size_increment\n  Input should be a valid integer"),
        (dict(resize_targets="yes"), "resize_targets\n  Input should be a valid boolean"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ProgressiveResizing(**kwargs)


def test_scale_schedule_holds_ramps_then_finetunes_at_full_size():
    pr = ProgressiveResizing(initial_scale=0.5, delay_fraction=0.2, finetune_fraction=0.4)
    assert [pr.scale_at(t) for t in (0.0, 0.19, 0.2, 0.4, 0.6, 0.9)] == pytest.approx([0.5, 0.5, 0.5, 0.75, 1, 1])
    jump = ProgressiveResizing(initial_scale=0.5, delay_fraction=0.5, finetune_fraction=0.5)  # no ramp at all
    assert [jump.scale_at(t) for t in (0.49, 0.5, 1.0)] == [0.5, 1.0, 1.0]


def run_after_dataloader(pr, batch_index, width=32, height=32):
    state = State(tiny_model(), "10ba", algorithms=[pr])
    for _ in range(batch_index):  # elapsed duration: batch_index / 10
        state.timestamp = state.timestamp.to_next_batch(samples=4)
    state.batch = [torch.zeros(4, 3, height, width), torch.zeros(4, dtype=torch.long)]
    engine = Engine(state)
    logger = InMemoryLogger()
    engine.logger.destinations.append(logger)
    engine.run_event(Event.AFTER_DATALOADER)
    return state, logger


def test_resizes_on_after_dataloader_with_widths_pinned_to_size_increment():
    pr = ProgressiveResizing(initial_scale=0.3, delay_fraction=0.5, finetune_fraction=0.2, size_increment=4)
    assert not pr.match(Event.BEFORE_FORWARD, None) and pr.match(Event.AFTER_DATALOADER, None)
    state, logger = run_after_dataloader(pr, batch_index=0, width=32, height=24)
    # 32 * 0.3 = 9.6 -> 8 (a multiple of 4): factor 0.25 for both sides
    assert state.batch[0].shape == (4, 3, 6, 8) and isinstance(state.batch, list)
    assert logger.latest("progressive_resizing/width") == 8
    assert logger.latest("progressive_resizing/scale_factor") == pytest.approx(0.3)
    state, _ = run_after_dataloader(pr, batch_index=6)  # elapsed 0.6: a third of the ramp, scale 0.5333
    assert state.batch[0].shape == (4, 3, 16, 16)  # 32 * 0.5333 = 17.1 -> 16
    state, _ = run_after_dataloader(pr, batch_index=8)  # finetuning at full size
    assert state.batch[0].shape == (4, 3, 32, 32)


def test_small_images_never_shrink_below_one_size_increment():
    pr = ProgressiveResizing(initial_scale=0.1, size_increment=4)
    state, _ = run_after_dataloader(pr, batch_index=0, width=8, height=8)
    assert state.batch[0].shape == (4, 3, 4, 4)
