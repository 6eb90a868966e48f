"""Ray Train runs of a config: DDP over 2 workers follows the run in one process at the same global batch."""

from __future__ import annotations

import pytest

from raycomp.config import ExperimentConfig


def plain_config(tmp_path, name: str, workers: int, batch_size: int) -> ExperimentConfig:
    return ExperimentConfig.from_dict(
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


def test_two_workers_follow_one_process_at_the_same_global_batch(tmp_path, local_ray):
    """Ray Train's worker group (sharding, DDP's averaged gradients, rank 0's reports) against the same recipe
    trained in this process: tests/test_trainer_ddp.py checks the Trainer's DDP alone, without Ray."""
    from ray.util.state import list_actors

    from raycomp.launch.cluster import torch_trainer
    from raycomp.launch.sinks import FolderSink
    from raycomp.launch.spec import TrialSpec
    from raycomp.launch.worker import run_in_process
    from raycomp.loop.checkpoint import KeptCheckpoints

    result = torch_trainer(TrialSpec.of(plain_config(tmp_path, "double", 2, 32)), "double", str(tmp_path)).fit()
    double = [metrics for _, metrics in sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])]
    ray_here = local_ray.get_runtime_context().gcs_address  # not the other pytest-xdist worker's Ray
    started = {actor.class_name for actor in list_actors(address=ray_here)}
    assert "TrainController" in started and "PreemptionWatcher" not in started  # not on a private local Ray
    sink = FolderSink(KeptCheckpoints(tmp_path / "single"))
    run_in_process(TrialSpec.of(plain_config(tmp_path, "single", 0, 64)), sink)
    single = sink.history
    assert [m["step"] for m in single] == [m["step"] for m in double] == [2, 4, 6]
    assert [m["samples"] for m in single] == [m["samples"] for m in double] == [128, 256, 384]
    assert double[-1]["workers"] == 2
    for one, two in zip(single, double, strict=True):
        assert two["train/loss"] == pytest.approx(one["train/loss"], rel=1e-4)
        assert two["eval/loss"] == pytest.approx(one["eval/loss"], rel=1e-4)
        assert two["eval/accuracy"] == pytest.approx(one["eval/accuracy"], abs=1 / 128)


def test_two_workers_train_with_blurpool_and_layer_freezing_under_ddp(tmp_path, local_ray):
    """Model surgery before DDP, and frozen layers that DDP must know to skip (find_unused_parameters)."""
    import torch

    from raycomp.launch.cluster import torch_trainer
    from raycomp.launch.spec import TrialSpec
    from raycomp.loop.checkpoint import load_checkpoint

    config = ExperimentConfig.from_dict(
        {
            "name": "surgery",
            "data": {"num_train": 256, "num_test": 128, "batch_size": 32},
            "max_duration": "3ep",
            "checkpoint": {"interval": "1ep", "num_to_keep": None},
            "algorithms": {
                "blurpool": {"min_channels": 1},
                "layer_freezing": {"freeze_start": 0.3, "freeze_level": 0.5},
            },
            "scaling": {"num_workers": 2},
            "storage_path": str(tmp_path),
        }
    )
    result = torch_trainer(TrialSpec.of(config), "surgery", str(tmp_path)).fit()
    history = sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])
    assert [metrics["epoch"] for _, metrics in history] == [1, 2, 3] and history[-1][1]["workers"] == 2
    assert history[-1][1]["finished"] and history[-1][1]["train/loss"] > 0
    states = []
    for checkpoint, _ in history:
        with checkpoint.as_directory() as folder:
            states.append(load_checkpoint(f"{folder}/checkpoint.pt")["state"])
    model = states[-1]["model"]
    assert any(key.endswith(".filt2d") for key in model)  # BlurPool's BlurMaxPool2d is in the trained model
    by_name = [{entry["class_path"].rsplit(".", 1)[-1]: entry for entry in state["algorithms"]} for state in states]
    assert by_name[-1]["BlurPool"]["required_on_load"]
    frozen = [algorithms["LayerFreezing"]["state"]["num_frozen_layers"] for algorithms in by_name]
    assert frozen[0] <= frozen[1] <= frozen[2] and frozen[2] > 0
    # The first layer, frozen after epoch 1 or 2, did not change in the last epoch on any rank's copy.
    first = next(key for key in model if key.endswith("weight"))
    assert torch.equal(states[-2]["model"][first], model[first])
