import copy

import pytest
import torch
from helpers import InMemoryLogger, tiny_dataset, tiny_loader, tiny_model
from torch import nn

from raycomp import Event, State, Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.core import Engine
from raycomp.functional import select_using_loss, should_selective_backprop


def fixed_loss_model(losses):
    """A 'model' whose per-sample losses are ``losses``: outputs are the losses, the loss is identity."""

    def model(x):
        return losses.clone()

    def loss_fun(outputs, targets, reduction="none"):
        return outputs

    return model, loss_fun


@pytest.mark.parametrize(
    ("interrupt", "pattern"),
    [(0, [True] * 6), (2, [True, False] * 3), (3, [True, True, False] * 2), (1, [False] * 6)],
)
def test_interrupt_pattern(interrupt, pattern):
    assert [should_selective_backprop(0.6, i, interrupt=interrupt) for i in range(6)] == pattern


def test_interval_is_start_inclusive_end_exclusive():
    assert [should_selective_backprop(d, 0, 0.5, 0.9, 0) for d in (0.49, 0.5, 0.89, 0.9)] == [
        False,
        True,
        True,
        False,
    ]


def test_keeps_int_keep_n_examples_paired_with_their_targets():
    inputs = torch.arange(10.0).view(10, 1, 1, 1).expand(10, 1, 4, 4).contiguous()
    targets = torch.arange(10)
    model, loss_fun = fixed_loss_model(torch.rand(10))
    for keep, count in [(0.5, 5), (0.25, 2), (1.0, 10), (0.01, 1)]:
        kept_inputs, kept_targets = select_using_loss(inputs, targets, model, loss_fun, keep)
        assert len(kept_targets) == count
        assert torch.equal(kept_inputs[:, 0, 0, 0].long(), kept_targets)  # pairs stay together
        assert torch.equal(kept_targets, kept_targets.sort().values)  # batch order kept
    assert torch.equal(select_using_loss(inputs, targets, model, loss_fun, 1.0)[1], targets)


def test_selection_probabilities_match_a_hand_computation():
    """N=2, keep=0.5: weights are percentile**1 = (0.25, 0.75), so the harder example wins 3 times in 4."""
    model, loss_fun = fixed_loss_model(torch.tensor([2.0, 1.0]))  # example 0 has the higher loss
    torch.manual_seed(0)
    picks = [
        select_using_loss(torch.zeros(2, 3), torch.tensor([0, 1]), model, loss_fun, 0.5)[1].item() for _ in range(4000)
    ]
    assert picks.count(0) / len(picks) == pytest.approx(0.75, abs=0.03)


def test_high_loss_examples_are_favoured():
    losses = torch.arange(100.0)
    model, loss_fun = fixed_loss_model(losses)
    torch.manual_seed(0)
    _, kept = select_using_loss(torch.zeros(100, 2), torch.arange(100), model, loss_fun, 0.25)
    assert kept.float().mean() > 60  # uniform sampling would give ~49.5; top-k would give 87
    assert kept.float().mean() < 87


@pytest.mark.parametrize(
    ("shape", "scaled"),
    [((4, 3, 8), (4, 3, 4)), ((4, 3, 8, 8), (4, 3, 4, 4)), ((4, 1, 4, 8, 8), (4, 1, 2, 4, 4))],
)
def test_downsamples_3d_4d_5d_inputs_for_the_selection_pass_only(shape, scaled):
    seen = []

    def model(x):
        seen.append(tuple(x.shape))
        return torch.zeros(x.shape[0], 2)

    kept, _ = select_using_loss(
        torch.randn(shape), torch.zeros(4, dtype=torch.long), model, nn.functional.cross_entropy, 0.5, 0.5
    )
    assert seen == [scaled]
    assert tuple(kept.shape) == (2, *shape[1:])


def test_argument_errors():
    model, loss_fun = fixed_loss_model(torch.rand(4))
    x, y = torch.zeros(4, 3, 8, 8), torch.zeros(4)
    with pytest.raises(ValueError, match="scale_factor must be <= 1"):
        select_using_loss(x, y, model, loss_fun, 0.5, scale_factor=1.5)
    with pytest.raises(TypeError, match="must be callable"):
        select_using_loss(x, y, model, "cross_entropy", 0.5)
    with pytest.raises(TypeError, match="reduction"):
        select_using_loss(x, y, model, lambda outputs, targets: outputs, 0.5)
    with pytest.raises(ValueError, match="3-, 4- or 5-D"):
        select_using_loss(torch.zeros(4, 3), y, model, loss_fun, 0.5, scale_factor=0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(start=0.9, end=0.5), "start < end"),
        (dict(start=0.5, end=0.5), "start < end"),
        (dict(end=1.1), "for SelectiveBackprop\nend\n  Input should be less than or equal to 1"),
        (dict(start=-0.1), "start\n  Input should be greater than or equal to 0"),
        (dict(keep=0), "keep\n  Input should be greater than 0"),
        (dict(keep=1.5), "keep\n  Input should be less than or equal to 1"),
        (dict(scale_factor=1.5), "scale_factor\n  Input should be less than or equal to 1"),
        (dict(scale_factor=0), "scale_factor\n  Input should be greater than 0"),
        (dict(interrupt=-1), "interrupt\n  Input should be greater than or equal to 0"),
        (dict(interrupt=1.5), "interrupt\n  Input should be a valid integer"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SelectiveBackprop(**kwargs)


def test_selection_pass_leaves_batchnorm_and_dropout_alone():
    model = tiny_model()
    model.train()
    bn = model.module[1]
    before = {k: v.clone() for k, v in bn.state_dict().items()}
    inputs, targets = tiny_dataset(16).tensors
    with torch.no_grad():
        model.module(inputs)  # a train-mode selection pass, as Composer's: BN statistics move
    assert not torch.equal(bn.running_mean, before["running_mean"])
    bn.load_state_dict(before)

    dropout_modes = []
    model.module[5].register_forward_pre_hook(lambda module, args: dropout_modes.append(module.training))
    select_using_loss(inputs, targets, model.module, nn.functional.cross_entropy, 0.5, 0.5)
    for key, value in bn.state_dict().items():
        assert torch.equal(value, before[key]), key
    assert dropout_modes == [False]  # dropout ran in eval mode: no mask drawn
    assert all(m.training for m in model.modules())  # train mode given back


def scored_statistics(model, inputs):
    """The running statistics a copy of ``model`` ends with after one forward with only BatchNorm in train mode."""
    expected = copy.deepcopy(model)
    expected.eval()
    expected.module[1].train()
    with torch.no_grad():
        expected.module(inputs)
    return {k: v for k, v in expected.module[1].state_dict().items()}


def test_selection_pass_moves_batchnorm_statistics_from_the_full_batch_and_the_kept_step_does_not():
    model = tiny_model()
    inputs, targets = tiny_dataset(16).tensors
    state = State(model, "10ba", algorithms=[SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=1, interrupt=0)])
    state.batch = (inputs, targets)
    logger = InMemoryLogger()
    engine = Engine(state)
    engine.logger.destinations.append(logger)
    expected = scored_statistics(model, inputs)
    dropout_modes = []
    model.module[5].register_forward_pre_hook(lambda module, args: dropout_modes.append(module.training))
    engine.run_event(Event.INIT)
    engine.run_event(Event.AFTER_DATALOADER)
    assert state.batch[0].shape == (8, 3, 8, 8) and isinstance(state.batch, tuple)
    bn = model.module[1]
    for key, value in bn.state_dict().items():  # scored channels-last on the CPU: equal up to float rounding
        torch.testing.assert_close(value, expected[key], msg=key)
    assert dropout_modes == [False] and all(m.training for m in model.modules())  # no mask drawn; modes given back

    scored = {key: value.clone() for key, value in bn.state_dict().items()}
    model(state.batch)  # the training forward on the kept half: normalised by its own statistics, not folded in
    for key, value in bn.state_dict().items():
        assert torch.equal(value, scored[key]), key
    engine.run_event(Event.AFTER_TRAIN_BATCH)
    assert bn.track_running_stats and not state.algorithms[0].match(Event.AFTER_TRAIN_BATCH, state)
    sb = state.algorithms[0]
    assert (sb.last_num_samples, sb.last_num_kept) == (16, 8) and sb.last_selection_s > 0
    assert logger.latest("selective_backprop/fraction_kept") == 0.5
    assert engine.trace_summary.get("SelectiveBackprop", Event.AFTER_DATALOADER).count == 1


def test_with_downsampling_the_kept_step_moves_the_statistics_too():
    """Statistics of downsampled images are biased; the kept subset's full-size forward updates them as well."""
    model = tiny_model()
    inputs, targets = tiny_dataset(16).tensors
    state = State(
        model, "10ba", algorithms=[SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=0.5, interrupt=0)]
    )
    state.batch = (inputs, targets)
    engine = Engine(state)
    engine.run_event(Event.INIT)
    engine.run_event(Event.AFTER_DATALOADER)
    after_selection = model.module[1].running_mean.clone()
    assert not torch.equal(after_selection, torch.zeros_like(after_selection))
    assert not state.algorithms[0].match(Event.AFTER_TRAIN_BATCH, state)  # nothing frozen
    model(state.batch)
    assert not torch.equal(model.module[1].running_mean, after_selection)


def selection_engine(model, inputs, targets, scale_factor=1.0):
    """An Engine whose State holds ``(inputs, targets)`` and SB always on, after INIT."""
    sb = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=scale_factor, interrupt=0)
    state = State(model, "10ba", algorithms=[sb])
    state.batch = (inputs, targets)
    engine = Engine(state)
    engine.run_event(Event.INIT)
    return engine, state, sb


def test_on_the_cpu_the_selection_pass_scores_channels_last_and_the_kept_batch_keeps_its_layout():
    model = tiny_model()
    inputs, targets = tiny_dataset(16).tensors
    layouts = []
    model.module[0].register_forward_pre_hook(
        lambda module, args: layouts.append(args[0].is_contiguous(memory_format=torch.channels_last))
    )
    engine, state, sb = selection_engine(model, inputs, targets, scale_factor=0.5)
    engine.run_event(Event.AFTER_DATALOADER)
    engine.run_event(Event.AFTER_DATALOADER)
    assert layouts == [True, True] and sb._layout.channels_last
    assert state.batch[0].is_contiguous()  # the training step gets the loader's layout
    model(state.batch)
    assert layouts[-1] is False


class ViewsItsActivations(nn.Module):
    """Conv, BatchNorm, then ``.view``, which a channels-last activation cannot take."""

    def __init__(self) -> None:
        super().__init__()
        self.conv, self.bn, self.fc = nn.Conv2d(3, 4, 3, padding=1), nn.BatchNorm2d(4), nn.Linear(4 * 8 * 8, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.bn(self.conv(x))
        return self.fc(x.view(x.shape[0], -1))


def test_a_model_that_cannot_take_channels_last_is_scored_in_its_own_layout_with_one_statistics_update():
    from raycomp.models.base import ClassifierModel

    torch.manual_seed(0)
    model = ClassifierModel(ViewsItsActivations())
    inputs, targets = tiny_dataset(16).tensors
    expected = copy.deepcopy(model.module)
    with torch.no_grad():
        expected(inputs)  # one train-mode forward: one update of the running statistics
    engine, state, sb = selection_engine(model, inputs, targets, scale_factor=1.0)
    engine.run_event(Event.AFTER_DATALOADER)
    assert sb._layout.channels_last is False and state.batch[0].shape == (8, 3, 8, 8)
    for key, value in model.module.bn.state_dict().items():  # the failed try was undone: not two updates
        assert torch.equal(value, expected.bn.state_dict()[key]), key


def test_sb_keeps_no_batches_and_nothing_for_checkpoints():
    """The statistics are recomputed before evaluation by the Trainer, for every model (tests/loop/test_batchnorm.py):
    SB itself runs only where it selects, and has no state to checkpoint."""
    sb = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=0.5, interrupt=0)
    trainer = Trainer(
        tiny_model(),
        tiny_loader(n=64, batch_size=16),
        "2ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=[sb],
        seed=0,
    )
    trainer.fit()
    summary = trainer.state.trace_summary
    assert summary.get("SelectiveBackprop", Event.AFTER_DATALOADER).count == 8
    for event in (Event.EVAL_BEFORE_ALL, Event.FIT_END):
        assert summary.get("SelectiveBackprop", event) is None
    assert sb.state_dict() == {}


def test_in_the_trainer_selects_only_inside_its_interval():
    sb = SelectiveBackprop(start=0.5, end=1.0, keep=0.5, scale_factor=0.5, interrupt=2)
    sizes = []

    class Sizes(__import__("raycomp").Callback):
        def batch_start(self, state, logger):
            sizes.append(state.batch_num_samples)

    trainer = Trainer(
        tiny_model(), tiny_loader(n=64, batch_size=16), "2ep", algorithms=[sb], callbacks=[Sizes()], seed=0
    )
    trainer.fit()
    # epoch 0 (duration < 0.5): full batches; epoch 1: SB on batches 0 and 2 of the epoch (interrupt=2)
    assert sizes == [16, 16, 16, 16, 8, 16, 8, 16]
    assert trainer.state.timestamp.sample == 16 * 6 + 8 * 2


def test_the_window_opens_inside_an_epoch():
    """Elapsed duration moves per batch: 2 epochs of 4 batches, start=0.3 opens at batch 3 (3/8), not at 4."""
    sb = SelectiveBackprop(start=0.3, end=1.0, keep=0.5, scale_factor=0.5, interrupt=0)
    sizes = []

    class Sizes(__import__("raycomp").Callback):
        def batch_start(self, state, logger):
            sizes.append(state.batch_num_samples)

    Trainer(tiny_model(), tiny_loader(n=64, batch_size=16), "2ep", algorithms=[sb], callbacks=[Sizes()], seed=0).fit()
    assert sizes == [16, 16, 16, 8, 8, 8, 8, 8]


def test_token_ids_cannot_be_downsampled_and_the_error_says_what_to_set():
    from raycomp.algorithms.selective_backprop import downsample

    tokens = torch.randint(0, 256, (4, 16))
    assert downsample(tokens, 1) is tokens  # scale_factor 1: sequences are scored as they are
    with pytest.raises(ValueError, match="token ids cannot be downsampled: set selective_backprop's scale_factor to 1"):
        downsample(tokens, 0.5)
