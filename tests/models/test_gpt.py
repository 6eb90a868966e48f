"""raycomp's GPT: its surgery interface, causality, the position-bias hook, and per-sequence language-model losses."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from raycomp.algorithms.selective_backprop import select_using_loss
from raycomp.base.errors import ConfigError
from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_model_for
from raycomp.models import GPT, LanguageModel, build_model
from raycomp.models.gpt import MLP, Block, CausalSelfAttention, GPTConfig

TINY = GPTConfig(seq_len=16, d_model=32, n_layers=2, n_heads=4)


def tiny_gpt(seed: int = 0, config: GPTConfig = TINY) -> GPT:
    torch.manual_seed(seed)
    return GPT(config).eval()


def ids(batch: int = 2, length: int = 16, seed: int = 1) -> torch.Tensor:
    return torch.randint(0, 256, (batch, length), generator=torch.Generator().manual_seed(seed))


def test_structure_is_the_surgery_interface() -> None:
    model = tiny_gpt()
    assert isinstance(model.wte, nn.Embedding) and isinstance(model.wpe, nn.Embedding)
    assert model.max_seq_len == 16 and model.config == TINY
    assert isinstance(model.blocks, nn.ModuleList) and len(model.blocks) == 2
    block = model.blocks[0]
    assert isinstance(block, Block)
    assert isinstance(block.ln_1, nn.LayerNorm) and isinstance(block.ln_2, nn.LayerNorm)
    assert isinstance(block.attn, CausalSelfAttention) and block.attn.n_heads == 4
    assert block.attn.qkv.weight.shape == (96, 32) and block.attn.proj.weight.shape == (32, 32)
    assert block.attn.position_bias is None
    assert isinstance(block.mlp, MLP) and isinstance(block.mlp.act, nn.GELU)
    assert block.mlp.fc.weight.shape == (128, 32) and block.mlp.proj.weight.shape == (32, 128)
    assert isinstance(model.ln_f, nn.LayerNorm)
    assert model.lm_head.weight is model.wte.weight  # tied by default
    assert GPT(GPTConfig(seq_len=16, d_model=32, n_layers=1, n_heads=4, tie_weights=False)).lm_head.weight is not None


def test_logits_shape_and_shorter_sequences() -> None:
    model = tiny_gpt()
    assert model(ids(3, 16)).shape == (3, 16, 256)
    assert model(ids(3, 5)).shape == (3, 5, 256)
    with pytest.raises(ValueError, match="max_seq_len 16"):
        model(ids(1, 17))


def test_changing_a_later_token_leaves_earlier_logits_alone() -> None:
    model = tiny_gpt()
    tokens = ids(2, 16)
    changed = tokens.clone()
    changed[:, 10] = (changed[:, 10] + 1) % 256
    before, after = model(tokens), model(changed)
    torch.testing.assert_close(after[:, :10], before[:, :10], rtol=0, atol=0)
    assert (after[:, 10:] - before[:, 10:]).abs().max() > 1e-4


class RecordingBias(nn.Module):
    """Adds ``scale`` times (key - query) distance: a linear ALiBi-like bias, recording how it is called."""

    def __init__(self, scale: float) -> None:
        super().__init__()
        self.scale = scale
        self.calls: list[tuple] = []

    def forward(self, n_heads: int, t_query: int, t_key: int, device: torch.device, dtype: torch.dtype):
        self.calls.append((n_heads, t_query, t_key, device, dtype))
        distance = torch.arange(t_key, device=device)[None, :] - torch.arange(t_query, device=device)[:, None]
        return (self.scale * distance).to(dtype).expand(1, n_heads, t_query, t_key)


def test_position_bias_hook_is_called_and_added_to_causal_scores() -> None:
    model = tiny_gpt()
    tokens = ids(2, 12)
    plain = model(tokens)
    zero = RecordingBias(0.0)
    for block in model.blocks:
        block.attn.position_bias = zero
    torch.testing.assert_close(model(tokens), plain)  # a zero bias keeps causal attention exactly
    assert zero.calls == [(4, 12, 12, tokens.device, torch.float32)] * 2
    strong = RecordingBias(5.0)
    for block in model.blocks:
        block.attn.position_bias = strong
    biased = model(tokens)
    assert (biased - plain).abs().max() > 1e-3
    # Still causal: future keys have a large positive bias here, and the mask must win.
    changed = tokens.clone()
    changed[:, 8] = (changed[:, 8] + 1) % 256
    torch.testing.assert_close(model(changed)[:, :8], biased[:, :8], rtol=0, atol=0)


def test_without_learned_positions_any_length_is_accepted() -> None:
    model = tiny_gpt()
    model.wpe = None
    assert model(ids(1, 40)).shape == (1, 40, 256)


def lm_batch(batch: int = 4, length: int = 8) -> tuple[torch.Tensor, torch.Tensor]:
    tokens = ids(batch, length + 1, seed=3)
    return tokens[:, :-1], tokens[:, 1:]


def test_loss_is_one_value_per_sequence_the_mean_over_its_tokens() -> None:
    model = build_model("gpt", gpt=TINY).eval()
    batch = lm_batch()
    outputs = model(batch)
    per_token = nn.functional.cross_entropy(outputs.transpose(1, 2), batch[1], reduction="none")
    per_sequence = model.loss(outputs, batch, reduction="none")
    assert per_sequence.shape == (4,)
    torch.testing.assert_close(per_sequence, per_token.mean(dim=1))
    torch.testing.assert_close(model.loss(outputs, batch), per_token.mean())
    torch.testing.assert_close(model.loss(outputs, batch, reduction="sum"), per_token.mean(dim=1).sum())
    with pytest.raises(ValueError, match="reduction"):
        model.loss(outputs, batch, reduction="max")


def test_num_correct_sums_per_sequence_token_accuracy() -> None:
    model = LanguageModel(tiny_gpt())
    targets = torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]])
    outputs = nn.functional.one_hot(torch.tensor([[1, 2, 0, 0], [5, 6, 7, 8]]), 256).float()
    assert model.num_correct(outputs, (None, targets)).item() == pytest.approx(0.5 + 1.0)
    assert "perplexity" in model.get_metrics() and model.get_metrics(is_train=True) == {}


def test_selective_backprop_keeps_whole_sequences() -> None:
    model = build_model("gpt", gpt=TINY)
    inputs, targets = lm_batch(batch=10)
    kept_inputs, kept_targets = select_using_loss(
        inputs, targets, lambda x: model((x, targets)), lambda o, t, reduction: model.loss(o, (None, t), reduction), 0.3
    )
    assert kept_inputs.shape == (3, 8) and kept_targets.shape == (3, 8)
    assert all(any(torch.equal(row, original) for original in inputs) for row in kept_inputs)


def gpt_experiment(**model: object) -> dict:
    return {"model": {"name": "gpt", **model}, "data": {"name": "stdlib_text", "seq_len": 32}}


def test_build_model_for_takes_sizes_from_the_model_and_length_from_the_data() -> None:
    config = ExperimentConfig.from_dict(gpt_experiment(d_model=64, n_layers=3, n_heads=2, dropout=0.1))
    model = build_model_for(config)
    assert isinstance(model, LanguageModel) and isinstance(model.module, GPT)
    assert model.module.config == GPTConfig(vocab_size=256, seq_len=32, d_model=64, n_layers=3, n_heads=2, dropout=0.1)
    assert model.module.wpe.weight.shape == (32, 64)


@pytest.mark.parametrize(
    ("model", "data", "expected"),
    [
        ("gpt", {"name": "synthetic"}, "'gpt' is a language model and needs a text dataset"),
        ("gpt2_hf", {"name": "cifar10", "root": "/data"}, "'gpt2_hf' is a language model"),
        ("cnn", {"name": "stdlib_text"}, "'cnn' is an image classifier and needs an image dataset"),
    ],
)
def test_model_and_data_kinds_must_match(model: str, data: dict, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected) as excinfo:
        ExperimentConfig.from_dict({"model": {"name": model}, "data": data})
    assert "model.name" in str(excinfo.value)


def test_heads_must_divide_the_width() -> None:
    with pytest.raises(ConfigError, match=r"model\.n_heads: 3 heads do not divide d_model 128"):
        ExperimentConfig.from_dict(gpt_experiment(n_heads=3))
    with pytest.raises(ValueError, match="multiple of n_heads"):
        GPTConfig(d_model=10, n_heads=4)
