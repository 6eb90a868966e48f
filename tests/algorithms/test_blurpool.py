import textwrap

import pytest
import torch
import torch.nn.functional as F
from helpers import tiny_loader
from torch import nn

from raycomp import Event, Trainer
from raycomp.algorithms import BlurPool
from raycomp.algorithms.blurpool_layers import BlurConv2d, BlurMaxPool2d
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.functional import apply_blurpool, blur_2d, blurmax_pool2d
from raycomp.loop.checkpoint import CheckpointError
from raycomp.models.base import ClassifierModel

BINOMIAL = torch.tensor([[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]) / 16


def strided_net(seed: int = 0) -> nn.Sequential:
    """Stem (3 input channels: never blurred), a strided 16-channel conv, a strided 8-channel conv, a max-pool."""
    torch.manual_seed(seed)
    return nn.Sequential(
        nn.Conv2d(3, 16, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(16, 16, 3, stride=2, padding=1),
        nn.Conv2d(16, 8, 1),
        nn.Conv2d(8, 16, 3, stride=2, padding=1),
        nn.MaxPool2d(2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 4),
    )


# ---- the functions -------------------------------------------------------------------------------------


def test_blur_2d_of_an_impulse_is_the_binomial_filter():
    impulse = torch.zeros(1, 1, 5, 5)
    impulse[0, 0, 2, 2] = 1
    expected = torch.zeros(5, 5)
    expected[1:4, 1:4] = BINOMIAL
    assert torch.equal(blur_2d(impulse)[0, 0], expected)


def test_blur_2d_zero_pads_each_channel_and_strides():
    ones = torch.ones(1, 2, 3, 3)
    ones[0, 1] *= 2  # channels are filtered apart
    corner, edge = 9 / 16, 12 / 16
    expected = torch.tensor([[corner, edge, corner], [edge, 1.0, edge], [corner, edge, corner]])
    out = blur_2d(ones)
    assert torch.equal(out[0, 0], expected) and torch.equal(out[0, 1], 2 * expected)
    assert torch.equal(blur_2d(ones, stride=2)[0, 0], expected[::2, ::2])


def test_blurmax_pool2d_by_hand():
    x = torch.arange(16.0).view(1, 1, 4, 4)
    # 2x2 maxes at stride 1: [[5, 6, 7], [9, 10, 11], [13, 14, 15]]; blurred (zero padding) at stride 2:
    # (0,0): (4*5 + 2*6 + 2*9 + 10) / 16 = 3.75 ... (2,2): (4*15 + 2*14 + 2*11 + 10) / 16 = 7.5
    assert torch.equal(blurmax_pool2d(x, kernel_size=2, stride=2)[0, 0], torch.tensor([[3.75, 4.5], [6.75, 7.5]]))


@pytest.mark.parametrize("blur_first", [True, False])
def test_blur_conv_computes_conv_of_blur_or_blur_of_conv(blur_first):
    torch.manual_seed(0)
    conv = nn.Conv2d(16, 4, 3, stride=2, padding=1)
    weight, bias = conv.weight.detach().clone(), conv.bias.detach().clone()
    x = torch.randn(2, 16, 8, 8)
    reference = conv(x)
    blurconv = BlurConv2d.from_conv2d(conv, blur_first=blur_first)
    filters = BINOMIAL.expand(16 if blur_first else 4, 1, 3, 3)
    if blur_first:
        expected = F.conv2d(F.conv2d(x, filters, padding=1, groups=16), weight, bias, stride=2, padding=1)
    else:
        expected = F.conv2d(F.conv2d(x, weight, bias, padding=1), filters, stride=2, padding=1, groups=4)
    out = blurconv(x)
    assert out.shape == reference.shape == (2, 4, 4, 4)
    torch.testing.assert_close(out, expected)
    assert blurconv.conv is conv  # wrapped, not copied


def test_replaces_strided_convs_with_enough_channels_and_maxpools():
    model = apply_blurpool(strided_net())
    kinds = [type(m).__name__ for m in model]
    assert kinds[:6] == ["Conv2d", "ReLU", "BlurConv2d", "Conv2d", "Conv2d", "BlurMaxPool2d"]  # 8 channels < 16
    model = apply_blurpool(strided_net(), min_channels=8)
    assert isinstance(model[4], BlurConv2d)
    model = apply_blurpool(strided_net(), replace_convs=False)
    assert isinstance(model[2], nn.Conv2d) and isinstance(model[5], BlurMaxPool2d)
    model = apply_blurpool(strided_net(), replace_maxpools=False)
    assert isinstance(model[2], BlurConv2d) and type(model[5]) is nn.MaxPool2d


def test_optimizers_built_before_the_surgery_still_train_the_model():
    model = strided_net()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    before = [id(p) for p in model.parameters()]
    apply_blurpool(model, optimizers=optimizer)
    assert [id(p) for p in model.parameters()] == before
    assert {id(p) for p in optimizer.param_groups[0]["params"]} == set(before)
    weight = model[2].conv.weight.detach().clone()
    model(torch.randn(2, 3, 8, 8)).sum().backward()
    optimizer.step()
    assert not torch.equal(model[2].conv.weight, weight)


def test_applying_twice_changes_nothing():
    model = apply_blurpool(strided_net(), min_channels=8)
    structure, keys = repr(model), list(model.state_dict())
    x = torch.randn(2, 3, 8, 8)
    out = model(x)
    apply_blurpool(model, min_channels=8)
    assert repr(model) == structure and list(model.state_dict()) == keys
    assert sum(isinstance(m, BlurConv2d) for m in model.modules()) == 2
    assert torch.equal(model(x), out)  # no second blur of the strided conv inside a BlurConv2d


def test_a_module_shared_by_two_parents_gets_one_replacement():
    conv = nn.Conv2d(16, 16, 3, stride=2, padding=1)
    model = nn.Sequential(nn.Sequential(conv), nn.Sequential(conv))
    apply_blurpool(model, blur_first=False)
    assert model[0][0] is model[1][0] and model[0][0].conv.stride == (1, 1)
    assert model[0][0].blur_stride == (2, 2)


def test_warns_when_nothing_changes():
    with pytest.warns(UserWarning, match="BlurPool changed no layer"):
        apply_blurpool(nn.Sequential(nn.Conv2d(3, 8, 3, stride=2)))


# ---- the algorithm -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(min_channels=0), "min_channels\n  Input should be greater than or equal to 1"),
        (dict(min_channels=2.5), "min_channels\n  Input should be a valid integer"),
        (dict(replace_convs="yes"), "replace_convs\n  Input should be a valid boolean"),
        (dict(blur_first=1), "blur_first\n  Input should be a valid boolean"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        BlurPool(**kwargs)


def test_runs_on_init_only_and_is_required_on_load():
    blurpool = BlurPool()
    assert BlurPool.required_on_load()
    model = ClassifierModel(strided_net())
    trainer = Trainer(model, tiny_loader(), "1ba", algorithms=[blurpool], device="cpu", seed=0)
    assert isinstance(model.module[2], BlurConv2d)
    assert trainer.engine.trace_summary.get("BlurPool", Event.INIT).count == 1
    assert all(not blurpool.match(event, trainer.state) for event in Event if event is not Event.INIT)


def make_trainer(tmp_path, algorithms, seed=0, **kwargs):
    model = ClassifierModel(strided_net(seed))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)  # built before the surgery
    kwargs.setdefault("save_folder", tmp_path / "ckpt")
    return Trainer(
        model,
        tiny_loader(n=32, batch_size=16),
        "2ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=algorithms,
        optimizers=optimizer,
        device="cpu",
        seed=seed,
        **kwargs,
    )


def weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def test_a_fit_with_blurpool_trains_the_blurred_model(tmp_path):
    trainer = make_trainer(tmp_path, [BlurPool()], save_folder=None)
    before = trainer.state.model.module[2].conv.weight.detach().clone()
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    model, (optimizer,) = trainer.state.model, trainer.state.optimizers
    assert {id(p) for p in optimizer.param_groups[0]["params"]} == {id(p) for p in model.parameters()}
    assert not torch.equal(model.module[2].conv.weight, before)


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("trained")


@pytest.fixture(scope="module")
def trained(trained_folder):
    """One fit for the module: the loading tests below only read its checkpoint and its weights."""
    trainer = make_trainer(trained_folder, [BlurPool(min_channels=8)])
    trainer.fit()
    return trainer


def test_loading_without_blurpool_is_refused_by_name(trained_folder, trained):
    with pytest.raises(CheckpointError, match=r"blurpool\.BlurPool.*required_on_load"):
        make_trainer(trained_folder, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None)


def test_loading_without_blurpool_recreates_it_when_asked(trained_folder, trained):
    loaded = make_trainer(
        trained_folder,
        [],
        seed=1,
        load_path=trained_folder / "ckpt",
        save_folder=None,
        load_recreate_required_algorithms=True,
    )
    [recreated] = loaded.state.algorithms
    assert isinstance(recreated, BlurPool) and recreated.min_channels == 8
    assert isinstance(loaded.state.model.module[4], BlurConv2d)  # the surgery was redone with the saved arguments
    expected = weights(trained.state.model)
    assert all(torch.equal(v, expected[k]) for k, v in weights(loaded.state.model).items())


def test_loading_with_blurpool_gives_identical_weights(trained_folder, trained):
    loaded = make_trainer(
        trained_folder, [BlurPool(min_channels=8)], seed=1, load_path=trained_folder / "ckpt", save_folder=None
    )
    expected = weights(trained.state.model)
    assert weights(loaded.state.model).keys() == expected.keys()
    assert all(torch.equal(v, expected[k]) for k, v in weights(loaded.state.model).items())


# ---- the YAML name -------------------------------------------------------------------------------------


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  blurpool:\n    min_channels: 8\n    blur_first: false\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, BlurPool) and (algorithm.min_channels, algorithm.blur_first) == (8, False)
    path.write_text(textwrap.dedent("algorithms:\n  blurpool:\n    min_channels: 0\n"))
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    assert info.value.problems == [f"{path}:3: algorithms.blurpool.min_channels: must be >= 1, got 0 (default: 16)"]
