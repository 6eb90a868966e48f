"""ALiBi: the paper's slopes and bias, surgery on raycomp's GPT and Hugging Face GPT-2, extrapolation, checkpoints."""

import itertools
import math

import pytest
import torch
from lm_helpers import LANGUAGE_MODEL_YAML, TINY, lm_trainer, same_weights, tiny_lm, token_loader
from torch.nn import functional as F

from raycomp import Event
from raycomp.algorithms import Alibi
from raycomp.algorithms.alibi import ALiBiBias, alibi_bias, alibi_slopes
from raycomp.config import ConfigError, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core import Callback
from raycomp.functional import apply_alibi
from raycomp.loop.checkpoint import CheckpointError
from raycomp.models.gpt import GPT, GPTConfig


def ids(batch: int = 2, length: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 256, (batch, length), generator=torch.Generator().manual_seed(seed))


# ---- the bias ------------------------------------------------------------------------------------------


def test_slopes_are_the_papers_geometric_sequence():
    assert alibi_slopes(8) == [2.0**-k for k in range(1, 9)]  # 1/2, 1/4, ..., 1/256 (the paper's example)
    sixteen = alibi_slopes(16)
    assert sixteen[0] == pytest.approx(2**-0.5) and sixteen[-1] == pytest.approx(2**-8)
    assert all(b / a == pytest.approx(2**-0.5) for a, b in itertools.pairwise(sixteen))
    # not a power of two: the 8-head slopes, then every other one of the 16-head slopes
    assert alibi_slopes(12) == pytest.approx(alibi_slopes(8) + alibi_slopes(16)[0::2][:4])
    assert alibi_slopes(1) == [2.0**-8]
    with pytest.raises(ValueError, match="n_heads"):
        alibi_slopes(0)


def test_bias_is_minus_slope_times_distance():
    slopes = torch.tensor(alibi_slopes(4))
    bias = alibi_bias(slopes, 5, 5)
    assert bias.shape == (4, 5, 5)
    for h in range(4):
        for i in range(5):
            for j in range(i + 1):
                assert bias[h, i, j] == pytest.approx(-slopes[h] * (i - j))
    # the paper's figure: query i adds m * [-i, ..., -2, -1, 0] over keys 0..i (8 heads: m = 1/2 first; i = 3)
    assert alibi_bias(torch.tensor(alibi_slopes(8)), 5, 5)[0, 3, :4].tolist() == [-1.5, -1.0, -0.5, 0.0]
    # 2 queries at the end of 5 keys (decoding with a cache): rows 3 and 4 of the full bias
    torch.testing.assert_close(alibi_bias(slopes, 2, 5), bias[:, 3:])


def test_gpt_attention_with_alibi_is_softmax_of_scores_plus_bias():
    torch.manual_seed(0)
    model = GPT(TINY).eval()
    apply_alibi(model, 64)
    attn = model.blocks[0].attn
    x = torch.randn(2, 10, 32)
    q, k, v = (t.view(2, 10, 4, 8).transpose(1, 2) for t in attn.qkv(x).split(32, dim=2))
    scores = q @ k.transpose(-1, -2) / math.sqrt(8) + alibi_bias(torch.tensor(alibi_slopes(4)), 10, 10)
    scores = scores.masked_fill(~torch.ones(10, 10, dtype=torch.bool).tril(), float("-inf"))
    expected = attn.proj((F.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(2, 10, 32))
    torch.testing.assert_close(attn(x), expected, rtol=1e-5, atol=1e-6)


# ---- the surgery on raycomp's GPT ----------------------------------------------------------------------


def test_surgery_removes_learned_positions_and_sets_every_attention_bias():
    model = tiny_lm()
    optimizer = torch.optim.AdamW(model.parameters())
    wpe = model.module.wpe.weight
    assert apply_alibi(model, max_sequence_length=64, optimizers=optimizer) == 2
    gpt = model.module
    assert gpt.wpe is None and gpt.max_seq_len == 64
    assert all(isinstance(block.attn.position_bias, ALiBiBias) for block in gpt.blocks)
    assert all(p is not wpe for p in optimizer.param_groups[0]["params"])
    assert {id(p) for p in optimizer.param_groups[0]["params"]} == {id(p) for p in model.parameters()}
    structure = repr(model)
    assert apply_alibi(model, 64) == 0 and repr(model) == structure  # applying twice changes nothing


def test_a_trained_alibi_model_runs_on_sequences_longer_than_any_seen_in_training():
    seen: list[int] = []
    trainer = lm_trainer(None, [Alibi(256, train_sequence_length_scaling=0.5)], callbacks=[LengthRecorder(seen)])
    trainer.fit()
    assert set(seen) == {8}  # trained on half of the 16-token sequences
    model = trainer.state.model.module.eval()
    with torch.no_grad():
        logits = model(ids(2, 200))  # 25 times the trained length, 12.5 times the data's
    assert logits.shape == (2, 200, 256) and torch.isfinite(logits).all()
    with pytest.raises(ValueError, match="max_seq_len 16"):
        tiny_lm().module(ids(1, 17))  # without ALiBi the learned positions stop at 16


class LengthRecorder(Callback):
    """Records the training input length after AFTER_DATALOADER's algorithms (callbacks run after them)."""

    def __init__(self, seen: list[int]) -> None:
        self.seen = seen

    def run_event(self, event, state, logger):
        if event is Event.AFTER_DATALOADER:
            self.seen.append(state.batch[0].shape[1])


def test_alibi_at_full_length_does_not_touch_batches():
    alibi = Alibi(train_sequence_length_scaling=1.0)
    trainer = lm_trainer(None, [alibi], max_duration="1ba")
    assert not alibi.match(Event.AFTER_DATALOADER, trainer.state) and alibi.match(Event.INIT, trainer.state)


def test_legacy_arguments_are_checked():
    with pytest.raises(ValueError, match="heads_per_layer=12, but the model's attention has 4 heads"):
        apply_alibi(tiny_lm(), 64, heads_per_layer=12)
    with pytest.raises(ValueError, match="attr_to_replace='forward' is not supported"):
        apply_alibi(tiny_lm(), 64, attr_to_replace="forward")
    with pytest.raises(TypeError, match="no surgery for Linear"):
        apply_alibi(tiny_lm(), 64, attention_module=torch.nn.Linear)
    with pytest.raises(ValueError, match="is not the model's position embedding"):
        apply_alibi(tiny_lm(), 64, position_embedding_attribute="module.wte")
    assert apply_alibi(tiny_lm(), 64, heads_per_layer=4, position_embedding_attribute="module.wpe") == 2


def test_warns_when_nothing_changes():
    with pytest.warns(UserWarning, match="ALiBi changed no attention"):
        apply_alibi(torch.nn.Linear(2, 2), 64)


# ---- checkpoints ---------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def trained_folder(tmp_path_factory):
    return tmp_path_factory.mktemp("trained")


@pytest.fixture(scope="module")
def trained(trained_folder):
    """One fit for the module: the loading tests below only read its checkpoint and its weights."""
    trainer = lm_trainer(trained_folder, [Alibi(max_sequence_length=128, train_sequence_length_scaling=0.5)])
    trainer.fit()
    return trainer


def test_loading_without_alibi_is_refused_by_name(trained_folder, trained):
    with pytest.raises(CheckpointError, match=r"alibi\.Alibi.*required_on_load"):
        lm_trainer(None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None)


def test_loading_without_alibi_recreates_it_when_asked(trained_folder, trained):
    loaded = lm_trainer(
        None, [], seed=1, load_path=trained_folder / "ckpt", save_folder=None, load_recreate_required_algorithms=True
    )
    [recreated] = loaded.state.algorithms
    assert isinstance(recreated, Alibi) and recreated.max_sequence_length == 128
    assert recreated.train_sequence_length_scaling == 0.5
    assert loaded.state.model.module.wpe is None and loaded.state.model.module.max_seq_len == 128
    assert same_weights(loaded.state.model, trained.state.model)
    loaded.state.model.eval()
    batch = next(iter(token_loader()))
    torch.testing.assert_close(loaded.state.model(batch), trained.state.model.eval()(batch))


def test_loading_with_alibi_gives_identical_weights(trained_folder, trained):
    loaded = lm_trainer(
        None, [Alibi(max_sequence_length=128)], seed=1, load_path=trained_folder / "ckpt", save_folder=None
    )
    assert same_weights(loaded.state.model, trained.state.model)


# ---- Hugging Face GPT-2 --------------------------------------------------------------------------------


@pytest.fixture
def transformers():
    return pytest.importorskip("transformers")


def hf_model(heads: int = 4, seed: int = 0):
    from raycomp.models.hf_gpt2 import hf_gpt2

    torch.manual_seed(seed)
    return hf_gpt2(GPTConfig(seq_len=16, d_model=8 * heads, n_layers=2, n_heads=heads)).eval()


def identity_attention(attn, d_model: int) -> None:
    """q = k = 0 and v = the input, projected back unchanged: the output is the attention-weighted input."""
    with torch.no_grad():
        attn.c_attn.weight.zero_()
        attn.c_attn.bias.zero_()
        attn.c_attn.weight[:, 2 * d_model :] = torch.eye(d_model)
        attn.c_proj.weight.copy_(torch.eye(d_model))
        attn.c_proj.bias.zero_()


@pytest.mark.parametrize("implementation", ["sdpa", "eager"])
def test_hf_gpt2_attention_weights_are_the_softmax_of_the_bias(transformers, implementation):
    model = hf_model()
    model.module.set_attn_implementation(implementation)
    assert apply_alibi(model, 64) == 2
    attn = model.module.transformer.h[0].attn
    identity_attention(attn, 32)
    x = torch.randn(1, 6, 32)
    out, _ = attn(x, attention_mask=None)
    weights = F.softmax(
        alibi_bias(torch.tensor(alibi_slopes(4)), 6, 6).masked_fill(~torch.ones(6, 6).bool().tril(), -1e9), -1
    )
    expected = torch.einsum("hij,bhjd->bhid", weights, x.view(1, 6, 4, 8).transpose(1, 2)).transpose(1, 2)
    torch.testing.assert_close(out, expected.reshape(1, 6, 32), rtol=1e-5, atol=1e-6)


def test_hf_gpt2_extrapolates_and_its_positions_are_zero_and_frozen(transformers):
    model = hf_model()
    optimizer = torch.optim.AdamW(model.parameters())
    old_wpe = model.module.transformer.wpe.weight
    apply_alibi(model, 256, optimizers=optimizer)
    wpe = model.module.transformer.wpe.weight
    assert wpe.shape == (256, 32) and not wpe.requires_grad and not wpe.any()
    assert model.module.config.n_positions == 256
    assert all(p is not old_wpe for p in optimizer.param_groups[0]["params"])
    with torch.no_grad():
        logits = model((ids(2, 100), None))  # the model was built for 16 positions
    assert logits.shape == (2, 100, 256) and torch.isfinite(logits).all()
    model.module.set_attn_implementation("eager")
    with torch.no_grad():
        torch.testing.assert_close(model((ids(2, 100), None)), logits, rtol=1e-4, atol=1e-4)


def test_hf_gpt2_trains_with_alibi_and_round_trips_a_checkpoint(transformers, tmp_path):
    trainer = lm_trainer(tmp_path, [Alibi(max_sequence_length=64)], model=hf_model().train())
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
    loaded = lm_trainer(
        tmp_path,
        [],
        seed=1,
        model=hf_model(seed=1).train(),
        load_path=tmp_path / "ckpt",
        save_folder=None,
        load_recreate_required_algorithms=True,
    )
    assert same_weights(loaded.state.model, trainer.state.model)
    batch = next(iter(token_loader()))
    torch.testing.assert_close(loaded.state.model.eval()(batch), trainer.state.model.eval()(batch))


# ---- the YAML name -------------------------------------------------------------------------------------


def test_experiment_config(tmp_path):
    path = tmp_path / "exp.yaml"
    arguments = "    max_sequence_length: 512\n    train_sequence_length_scaling: 0.5\n"
    path.write_text(LANGUAGE_MODEL_YAML + "algorithms:\n  alibi:\n" + arguments)
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, Alibi)
    assert (algorithm.max_sequence_length, algorithm.train_sequence_length_scaling) == (512, 0.5)
    path.write_text("algorithms:\n  alibi:\n    train_sequence_length_scaling: 0\n")
    with pytest.raises(ConfigError, match=r"train_sequence_length_scaling: must be in \(0, 1\], got 0"):
        load_experiment(str(path))
