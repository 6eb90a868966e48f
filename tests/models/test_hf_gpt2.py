"""Hugging Face GPT-2 as ``gpt2_hf``: built offline from a small config, per-sequence losses, trains; a clear error
without the ``nlp`` extra."""

from __future__ import annotations

import math
import sys

import pytest
import torch

from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_model_for
from raycomp.models import LanguageModel, build_model
from raycomp.models.gpt import GPTConfig

TINY = GPTConfig(seq_len=16, d_model=32, n_layers=2, n_heads=4)


@pytest.fixture
def transformers():
    return pytest.importorskip("transformers")


def test_built_from_the_config_without_downloads(transformers, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = build_model("gpt2_hf", gpt=TINY)
    assert isinstance(model, LanguageModel)
    assert isinstance(model.module, transformers.GPT2LMHeadModel)
    hf = model.module.config
    assert (hf.vocab_size, hf.n_positions, hf.n_embd, hf.n_layer, hf.n_head) == (256, 16, 32, 2, 4)
    assert model.module.transformer.wpe.weight.shape == (16, 32)
    assert model.module.lm_head.weight is model.module.transformer.wte.weight


@pytest.mark.measured
def test_logits_per_sequence_loss_and_causality(transformers) -> None:
    torch.manual_seed(0)
    model = build_model("gpt2_hf", gpt=TINY).eval()
    tokens = torch.randint(0, 256, (3, 17))
    batch = (tokens[:, :-1], tokens[:, 1:])
    outputs = model(batch)
    assert outputs.shape == (3, 16, 256)
    per_sequence = model.loss(outputs, batch, reduction="none")
    assert per_sequence.shape == (3,)
    # |loss - ln 256| at init was 0.004-0.027 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29): 0.3 is
    # over 30 sd (0.008) from seed 0's 0.017; kernels moved it by 1e-6.
    assert per_sequence.mean().item() == pytest.approx(math.log(256), abs=0.3)
    changed = batch[0].clone()
    changed[:, 9] = (changed[:, 9] + 1) % 256
    torch.testing.assert_close(model((changed, batch[1]))[:, :9], outputs[:, :9])


@pytest.mark.measured
def test_a_few_steps_reduce_the_loss_on_a_repeated_batch(transformers) -> None:
    torch.manual_seed(0)
    model = build_model("gpt2_hf", gpt=TINY)
    tokens = torch.randint(0, 256, (4, 17), generator=torch.Generator().manual_seed(1))
    batch = (tokens[:, :-1], tokens[:, 1:])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(20):
        loss = model.loss(model(batch), batch)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    # The 20 steps' drop was 2.20-2.24 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29; sd 0.017): the
    # bound 1.0 is 70 sd below seed 0's 2.21.
    assert losses[-1] < losses[0] - 1.0


def test_config_builds_gpt2_hf_with_the_data_sequence_length(transformers) -> None:
    config = ExperimentConfig.from_dict(
        {"model": {"name": "gpt2_hf", "d_model": 32, "n_layers": 1, "n_heads": 2}, "data": {"name": "stdlib_text"}}
    )
    model = build_model_for(config)
    assert model.module.config.n_positions == config.data.seq_len == 128


def test_missing_transformers_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # what Python does for a package that is absent
    with pytest.raises(ImportError, match=r"raycomp\[nlp\]"):
        build_model("gpt2_hf", gpt=TINY)
