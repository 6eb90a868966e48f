import copy

import pytest
import torch
from helpers import tiny_loader, tiny_model
from torch import nn

from raycomp import Callback, Event, Trainer
from raycomp.algorithms import EMA
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core import Evaluator
from raycomp.functional import compute_ema
from raycomp.loop.checkpoint import load_checkpoint


def filled(module: nn.Module, value: float) -> nn.Module:
    with torch.no_grad():
        for tensor in [*module.parameters(), *module.buffers()]:
            tensor.fill_(value)
    return module


def test_compute_ema_of_known_weights():
    model = filled(nn.Sequential(nn.Linear(2, 1), nn.BatchNorm1d(1)), 1.0)
    ema_model = filled(copy.deepcopy(model), 0.0)
    model[1].num_batches_tracked.fill_(7)
    compute_ema(model, ema_model, smoothing=0.75)
    assert all(torch.equal(p, torch.full_like(p, 0.25)) for p in ema_model.parameters())
    assert torch.equal(ema_model[1].running_mean, torch.tensor([0.25]))  # float buffers are averaged
    assert ema_model[1].num_batches_tracked.item() == 7  # the batch counter is copied
    compute_ema(model, ema_model, smoothing=0.75)
    assert torch.equal(ema_model[0].weight, torch.full((1, 2), 1 - 0.75**2))
    assert all(torch.equal(p, torch.ones_like(p)) for p in model.parameters())  # the model is left alone


def test_compute_ema_argument_errors():
    model = nn.Linear(2, 1)
    with pytest.raises(ValueError, match=r"smoothing must be a number in \[0, 1\]"):
        compute_ema(model, copy.deepcopy(model), smoothing=1.5)
    with pytest.raises(ValueError, match="model and ema_model differ"):
        compute_ema(model, nn.Linear(2, 1, bias=False))


@pytest.mark.parametrize(
    ("kwargs", "smoothing", "interval"),
    [
        (dict(), 2**-0.001, "1ba"),
        (dict(half_life="10ba", update_interval="2ba"), 2**-0.2, "2ba"),
        (dict(half_life="2ep"), 2**-0.5, "1ep"),
        (dict(half_life=None, smoothing=0.9), 0.9, "1ba"),
        (dict(half_life=None, smoothing=0.9, update_interval="1ep"), 0.9, "1ep"),
        (dict(half_life="0.1dur"), None, "1ba"),  # a share of the run: its smoothing is known on FIT_START
        (dict(half_life="0.1dur", update_interval="2ba"), None, "2ba"),
    ],
)
def test_smoothing_and_update_interval(kwargs, smoothing, interval):
    ema = EMA(**kwargs)
    assert ema.smoothing == (smoothing if smoothing is None else pytest.approx(smoothing, rel=1e-12))
    assert str(ema.update_interval) == interval
    assert ema.update_event is (Event.BATCH_END if interval.endswith("ba") else Event.EPOCH_END)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(half_life=None), "EMA needs half_life or smoothing"),
        (dict(smoothing=0.9), "not both: to use smoothing, set half_life to None"),
        (dict(half_life="100sp"), "half_life\n  Value error, must be a time string in dur, ba, ep"),
        (dict(half_life="soon"), "half_life\n  Value error, must be a time string in dur, ba, ep"),
        (dict(half_life="1.5dur"), "half_life\n  Value error, in 'dur' must be at most 1"),
        (dict(half_life="0dur"), "half_life\n  Value error, must be above zero"),
        (dict(half_life="0.1dur", update_interval="1ep"), "half_life in dur .* give update_interval in ba"),
        (dict(half_life="0ba"), "half_life\n  Value error, must be above zero"),
        (dict(half_life=None, smoothing=1.0), "smoothing\n  Input should be less than 1"),
        (dict(half_life=None, smoothing="0.9"), "smoothing\n  Input should be a valid number"),
        (dict(ema_start="10sp"), "ema_start\n  Value error, must be a time string in dur, ba, ep"),
        (dict(ema_start="1.5dur"), "ema_start\n  Value error, in 'dur' must be at most 1"),
        (dict(update_interval="0ba"), "update_interval\n  Value error, must be above zero"),
        (dict(update_interval="1ep"), "update_interval .* and half_life .* must have the same unit"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        EMA(**kwargs)


class Watch(Callback):
    """Records the model's weights after each batch (training weights) and at each eval start and end."""

    def __init__(self):
        self.batches, self.eval_starts, self.eval_ends = [], [], []

    @staticmethod
    def weights(state):
        return {k: v.clone() for k, v in state.model.state_dict().items()}

    def batch_end(self, state, logger):
        self.batches.append(self.weights(state))

    def eval_start(self, state, logger):
        self.eval_starts.append(self.weights(state))

    def eval_end(self, state, logger):
        self.eval_ends.append(self.weights(state))


def expected_average(batches, smoothing, start=0, every=1):
    """The average a hand-run EMA gives: a copy of the weights at batch ``start``, then updated every ``every``."""
    average = None
    for index, weights in enumerate(batches[start:], start + 1):
        if average is None:
            average = {k: v.clone() for k, v in weights.items()}
        if index % every == 0:
            for key, value in average.items():
                if value.is_floating_point():
                    value.mul_(smoothing).add_(weights[key], alpha=1 - smoothing)
                else:
                    value.copy_(weights[key])
    return average


def assert_weights_equal(actual, expected):
    assert actual.keys() == expected.keys()
    for key in actual:
        torch.testing.assert_close(actual[key], expected[key], rtol=0, atol=0, msg=key)


def fit(ema, duration="6ba", eval_interval="3ba", evaluators=1):
    watch = Watch()
    eval_loaders = [Evaluator(f"eval{i}", tiny_loader(n=16)) for i in range(evaluators)]
    trainer = Trainer(
        tiny_model(),
        tiny_loader(n=64, batch_size=16),
        duration,
        eval_dataloader=eval_loaders,
        eval_interval=eval_interval,
        algorithms=[ema],
        callbacks=[watch],
        device="cpu",
        seed=0,
    )
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    return trainer, watch


def test_in_the_trainer_evaluation_and_the_end_of_fit_use_the_average():
    ema = EMA(half_life=None, smoothing=0.5)
    trainer, watch = fit(ema, evaluators=2)
    assert len(watch.batches) == 6 and len(watch.eval_starts) == len(watch.eval_ends) == 4  # 2 evals x 2 loaders
    for evaluation, batch in ((0, 2), (1, 2), (2, 5), (3, 5)):
        assert_weights_equal(watch.eval_starts[evaluation], expected_average(watch.batches[: batch + 1], 0.5))
        assert_weights_equal(watch.eval_ends[evaluation], watch.batches[batch])  # training weights back
    final_average = expected_average(watch.batches, 0.5)
    assert_weights_equal(trainer.state.model.state_dict(), final_average)  # swapped in at FIT_END
    assert_weights_equal(ema.ema_model.state_dict(), final_average)
    assert ema.ema_weights_active and not any(p.requires_grad for p in ema.ema_model.parameters())
    runs = {event: trainer.engine.trace_summary.get("EMA", event) for event in Event}
    assert {event: stats.count for event, stats in runs.items() if stats} == {
        Event.FIT_START: 1,
        Event.BATCH_END: 6,
        Event.EVAL_START: 4,
        Event.EVAL_END: 4,
        Event.FIT_END: 1,
    }


def test_ema_start_and_update_interval():
    ema = EMA(half_life="4ba", ema_start="2ba", update_interval="2ba")
    trainer, watch = fit(ema, duration="7ba", eval_interval="1ba")
    assert_weights_equal(watch.eval_starts[0], watch.batches[0])  # not started yet: no swap
    assert_weights_equal(watch.eval_starts[1], watch.batches[1])  # started at batch 2 as a copy
    expected = expected_average(watch.batches, 2**-0.5, start=1, every=2)  # updated on batches 2, 4 and 6
    assert_weights_equal(ema.ema_model.state_dict(), expected)
    assert_weights_equal(trainer.state.model.state_dict(), expected)


@pytest.mark.parametrize(("duration", "run_batches"), [("8ba", 8), ("2ep", 8)])
def test_a_half_life_in_dur_is_that_share_of_the_run_s_batches(duration, run_batches):
    """0.25 of an 8-batch run (in batches, or 2 epochs of 4) is a half-life of 2 batches, whatever the run's unit."""
    ema = EMA(half_life="0.25dur")
    _, watch = fit(ema, duration=duration, eval_interval="4ba")
    assert run_batches == len(watch.batches) and ema.smoothing == pytest.approx(2**-0.5, rel=1e-12)
    assert_weights_equal(ema.ema_model.state_dict(), expected_average(watch.batches, 2**-0.5))


def make_trainer(tmp_path, seed=0, duration="4ep", **kwargs):
    kwargs.setdefault("save_folder", tmp_path / "ckpt")
    model = tiny_model(seed=seed)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return Trainer(
        model,
        tiny_loader(n=64, batch_size=16),
        duration,
        eval_dataloader=tiny_loader(n=16),
        algorithms=[EMA(half_life="3ba")],
        optimizers=optimizer,
        device="cpu",
        seed=seed,
        **kwargs,
    )


def final_state(trainer):
    [ema] = trainer.state.algorithms
    return trainer.state.model.state_dict(), ema.ema_model.state_dict(), ema._training_weights


@pytest.mark.parametrize(("save_interval", "resume_from"), [("3ba", "ep2-ba9.pt"), ("1ep", "ep2-ba8.pt")])
def test_a_resumed_fit_reproduces_the_uninterrupted_one(tmp_path, save_interval, resume_from):
    full = make_trainer(tmp_path, save_interval=save_interval)
    full.fit()
    payload = load_checkpoint(tmp_path / "ckpt" / resume_from)
    [entry] = payload["state"]["algorithms"]
    assert entry["state"]["ema_started"] and not entry["state"]["ema_weights_active"]
    assert entry["state"]["ema_model"].keys() == payload["state"]["model"].keys()  # the averages are saved
    resumed = make_trainer(tmp_path, seed=999, load_path=tmp_path / "ckpt" / resume_from, save_folder=None)
    resumed.fit()
    for actual, expected in zip(final_state(resumed), final_state(full), strict=True):
        assert_weights_equal(actual, expected)
    assert resumed.state.eval_metrics == full.state.eval_metrics


def test_resuming_from_the_final_checkpoint_trains_the_training_weights(tmp_path):
    """The checkpoint written at FIT_END holds the averages as the model; the training weights are in EMA's state."""
    full = make_trainer(tmp_path / "full", save_folder=None)
    full.fit()
    short = make_trainer(tmp_path, duration="2ep", save_interval="3ba")
    short.fit()
    payload = load_checkpoint(tmp_path / "ckpt" / "ep2-ba8.pt")
    [entry] = payload["state"]["algorithms"]
    assert entry["state"]["ema_weights_active"]
    assert_weights_equal(payload["state"]["model"], entry["state"]["ema_model"])
    resumed = make_trainer(tmp_path, seed=999, load_path=tmp_path / "ckpt" / "ep2-ba8.pt", save_folder=None)
    resumed.fit()
    for actual, expected in zip(final_state(resumed), final_state(full), strict=True):
        assert_weights_equal(actual, expected)


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  ema:\n    half_life: 50ba\n    ema_start: 0.25dur\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, EMA) and str(algorithm.half_life) == "50ba" and str(algorithm.ema_start) == "0.25dur"
    path.write_text("algorithms:\n  ema:\n    half_life: 50sp\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    assert info.value.problems == [
        f"{path}:3: algorithms.ema.half_life: must be a time string in dur, ba, ep (e.g. '0.5dur', '1000ba', '1ep'), "
        "got '50sp' (default: '1000ba')"
    ]
