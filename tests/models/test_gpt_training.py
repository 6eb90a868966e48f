"""The language-model workload end to end: raycomp's Trainer and ``python -m raycomp.train`` on stdlib source."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
import yaml

from raycomp.core import Evaluator
from raycomp.data import build_dataloader, build_datasets
from raycomp.loop.trainer import Trainer
from raycomp.models import build_model
from raycomp.models.gpt import GPTConfig

SMALL_GPT = GPTConfig(seq_len=64, d_model=64, n_layers=2, n_heads=4)


@pytest.mark.measured
def test_a_few_trainer_steps_on_stdlib_source_reduce_the_eval_loss(tmp_path: Path) -> None:
    train, validation = build_datasets("stdlib_text", seq_len=64, max_bytes=150_000, cache_dir=str(tmp_path))
    torch.manual_seed(0)
    model = build_model("gpt", gpt=SMALL_GPT)
    trainer = Trainer(
        model,
        build_dataloader(train, 16, seed=0),
        "40ba",
        eval_dataloader=Evaluator("eval", build_dataloader(validation, 64, shuffle=False)),
        optimizers=torch.optim.AdamW(model.parameters(), lr=3e-3),
        eval_interval="40ba",
        seed=0,
        progress_bar=False,
    )
    before = trainer.evaluate()
    # Bounds against seeds 0-4 x torch/oneDNN kernels default/SSE4.1, AVX2, AVX-512 (issue 29): |initial loss -
    # ln 256| 0.14-0.17 (sd 0.012), drop 2.29-2.53 (sd 0.10), accuracy 0.309-0.329 (sd 0.008); seed 0 is the
    # lowest drop and accuracy, and every bound is over 10 sd from it (3 needed). Kernels moved them by < 0.003.
    assert before["eval/loss"] == pytest.approx(math.log(256), abs=0.3)  # near uniform over bytes at init
    trainer.fit()
    after = trainer.evaluate()
    assert after["eval/loss"] < before["eval/loss"] - 1.0
    assert after["eval/accuracy"] > 0.15  # bytes of Python source: spaces, letters, newlines are learnt first
    assert after["eval/perplexity"] == pytest.approx(math.exp(after["eval/loss"]), rel=1e-3)


@pytest.mark.measured
def test_raycomp_train_runs_a_tiny_gpt_on_stdlib_text(tmp_path: Path, monkeypatch, capsys) -> None:
    """``python -m raycomp.train``'s main, in this process: a process of its own would add only its imports (seconds
    of CPU); the command itself runs in tests/tracking/test_train_tracking.py's Ctrl-C test."""
    from raycomp.cli.train import main

    experiment = {
        "name": "lm",
        "model": {"name": "gpt", "d_model": 32, "n_layers": 1, "n_heads": 2},
        "data": {"name": "stdlib_text", "seq_len": 32, "max_bytes": 60_000, "batch_size": 16, "eval_batch_size": 64},
        "optimizer": {"name": "adamw", "lr": 0.003},
        "schedule": {"name": "constant"},
        "max_duration": "20ba",
        "eval": {"interval": "20ba"},
        "checkpoint": {"interval": "20ba"},
        "scaling": {"num_workers": 0},
        "storage_path": str(tmp_path / "runs"),
    }
    path = tmp_path / "lm.yaml"
    path.write_text(yaml.safe_dump(experiment, sort_keys=False))
    monkeypatch.setenv("RAYCOMP_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)
    assert main([str(path)]) == 0
    out = capsys.readouterr().out
    shown = json.loads(out[out.index("{") : out.index("}\n") + 1])
    # 2.09-2.13 below ln 256 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29; sd 0.015, the kernels changed
    # nothing): the bound 0.5 is 100 sd from seed 0's 2.11.
    assert shown["eval/loss"] < math.log(256) - 0.5
    assert shown["eval/perplexity"] == pytest.approx(math.exp(shown["eval/loss"]), rel=1e-3)
    assert 0 < shown["eval/accuracy"] < 1
    assert "MLflow run" in out
    assert list((tmp_path / "cache").glob("stdlib_text-*.pt"))
    assert list((tmp_path / "runs" / "lm").glob("checkpoint_*/checkpoint.pt"))
