"""Ray Train runs of a config: DDP over 2 workers follows the 1-worker loss curve at the same global batch."""

from __future__ import annotations

import pytest

from raycomp.config import ExperimentConfig


def run_history(tmp_path, name: str, workers: int, batch_size: int) -> list[dict]:
    from raycomp.launch.runner import torch_trainer

    config = ExperimentConfig.from_dict(
        {
            "name": name,
            "model": {"name": "cnn_plain"},  # no BatchNorm or Dropout: the loss does not depend on the split
            "data": {"num_train": 256, "num_test": 128, "batch_size": batch_size},
            "max_duration": "6ba",
            "eval": {"interval": "2ba"},
            "checkpoint": {"interval": "2ba", "num_to_keep": None},
            "scaling": {"num_workers": workers},
            "storage_path": str(tmp_path),
        }
    )
    result = torch_trainer(config, name, str(tmp_path)).fit()
    return [metrics for _, metrics in sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])]


def test_two_workers_follow_one_worker_at_the_same_global_batch(tmp_path, local_ray):
    single = run_history(tmp_path, "single", workers=1, batch_size=64)
    double = run_history(tmp_path, "double", workers=2, batch_size=32)
    assert [m["step"] for m in single] == [m["step"] for m in double] == [2, 4, 6]
    assert [m["samples"] for m in single] == [m["samples"] for m in double] == [128, 256, 384]
    assert double[-1]["workers"] == 2
    for one, two in zip(single, double, strict=True):
        assert two["train/loss"] == pytest.approx(one["train/loss"], rel=1e-4)
        assert two["eval/loss"] == pytest.approx(one["eval/loss"], rel=1e-4)
        assert two["eval/accuracy"] == pytest.approx(one["eval/accuracy"], abs=1 / 128)
