"""Algorithms together: pass order through the Engine's traces, FILO restores, warnings, real fits, configs."""

import math
import warnings

import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_dataset, tiny_loader, tiny_model

from raycomp import Callback, Event, State, Trainer
from raycomp.algorithms import CutMix, LabelSmoothing, MixUp, ProgressiveResizing, SelectiveBackprop
from raycomp.config import ConfigError, ExperimentConfig
from raycomp.config.recipe import build_algorithms
from raycomp.core import Algorithm, Engine
from raycomp.core.passes import default_passes, set_filo_order
from raycomp.functional import smooth_labels


def make_state(algorithms, n=16):
    model = tiny_model()
    inputs, targets = tiny_dataset(n).tensors
    state = State(model, "10ba", algorithms=algorithms)
    state.batch = [inputs, targets]
    return state, inputs, targets


def ran(traces):
    return [(t.name, t.order) for t in traces if t.run]


# ---- pass order on AFTER_DATALOADER ------------------------------------------------------------------------


def test_selective_backprop_selects_on_clean_inputs_and_mixup_mixes_what_it_kept():
    """MixUp mixes on BEFORE_FORWARD, as in Composer: SB's AFTER_DATALOADER ranking never sees mixed inputs."""
    sb, mixup = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=1, interrupt=0), MixUp(alpha=1.0)
    state, inputs, _ = make_state([mixup, sb])
    seen = []
    state.model.module.register_forward_pre_hook(lambda module, args: seen.append(args[0].clone()))
    engine = Engine(state)
    engine.run_event(Event.INIT)
    traces = engine.run_event(Event.AFTER_DATALOADER)
    assert ran(traces) == [("SelectiveBackprop", 0)]
    assert torch.equal(seen[0], inputs)  # the selection pass scored the loader's batch, unmixed
    kept_inputs = state.batch[0]
    engine.run_event(Event.BEFORE_FORWARD)
    assert len(mixup.indices) == 8
    torch.testing.assert_close(
        state.batch[0], (1 - mixup.mixing) * kept_inputs + mixup.mixing * kept_inputs[mixup.indices]
    )


@pytest.mark.parametrize("listed_first", ["sb", "pr"])
def test_selective_backprop_runs_before_progressive_resizing_on_after_dataloader(listed_first):
    sb = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=1, interrupt=0)
    pr = ProgressiveResizing(initial_scale=0.5, delay_fraction=0.5)
    state, _, _ = make_state([sb, pr] if listed_first == "sb" else [pr, sb])
    seen = []
    state.model.module.register_forward_pre_hook(lambda module, args: seen.append(tuple(args[0].shape)))
    engine = Engine(state)
    engine.run_event(Event.INIT)
    traces = engine.run_event(Event.AFTER_DATALOADER)
    assert ran(traces) == [("SelectiveBackprop", 0), ("ProgressiveResizing", 1)]
    assert seen == [(16, 3, 8, 8)]  # SB scored the full-size batch
    assert state.batch[0].shape == (8, 3, 4, 4) and state.batch[1].shape == (8,)  # kept, then resized


def test_fit_with_selective_backprop_and_progressive_resizing():
    """The forward sees SB's kept count at PR's size: 4x4 while PR holds, 8x8 once its ramp reaches full size."""
    shapes = []

    class ForwardShapes(Callback):
        def before_forward(self, state, logger):
            shapes.append(tuple(state.batch[0].shape))

    sb = SelectiveBackprop(start=0, end=1, keep=0.5, scale_factor=0.5, interrupt=0)
    pr = ProgressiveResizing(initial_scale=0.5, delay_fraction=0.5, finetune_fraction=0.2)
    trainer = Trainer(
        tiny_model(), tiny_loader(n=32, batch_size=16), "4ba", algorithms=[pr, sb], callbacks=[ForwardShapes()], seed=0
    )
    trainer.fit()
    # max_duration in batches, as one in epochs moves the elapsed fraction only at epoch ends.
    # Elapsed 0, .25, .5, .75: scales .5, .5, .5, .92 -> widths 4, 4, 4, 8 (pinned to multiples of 4)
    assert shapes == [(8, 3, 4, 4)] * 3 + [(8, 3, 8, 8)]
    assert sb.last_num_kept == 8
    assert trainer.engine.trace_summary.get("ProgressiveResizing", Event.AFTER_DATALOADER).count == 4
    assert math.isfinite(trainer.state.loss.item())


# ---- FILO: target changes unwind in reverse ----------------------------------------------------------------


class TargetSpy(Algorithm):
    """Records the targets it sees on BEFORE_LOSS and AFTER_LOSS, changing nothing."""

    def __init__(self) -> None:
        self.seen: dict[Event, torch.Tensor] = {}

    def match(self, event, state):
        return event in (Event.BEFORE_LOSS, Event.AFTER_LOSS)

    def apply(self, event, state, logger):
        self.seen[event] = state.batch[1]


def run_loss_events(algorithms, passes=None):
    torch.manual_seed(0)
    state, _, targets = make_state(algorithms, n=8)
    engine = Engine(state)
    if passes is not None:  # in place of the defaults (Engine(passes=...) would add to them)
        engine.algorithm_passes[:] = passes
    engine.run_event(Event.BEFORE_FORWARD)
    state.outputs = state.model(state.batch)
    engine.run_event(Event.BEFORE_LOSS)
    loss_targets = state.batch[1]
    state.loss = state.model.loss(state.outputs, state.batch)
    engine.run_event(Event.AFTER_LOSS)
    return state, targets, loss_targets


@pytest.mark.parametrize("order", ["ls_first", "mixup_first"])
def test_label_smoothing_and_mixup_restore_the_original_targets(order):
    """Smoothing is affine and mixing convex, so the loss sees the same targets in either order."""
    spy, ls, mixup = TargetSpy(), LabelSmoothing(0.1), MixUp(alpha=1.0)
    algorithms = [spy, ls, mixup] if order == "ls_first" else [spy, mixup, ls]
    state, targets, loss_targets = run_loss_events(algorithms)
    one_hot = F.one_hot(targets, 4).float()
    mixed = (1 - mixup.mixing) * one_hot + mixup.mixing * one_hot[mixup.indices]
    torch.testing.assert_close(loss_targets, smooth_labels(state.outputs, mixed, 0.1))
    assert state.batch[1] is targets
    # listed first, the spy runs first on BEFORE_LOSS and last on AFTER_LOSS: it sees the originals both times
    assert spy.seen[Event.BEFORE_LOSS] is targets and spy.seen[Event.AFTER_LOSS] is targets


def test_without_the_filo_pass_the_restores_unwind_in_the_wrong_order():
    passes = [p for p in default_passes() if p is not set_filo_order]
    state, targets, _ = run_loss_events([LabelSmoothing(0.1), MixUp(alpha=1.0)], passes=passes)
    # LabelSmoothing restored the originals, then MixUp put back the smoothed targets it had saved
    assert state.batch[1].is_floating_point() and state.batch[1] is not targets


# ---- loss interpolation warning ----------------------------------------------------------------------------


def test_mixup_and_cutmix_both_interpolating_the_loss_warn():
    state, _, _ = make_state([MixUp(interpolate_loss=True), CutMix(interpolate_loss=True)], n=8)
    engine = Engine(state)
    with pytest.warns(UserWarning, match="interpolate the loss.*MixUp, CutMix"):
        engine.run_event(Event.BEFORE_FORWARD)


@pytest.mark.parametrize(("mixup_interpolates", "cutmix_interpolates"), [(True, False), (False, True), (False, False)])
def test_one_interpolating_algorithm_does_not_warn(mixup_interpolates, cutmix_interpolates):
    algorithms = [MixUp(interpolate_loss=mixup_interpolates), CutMix(interpolate_loss=cutmix_interpolates)]
    state, _, _ = make_state(algorithms, n=8)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Engine(state).run_event(Event.BEFORE_FORWARD)


# ---- real fits ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("algorithm", "kwargs"),
    [
        (LabelSmoothing(0.1), {}),
        (MixUp(alpha=0.4), {}),
        (MixUp(alpha=0.4, interpolate_loss=True), {"grad_accum": 2}),
        (CutMix(alpha=1.0), {"grad_accum": 2}),
        (CutMix(interpolate_loss=True, uniform_sampling=True), {}),
        (ProgressiveResizing(delay_fraction=0.0, finetune_fraction=0.5), {}),
        (ProgressiveResizing(mode="crop", initial_scale=0.6), {}),
        (LabelSmoothing(0.1), {"precision": "amp_bf16"}),
    ],
    ids=lambda value: repr(value) if isinstance(value, Algorithm) else str(value),
)
def test_short_fit_has_a_finite_loss(algorithm, kwargs):
    targets_seen = []

    class BatchEnd(Callback):
        def batch_end(self, state, logger):
            targets_seen.append(state.batch[1])

    trainer = Trainer(
        tiny_model(),
        tiny_loader(n=32, batch_size=16),
        "2ep",
        eval_dataloader=tiny_loader(n=16, shuffle=False),
        algorithms=[algorithm],
        callbacks=[BatchEnd()],
        seed=0,
        **kwargs,
    )
    trainer.fit()
    assert math.isfinite(trainer.state.loss.item())
    assert math.isfinite(trainer.state.eval_metrics["eval/loss"])
    assert trainer.state.timestamp.batch == 4
    assert all(not t.is_floating_point() for t in targets_seen)  # class indices again after every batch


# ---- configs -----------------------------------------------------------------------------------------------

DEFAULTS = {
    "label_smoothing": LabelSmoothing,
    "mixup": MixUp,
    "cutmix": CutMix,
    "progressive_resizing": ProgressiveResizing,
}


@pytest.mark.parametrize("name", DEFAULTS)
def test_each_name_validates_and_builds(name):
    (algorithm,) = build_algorithms(ExperimentConfig.from_dict({"algorithms": {name: None}}))
    assert type(algorithm) is DEFAULTS[name]


def test_all_four_with_arguments_build_in_config_order():
    algorithms = {
        "progressive_resizing": {"mode": "crop", "initial_scale": 0.25},
        "cutmix": {"alpha": 0.5, "interpolate_loss": True},
        "mixup": {"alpha": 0.3, "interpolate_loss": True},
        "label_smoothing": {"smoothing": 0.2},
    }
    built = build_algorithms(ExperimentConfig.from_dict({"algorithms": algorithms}))
    assert [type(a) for a in built] == [ProgressiveResizing, CutMix, MixUp, LabelSmoothing]
    assert (built[0].mode, built[0].initial_scale, built[1].alpha, built[3].smoothing) == ("crop", 0.25, 0.5, 0.2)


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        (
            "label_smoothing",
            {"smoothing": 1.5},
            "algorithms.label_smoothing.smoothing: must be in [0, 1), got 1.5 (default: 0.1)",
        ),
        ("mixup", {"alpha": -1}, "algorithms.mixup.alpha: must be >= 0, got -1 (default: 0.2)"),
        (
            "mixup",
            {"interpolate_loss": "yes"},
            "algorithms.mixup.interpolate_loss: must be true or false, got 'yes' (default: false)",
        ),
        ("cutmix", {"alpha": 0}, "algorithms.cutmix.alpha: must be > 0, got 0 (default: 1.0)"),
        (
            "progressive_resizing",
            {"mode": "pad"},
            "algorithms.progressive_resizing.mode: must be 'resize' or 'crop', got 'pad' (default: 'resize')",
        ),
        (
            "progressive_resizing",
            {"size_increment": 0},
            "algorithms.progressive_resizing.size_increment: must be >= 1, got 0 (default: 4)",
        ),
        (
            "progressive_resizing",
            {"initial_scale": 0},
            "algorithms.progressive_resizing.initial_scale: must be in (0, 1], got 0 (default: 0.5)",
        ),
        (
            "progressive_resizing",
            {"delay_fraction": 0.6, "finetune_fraction": 0.5},
            "algorithms.progressive_resizing: ProgressiveResizing needs delay_fraction + finetune_fraction <= 1",
        ),
    ],
)
def test_bad_argument_is_reported_at_its_key(name, args, expected):
    with pytest.raises(ConfigError) as info:
        ExperimentConfig.from_dict({"algorithms": {name: args}})
    (problem,) = info.value.problems
    assert problem.startswith(f"<config>: {expected}"), problem
