"""FusedLayerNorm: same outputs and Parameters, last on INIT (it sees LayerNorms other surgeries add), checkpoints."""

import pytest
import torch
from lm_helpers import LANGUAGE_MODEL_YAML, lm_trainer, same_weights, tiny_lm
from torch import nn

from raycomp import Event
from raycomp.algorithms import FusedLayerNorm, GatedLinearUnits
from raycomp.algorithms.fused_layernorm import TorchFusedLayerNorm, apex_available
from raycomp.config import load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core import Algorithm
from raycomp.functional import apply_fused_layernorm
from raycomp.loop.checkpoint import CheckpointError


def ids(batch: int = 2, length: int = 16) -> torch.Tensor:
    return torch.randint(0, 256, (batch, length), generator=torch.Generator().manual_seed(1))


def test_outputs_and_parameters_are_unchanged_at_init():
    model = tiny_lm().module.eval()
    params, keys = [id(p) for p in model.parameters()], list(model.state_dict())
    x = ids()
    before = model(x)
    assert apply_fused_layernorm(model, backend="torch") == 5  # ln_1, ln_2 of two blocks, ln_f
    assert all(type(m) is not nn.LayerNorm for m in model.modules())
    assert isinstance(model.blocks[0].ln_1, TorchFusedLayerNorm)
    assert [id(p) for p in model.parameters()] == params and list(model.state_dict()) == keys
    torch.testing.assert_close(model(x), before, rtol=0, atol=1e-6)
    assert apply_fused_layernorm(model) == 0  # applying twice changes nothing


def test_a_layernorm_without_bias_or_affine_keeps_its_form():
    model = nn.Sequential(nn.LayerNorm(8, bias=False), nn.LayerNorm(8, elementwise_affine=False, eps=1e-3))
    x = torch.randn(4, 8)
    before = model(x)
    apply_fused_layernorm(model, backend="torch")
    assert model[0].bias is None and model[1].weight is None and model[1].eps == 1e-3
    torch.testing.assert_close(model(x), before, rtol=0, atol=1e-6)


@pytest.mark.skipif(apex_available(), reason="apex is installed here")
def test_apex_backend_without_apex_is_an_error():
    with pytest.raises(ImportError, match="apex"):
        apply_fused_layernorm(nn.LayerNorm(4), backend="apex")


class AddsLayerNorm(Algorithm):
    """A surgery on INIT that adds a LayerNorm (as a model-surgery algorithm may)."""

    def match(self, event, state):
        return event is Event.INIT

    def apply(self, event, state, logger):
        state.model.module.extra_norm = nn.LayerNorm(32)


def test_fused_layernorm_runs_last_on_init_and_sees_added_layernorms():
    trainer = lm_trainer(
        None, [FusedLayerNorm(backend="torch"), AddsLayerNorm(), GatedLinearUnits()], max_duration="1ba"
    )
    assert isinstance(trainer.state.model.module.extra_norm, TorchFusedLayerNorm)
    order = [t.name for t in sorted(trainer.engine.last_traces[Event.INIT], key=lambda t: t.order)]
    assert order == ["AddsLayerNorm", "GatedLinearUnits", "FusedLayerNorm"]


def test_warns_when_nothing_changes():
    with pytest.warns(UserWarning, match="FusedLayerNorm changed no layer"):
        lm_trainer(None, [FusedLayerNorm()], model=tiny_lm_without_norms(), max_duration="1ba")


def tiny_lm_without_norms():
    model = tiny_lm()
    for block in model.module.blocks:
        block.ln_1, block.ln_2 = nn.Identity(), nn.Identity()
    model.module.ln_f = nn.Identity()
    return model


# ---- checkpoints ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("trained")


@pytest.fixture(scope="module")
def trained(trained_folder):
    """One fit for the module: the loading tests below only read its checkpoint and its weights."""
    trainer = lm_trainer(trained_folder, [FusedLayerNorm(backend="torch")])
    trainer.fit()
    return trainer


def test_loading_without_fused_layernorm_is_refused_by_name(trained_folder, trained):
    with pytest.raises(CheckpointError, match=r"fused_layernorm\.FusedLayerNorm.*required_on_load"):
        lm_trainer(None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None)


def test_loading_without_fused_layernorm_recreates_it_when_asked(trained_folder, trained):
    loaded = lm_trainer(
        None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None, load_recreate_required_algorithms=True
    )
    [recreated] = loaded.state.algorithms
    assert isinstance(recreated, FusedLayerNorm) and recreated.backend == "torch"
    assert isinstance(loaded.state.model.module.ln_f, TorchFusedLayerNorm)
    assert same_weights(loaded.state.model, trained.state.model)


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(LANGUAGE_MODEL_YAML + "algorithms:\n  fused_layernorm:\n    backend: torch\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, FusedLayerNorm) and algorithm.backend == "torch"
