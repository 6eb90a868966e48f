import pytest
import torch
from helpers import tiny_dataset, tiny_loader, tiny_model

from raycomp import Event, Trainer
from raycomp.algorithms import ChannelsLast
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.functional import apply_channels_last


def test_converts_4d_tensors_in_place_and_keeps_the_function():
    model = tiny_model()
    params = list(model.parameters())
    inputs = (tiny_dataset(8).tensors[0], None)
    model.eval()
    before = model(inputs)
    assert apply_channels_last(model) is model
    conv_weight = model.module[0].weight
    assert conv_weight.is_contiguous(memory_format=torch.channels_last) and not conv_weight.is_contiguous()
    assert all(p.is_contiguous() for p in model.parameters() if p.dim() != 4)  # only 4-D tensors change
    assert list(model.parameters()) == params  # same Parameters: optimizers stay valid
    torch.testing.assert_close(model(inputs), before)


def test_runs_on_init_only():
    algorithm = ChannelsLast()
    trainer = Trainer(tiny_model(), tiny_loader(), "1ba", algorithms=[algorithm], device="cpu", seed=0)
    assert [e for e in Event if algorithm.match(e, trainer.state)] == [Event.INIT]
    assert trainer.engine.trace_summary.get("ChannelsLast", Event.INIT).count == 1


def test_a_fit_keeps_the_layout_and_trains(tmp_path):
    model = tiny_model()
    trainer = Trainer(
        model,
        tiny_loader(),
        "1ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=[ChannelsLast()],
        device="cpu",
        save_folder=tmp_path,
        seed=0,
    )
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    assert model.module[0].weight.is_contiguous(memory_format=torch.channels_last)
    resumed = Trainer(
        tiny_model(1), tiny_loader(), "1ep", algorithms=[ChannelsLast()], load_path=tmp_path, device="cpu", seed=0
    )
    weight = resumed.state.model.module[0].weight
    assert weight.is_contiguous(memory_format=torch.channels_last) and torch.equal(weight, model.module[0].weight)


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  channels_last: {}\n")
    assert isinstance(build_algorithms(load_experiment(str(path)))[0], ChannelsLast)
    path.write_text("algorithms:\n  channels_last:\n    enabled: true\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    [problem] = info.value.problems
    assert problem.startswith(f"{path}:3: algorithms.channels_last.enabled: unknown argument of ChannelsLast")
