"""GatedLinearUnits: the GEGLU computation, a comparable parameter count, training, checkpoints, HF GPT-2."""

import pytest
import torch
from lm_helpers import LANGUAGE_MODEL_YAML, lm_trainer, same_weights, tiny_lm, token_loader
from torch import nn
from torch.nn import functional as F

from raycomp.algorithms import GatedLinearUnits
from raycomp.algorithms.glu import GatedProjection, gated_width
from raycomp.config import load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.functional import apply_gated_linear_units
from raycomp.loop.checkpoint import CheckpointError
from raycomp.models import LanguageModel
from raycomp.models.gpt import GPT, GPTConfig


def count(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_gated_projection_is_activation_of_one_half_times_the_other():
    torch.manual_seed(0)
    layer = GatedProjection(6, 5, "gelu")
    x = torch.randn(3, 6)
    w, v = layer.fc.weight[:5], layer.fc.weight[5:]
    b, c = layer.fc.bias[:5], layer.fc.bias[5:]
    torch.testing.assert_close(layer(x), F.gelu(x @ w.T + b) * (x @ v.T + c))
    torch.testing.assert_close(GatedProjection(6, 5, "silu")(x).shape, torch.Size([3, 5]))


def test_gated_width_is_two_thirds_rounded():
    assert gated_width(512) == 344  # 341.3 -> a multiple of 8
    assert gated_width(512, multiple_of=1) == 341
    assert gated_width(12, multiple_of=8) == 8  # never below one multiple


@pytest.mark.parametrize(("d_model", "n_layers"), [(32, 2), (128, 4), (256, 6)])
def test_parameter_count_stays_within_two_percent(d_model, n_layers):
    model = GPT(GPTConfig(d_model=d_model, n_layers=n_layers, n_heads=4))
    before = count(model)
    assert apply_gated_linear_units(model) == n_layers
    assert abs(count(model) / before - 1) < 0.02


def test_surgery_structure_and_optimizer_update():
    model = tiny_lm()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    old = {id(p) for p in model.parameters()}
    apply_gated_linear_units(model, optimizers=optimizer)
    mlp = model.module.blocks[0].mlp
    assert isinstance(mlp.fc, GatedProjection) and mlp.fc.fc.weight.shape == (2 * 88, 32)  # 2/3 of 128 -> 88
    assert isinstance(mlp.act, nn.Identity) and mlp.proj.weight.shape == (32, 88)
    held = {id(p) for p in optimizer.param_groups[0]["params"]}
    assert held == {id(p) for p in model.parameters()} and held != old
    structure = repr(model)
    assert apply_gated_linear_units(model) == 0 and repr(model) == structure  # applying twice changes nothing


def test_new_layers_keep_the_replaced_layers_scale():
    model = tiny_lm()
    proj_std = float(model.module.blocks[0].mlp.proj.weight.detach().std())
    apply_gated_linear_units(model)
    new_std = float(model.module.blocks[0].mlp.proj.weight.detach().std())
    assert new_std == pytest.approx(proj_std, rel=0.15) and not model.module.blocks[0].mlp.proj.bias.any()


@pytest.mark.measured
def test_a_gated_model_trains():
    trainer = lm_trainer(None, [GatedLinearUnits()], max_duration="30ba")
    first = trainer.evaluate()["eval/loss"]
    trainer.fit()
    # The drop was 1.60-1.65 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29; sd 0.017, kernels 1e-6):
    # the bound 1.0 is 36 sd below seed 0's 1.62.
    assert trainer.evaluate()["eval/loss"] < first - 1.0  # the counting pattern is learnt
    assert isinstance(trainer.state.model.module.blocks[1].mlp.fc, GatedProjection)


def test_warns_when_nothing_changes():
    with pytest.warns(UserWarning, match="GatedLinearUnits changed no layer"):
        lm_trainer(None, [GatedLinearUnits()], model=LanguageModel(nn.Embedding(256, 256)), max_duration="1ba")


# ---- checkpoints ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("trained")


@pytest.fixture(scope="module")
def trained(trained_folder):
    """One fit for the module: the loading tests below only read its checkpoint and its weights."""
    trainer = lm_trainer(trained_folder, [GatedLinearUnits(activation="silu", multiple_of=4)])
    trainer.fit()
    return trainer


def test_loading_without_glu_is_refused_by_name(trained_folder, trained):
    with pytest.raises(CheckpointError, match=r"glu\.GatedLinearUnits.*required_on_load"):
        lm_trainer(None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None)


def test_loading_without_glu_recreates_it_when_asked(trained_folder, trained):
    loaded = lm_trainer(
        None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None, load_recreate_required_algorithms=True
    )
    [recreated] = loaded.state.algorithms
    assert isinstance(recreated, GatedLinearUnits) and (recreated.activation, recreated.multiple_of) == ("silu", 4)
    assert isinstance(loaded.state.model.module.blocks[0].mlp.fc.act, nn.SiLU)
    assert same_weights(loaded.state.model, trained.state.model)
    batch = next(iter(token_loader()))
    torch.testing.assert_close(loaded.state.model.eval()(batch), trained.state.model.eval()(batch))


def test_loading_with_glu_gives_identical_weights(trained_folder, trained):
    algorithm = GatedLinearUnits(activation="silu", multiple_of=4)
    loaded = lm_trainer(None, [algorithm], seed=1, load_path=trained_folder / "ckpt", save_folder=None)
    assert same_weights(loaded.state.model, trained.state.model)


# ---- Hugging Face GPT-2 and YAML -----------------------------------------------------------------------


def test_hf_gpt2_mlps_are_gated():
    pytest.importorskip("transformers")
    from raycomp.models.hf_gpt2 import hf_gpt2

    torch.manual_seed(0)
    model = hf_gpt2(GPTConfig(seq_len=16, d_model=32, n_layers=2, n_heads=4))
    before = count(model)
    assert apply_gated_linear_units(model) == 2
    mlp = model.module.transformer.h[0].mlp
    assert isinstance(mlp.c_fc, GatedProjection) and mlp.c_proj.weight.shape == (32, 88)
    assert abs(count(model) / before - 1) < 0.02
    logits = model(next(iter(token_loader())))
    assert logits.shape == (16, 16, 256) and torch.isfinite(logits).all()


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    arguments = "    activation: relu\n    width_ratio: 1.0\n"
    path.write_text(LANGUAGE_MODEL_YAML + "algorithms:\n  gated_linear_units:\n" + arguments)
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, GatedLinearUnits) and (algorithm.activation, algorithm.width_ratio) == ("relu", 1.0)
