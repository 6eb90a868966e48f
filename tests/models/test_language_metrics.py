"""Eval metrics on a language model: sized to the vocabulary, fed one token per sample, and perplexity as is."""

from __future__ import annotations

import math

import pytest
import torch

from raycomp.config import ExperimentConfig
from raycomp.core.evaluator import build_metric
from raycomp.models import build_model
from raycomp.models.gpt import GPTConfig


def test_a_language_models_eval_metrics_default_to_its_vocabulary(tmp_path):
    config = ExperimentConfig.from_dict(
        {
            "storage_path": str(tmp_path),
            "model": {"name": "gpt"},
            "data": {"name": "stdlib_text"},
            "eval": {"metrics": {"top5": {"class": "MulticlassAccuracy", "top_k": 5}}},
        }
    )
    assert config.build_eval_metrics()["top5"].num_classes == 256


def test_classification_metrics_see_every_token_and_perplexity_the_whole_sequences():
    model = build_model("gpt", gpt=GPTConfig(vocab_size=256, seq_len=8, d_model=16, n_layers=1, n_heads=2))
    tokens = torch.randint(0, 256, (3, 9))
    batch = (tokens[:, :-1], tokens[:, 1:])
    with torch.no_grad():
        logits = model(batch)
    accuracy = build_metric("MulticlassAccuracy", {"average": "micro"}, 256)
    model.update_metric(batch, logits, accuracy)
    assert accuracy.compute().item() == pytest.approx(model.num_correct(logits, batch).item() / 3)
    perplexity = model.get_metrics()["perplexity"]
    model.update_metric(batch, logits, perplexity)
    assert perplexity.compute().item() == pytest.approx(math.exp(model.loss(logits, batch).item()), rel=1e-4)
