"""The recipe with the user's code: a model and data by ``class_path``, an image folder, algorithms on them,
and checkpoints that resume bit for bit."""

from __future__ import annotations

import pytest
import torch
from torch.utils.data import DistributedSampler

from raycomp.algorithms.blurpool_layers import BlurConv2d
from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_trainer
from raycomp.core import Event
from raycomp.launch.checkpoint_fit import check_fits
from raycomp.loop.checkpoint import CheckpointError
from raycomp.models import ClassifierModel

COLOUR_SQUARES = {
    "class_path": "my_project.data.colour_squares",
    "init_args": {"num_train": 64, "num_eval": 32, "num_classes": 3, "size": 8},
}
SB = {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}


def _config(**sections) -> ExperimentConfig:
    base = {
        "scaling": {"num_workers": 0},
        "max_duration": "2ep",
        "seed": 3,
        "data": {**COLOUR_SQUARES, "batch_size": 16},
    }
    return ExperimentConfig.from_dict({**base, **sections})


def test_torchvision_resnet18_by_class_path_trains_on_an_image_folder_with_blurpool_and_channels_last(
    tmp_path, user_project
):
    from my_project.data import write_image_folder

    images = write_image_folder(tmp_path / "images", per_class=(8, 4), size=20)
    config = _config(
        model={"class_path": "torchvision.models.resnet18", "init_args": {"num_classes": 3}},
        data={"name": "image_folder", "root": str(images), "image_size": 32, "batch_size": 8, "eval_batch_size": 12},
        max_duration="3ba",
        eval={"interval": "3ba", "metrics": {"top2": {"class": "MulticlassAccuracy", "top_k": 2}}},
        algorithms={"blurpool": {}, "channels_last": {}},
    )
    trainer = build_trainer(config, device="cpu")
    trainer.fit()
    network = trainer.state.model.module
    assert isinstance(network.layer2[0].conv1, BlurConv2d)  # its strided 3x3 found and blurred
    assert network.conv1.weight.is_contiguous(memory_format=torch.channels_last)
    assert trainer.state.timestamp.batch == 3
    assert set(trainer.state.eval_metrics) == {"eval/loss", "eval/accuracy", "eval/top2"}
    assert (
        len(trainer.state.eval_dataloader.dataloader.dataset) == 12
        if hasattr(trainer.state, "eval_dataloader")
        else True
    )


def test_a_raycomp_model_brings_its_own_loss_and_selective_backprop_uses_it(user_project):
    # scale_factor 1: SelectiveBackprop scores full-size inputs, which a flattening Linear needs
    config = _config(model={"class_path": "my_project.odd.SquaredErrorNet", "init_args": {"size": 8}},
                     algorithms={"selective_backprop": {**SB, "scale_factor": 1.0}})  # fmt: skip
    trainer = build_trainer(config, device="cpu")
    assert type(trainer.state.model).__name__ == "SquaredErrorNet"  # not wrapped as a classifier
    trainer.fit()
    assert trainer.engine.trace_summary.get("SelectiveBackprop", Event.AFTER_DATALOADER).count == 8
    model = trainer.state.model.eval()
    from my_project.data import colour_squares

    _, eval_set = colour_squares(**COLOUR_SQUARES["init_args"])
    inputs, targets = eval_set.tensors
    with torch.no_grad():
        own_loss = model.loss(model((inputs, targets)), (inputs, targets)).item()
    assert trainer.state.eval_metrics["eval/loss"] == pytest.approx(own_loss, rel=1e-5)  # its loss, not CE


def test_a_plain_module_is_a_cross_entropy_classifier_and_a_data_module_keeps_its_loaders(user_project):
    config = _config(
        model={"class_path": "my_project.nets.TinyResNet", "init_args": {"num_classes": 4, "widths": [8]}},
        data={"class_path": "my_project.data.ColourSquaresModule",
              "init_args": {"batch_size": 8, "num_train": 32, "num_eval": 16, "size": 8}},
        max_duration="1ep",
    )  # fmt: skip
    trainer = build_trainer(config, device="cpu")
    assert isinstance(trainer.state.model, ClassifierModel)
    loader = trainer.state.train_dataloader
    assert loader.batch_size == 8 and not isinstance(loader.sampler, DistributedSampler)  # used as it is
    trainer.fit()
    assert trainer.state.timestamp.batch == 4


def _weights(trainer) -> dict[str, torch.Tensor]:
    return {key: value.clone() for key, value in trainer.state.model.state_dict().items()}


def test_a_user_model_resumes_bit_for_bit_and_required_on_load_holds(tmp_path, user_project):
    model = {"class_path": "my_project.nets.TinyResNet", "init_args": {"num_classes": 3, "widths": [8, 16]}}
    config = _config(model=model, algorithms={"blurpool": {"min_channels": 8}, "selective_backprop": SB},
                     checkpoint={"interval": "1ep"})  # fmt: skip
    full = build_trainer(config, save_folder=tmp_path / "full", device="cpu")
    full.fit()
    resumed = build_trainer(config, load_path=tmp_path / "full" / "ep1-ba4.pt", device="cpu")
    assert resumed.state.timestamp.batch == 4
    resumed.fit()
    expected, got = _weights(full), _weights(resumed)
    assert expected.keys() == got.keys() and any("conv.weight" in key for key in got)  # BlurConv2d wraps convs
    assert all(torch.equal(expected[key], got[key]) for key in expected)

    bare = _config(model=model)
    with pytest.raises(CheckpointError, match="BlurPool"):
        check_fits(bare, tmp_path / "full" / "latest.pt")
    check_fits(bare, tmp_path / "full" / "latest.pt", recreate_required=True)
    other = _config(
        model={**model, "init_args": {"num_classes": 5, "widths": [8, 16]}},
        algorithms={"blurpool": {"min_channels": 8}},
    )
    with pytest.raises(CheckpointError, match=r"does not fit model my_project\.nets\.TinyResNet \{'num_classes': 5"):
        check_fits(other, tmp_path / "full" / "latest.pt")


LINEAR = {"class_path": "my_project.odd.linear_classifier", "init_args": {"num_classes": 3, "size": 8}}


def _ddp_config(batch_size: int) -> ExperimentConfig:
    return _config(model=LINEAR, data={**COLOUR_SQUARES, "batch_size": batch_size}, schedule={"name": "constant"},
                   optimizer={"name": "sgd", "lr": 0.05, "momentum": 0.0, "weight_decay": 0.0})  # fmt: skip


def _run_rank(rank: int, world_size: int, init_file: str, out_dir: str, project: str) -> None:
    import datetime
    import sys

    import torch.distributed as dist
    from helpers import leave_rank

    sys.path.insert(0, project)
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )  # fmt: skip
    try:
        trainer = build_trainer(_ddp_config(batch_size=8), device="cpu")
        trainer.fit()
        torch.save({"weights": trainer.state.model.state_dict(), "sample": trainer.state.timestamp.sample},
                   f"{out_dir}/rank{rank}.pt")  # fmt: skip
    finally:
        dist.destroy_process_group()
    leave_rank()


@pytest.mark.spawns
def test_two_ddp_workers_with_a_user_model_and_datasets_match_one(tmp_path, user_project):
    import torch.multiprocessing as mp

    mp.spawn(_run_rank, args=(2, str(tmp_path / "init"), str(tmp_path), str(user_project)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{rank}.pt") for rank in range(2)]
    single = build_trainer(_ddp_config(batch_size=16), device="cpu")
    single.fit()
    assert ranks[0]["sample"] == ranks[1]["sample"] == single.state.timestamp.sample == 128
    for key, value in single.state.model.state_dict().items():
        torch.testing.assert_close(ranks[0]["weights"][key], ranks[1]["weights"][key], rtol=0, atol=0)
        torch.testing.assert_close(ranks[0]["weights"][key], value, rtol=1e-5, atol=1e-6)


def test_a_data_modules_loaders_are_sharded_under_ddp_and_kept_otherwise(user_project):
    from my_project.data import ColourSquaresModule

    from raycomp.data.user_data import module_loaders

    module = ColourSquaresModule(batch_size=4, num_train=10, num_eval=6, size=4)
    kept_train, _ = module_loaders(module, world=1, rank=0, seed=0)
    assert not isinstance(kept_train.sampler, DistributedSampler) and kept_train.batch_size == 4
    shards = [module_loaders(module, world=2, rank=rank, seed=0) for rank in range(2)]
    train_indices = [list(train.sampler) for train, _ in shards]
    assert all(isinstance(train.sampler, DistributedSampler) and train.batch_size == 4 for train, _ in shards)
    assert sorted(train_indices[0] + train_indices[1]) == list(range(10))  # each sample on one rank
    assert [len(list(val.sampler)) for _, val in shards] == [3, 3]


def test_a_timm_model_by_class_path_trains_a_few_steps_with_blurpool(user_project):
    pytest.importorskip("timm")
    model = {"class_path": "timm.create_model", "init_args": {"model_name": "resnet18", "num_classes": 3}}
    trainer = build_trainer(_config(model=model, max_duration="2ba", algorithms={"blurpool": {}}), device="cpu")
    trainer.fit()
    assert trainer.state.timestamp.batch == 2
    assert any(isinstance(module, BlurConv2d) for module in trainer.state.model.modules())


def test_a_hugging_face_model_built_from_a_config_trains_with_fused_layernorm(user_project):
    pytest.importorskip("transformers")
    vit = {"image_size": 8, "patch_size": 4, "num_labels": 3, "hidden_size": 16, "num_hidden_layers": 1,
           "num_attention_heads": 2, "intermediate_size": 32}  # fmt: skip
    model = {"class_path": "raycomp.models.hugging_face.from_config",
             "init_args": {"model_class": "transformers.ViTForImageClassification", "config": vit}}  # fmt: skip
    config = _config(model=model, max_duration="2ba", algorithms={"fused_layernorm": {}})
    trainer = build_trainer(config, device="cpu")
    trainer.fit()
    assert trainer.state.timestamp.batch == 2 and not any(
        type(module) is torch.nn.LayerNorm for module in trainer.state.model.modules()
    )  # each LayerNorm found and replaced
