import pickle

import numpy as np
import pytest
import torch
from helpers import tiny_loader, tiny_model
from PIL import Image
from torch.utils.data import TensorDataset

from raycomp import Event, Trainer
from raycomp.algorithms import RandAugment
from raycomp.algorithms.randaugment import OPERATIONS, ExampleTransformed
from raycomp.base.torchvision_shim import import_torchvision
from raycomp.config import ConfigError, ExperimentConfig, load_experiment
from raycomp.config.recipe import build_algorithms, build_trainer
from raycomp.data import build_datasets
from raycomp.functional import RandAugmentTransform, randaugment, randaugment_image

datasets = import_torchvision("torchvision.datasets")
transforms = import_torchvision("torchvision.transforms")
v2 = import_torchvision("torchvision.transforms.v2")


def pil_image(seed: int = 0, size: int = 16) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, (size, size, 3), dtype=np.uint8)
    return Image.fromarray(pixels)


def test_the_sets_are_composers_thirteen_operations_by_torchvisions_names():
    torchvision_ops = set(v2.RandAugment._AUGMENTATION_SPACE)
    assert len(OPERATIONS["all"]) == 13 and set(OPERATIONS["all"]) <= torchvision_ops - {"Identity"}
    assert set(OPERATIONS["all"]) - set(OPERATIONS["safe"]) == {"Color", "Contrast", "Brightness", "Sharpness"}
    assert OPERATIONS["original"] == OPERATIONS["all"]
    chain = RandAugmentTransform(augmentation_set="safe").chain
    assert [list(op._AUGMENTATION_SPACE) for op in chain] == [list(OPERATIONS["safe"])] * 2


def test_each_operation_draws_its_strength_up_to_severity_in_tenths():
    [operation] = RandAugmentTransform(severity=3, depth=1).chain
    image = torch.zeros(3, 8, 8, dtype=torch.uint8)
    drawn = set()
    for _ in range(300):
        operation(image)
        drawn.add(operation.magnitude)
    assert min(drawn) >= 1 and max(drawn) == 30 and len(drawn) > 20  # 0.1 .. 3.0 on the 0..10 scale
    [still] = RandAugmentTransform(severity=0, depth=1).chain
    still(image)
    assert still.magnitude == 0


def test_depth_is_the_number_of_chained_operations_and_zero_changes_nothing():
    assert len(RandAugmentTransform(depth=3).chain) == 3
    image = torch.rand(3, 8, 8)
    assert RandAugmentTransform(depth=0)(image) is image


def test_takes_pil_images_integer_and_float_tensors_and_keeps_their_type():
    torch.manual_seed(0)
    assert randaugment_image(pil_image()).size == (16, 16)
    uint8 = torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8)
    assert randaugment_image(uint8).dtype == torch.uint8
    unit = torch.rand(3, 16, 16)
    out = randaugment_image(unit, severity=10, depth=3)
    assert out.dtype == torch.float32 and out.min() >= 0 and out.max() <= 1


def test_normalized_images_are_augmented_on_their_own_range_not_clipped_to_0_1():
    torch.manual_seed(0)
    image = torch.randn(3, 16, 16) * 2
    outs = [randaugment_image(image, severity=5, depth=2) for _ in range(20)]
    for out in outs:
        assert image.min() - 1e-5 <= out.min() and out.max() <= image.max() + 1e-5
    assert all((out < 0).any() for out in outs)  # torchvision alone would clamp every value to [0, 1]
    assert any(not torch.allclose(out, image) for out in outs)


def test_the_same_seed_draws_the_same_augmentation():
    image = torch.randint(0, 256, (3, 16, 16), dtype=torch.uint8)
    torch.manual_seed(3)
    first = [randaugment_image(image) for _ in range(5)]
    torch.manual_seed(3)
    assert all(torch.equal(a, randaugment_image(image)) for a in first)


def test_usable_inside_a_torchvision_compose_and_picklable_for_dataloader_workers():
    pipeline = transforms.Compose([randaugment(), transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.25,) * 3)])
    out = pipeline(pil_image())
    assert out.shape == (3, 16, 16) and out.dtype == torch.float32
    assert v2.Compose([randaugment(severity=4), v2.PILToTensor()])(pil_image()).dtype == torch.uint8
    again = pickle.loads(pickle.dumps(pipeline))
    assert isinstance(again.transforms[0], RandAugmentTransform) and again(pil_image()).shape == (3, 16, 16)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (dict(severity=11), "for RandAugment\nseverity\n  Input should be less than or equal to 10"),
        (dict(depth=-1), "for RandAugment\ndepth\n  Input should be greater than or equal to 0"),
        (dict(augmentation_set="augmentations_all"), "for RandAugment\naugmentation_set\n  Input should be 'all'"),
        (dict(severity=9.5), "for RandAugment\nseverity\n  Input should be a valid integer"),
    ],
)
def test_constructor_validates(kwargs, message):
    with pytest.raises(ValueError, match=message):
        RandAugment(**kwargs)
    with pytest.raises(ValueError, match=message.replace("RandAugment", "RandAugmentTransform")):
        RandAugmentTransform(**kwargs)


def test_runs_on_init_and_leaves_a_tensor_dataset_untouched():
    loader = tiny_loader()
    algorithm = RandAugment(severity=5, depth=1)
    trainer = Trainer(tiny_model(), loader, "1ep", algorithms=[algorithm], device="cpu", seed=0)
    assert [e for e in Event if algorithm.match(e, trainer.state)] == [Event.INIT]
    augmented = trainer.state.train_dataloader
    assert isinstance(augmented.dataset, ExampleTransformed) and augmented.dataset.dataset is loader.dataset
    assert augmented.sampler is loader.sampler and augmented.batch_size == loader.batch_size
    assert len(augmented) == len(loader) and not hasattr(loader.dataset, "transform")
    (x, y), (x0, y0) = next(iter(augmented)), next(iter(loader))
    assert torch.equal(y, y0) and x.shape == x0.shape and not torch.allclose(x, x0)  # same order, new pixels
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)


def test_a_vision_dataset_gets_the_transform_before_its_conversion_to_tensor_once():
    pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.25,) * 3)])
    dataset = datasets.FakeData(size=16, image_size=(3, 8, 8), num_classes=4, transform=pipeline)
    loader = torch.utils.data.DataLoader(dataset, batch_size=8)
    for _ in range(2):  # a second Trainer over the same dataset does not augment it twice
        trainer = Trainer(tiny_model(), loader, "1ep", algorithms=[RandAugment(depth=1)], device="cpu", seed=0)
    assert trainer.state.train_dataloader is loader
    assert [type(t) for t in pipeline.transforms] == [RandAugmentTransform, transforms.ToTensor, transforms.Normalize]
    trainer.fit()
    assert trainer.state.timestamp.batch == 2


def test_refuses_a_train_dataloader_it_cannot_augment_per_example():
    batches = [(torch.randn(4, 3, 8, 8), torch.zeros(4, dtype=torch.long))]
    with pytest.raises(TypeError, match="map-style dataset; the train dataloader is list"):
        Trainer(tiny_model(), batches, "1ba", algorithms=[RandAugment()], device="cpu")


def test_experiment_config_names_it_and_checks_its_arguments(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text("algorithms:\n  randaugment: {severity: 5, depth: 1, augmentation_set: safe}\n")
    [algorithm] = build_algorithms(load_experiment(str(path)))
    assert isinstance(algorithm, RandAugment) and (algorithm.severity, algorithm.depth) == (5, 1)
    path.write_text("algorithms:\n  randaugment:\n    magnitude: 9\n    depth: -1\n")
    with pytest.raises(ConfigError) as info:
        load_experiment(str(path))
    assert [problem.split(": ", 2)[1:] for problem in info.value.problems] == [
        [
            "algorithms.randaugment.magnitude",
            "unknown argument of RandAugment (valid arguments: severity, depth, augmentation_set)",
        ],
        ["algorithms.randaugment.depth", "must be >= 0, got -1 (default: 2)"],
    ]


def test_a_config_run_on_the_synthetic_data_trains_with_it_and_leaves_the_shared_set_alone():
    small = {"data": {"num_train": 64, "num_test": 32, "batch_size": 32}, "max_duration": "1ep"}
    config = ExperimentConfig.from_dict({**small, "algorithms": {"randaugment": {"severity": 6, "depth": 2}}})
    trainer = build_trainer(config, device="cpu")
    train_set, _ = build_datasets("synthetic", num_train=64, num_test=32, seed=config.seed)
    assert trainer.state.train_dataloader.dataset.dataset is train_set  # the process-wide synthetic set
    trainer.fit()
    assert trainer.state.timestamp.batch == 2 and torch.isfinite(trainer.state.loss)
    assert "eval/accuracy" in trainer.state.eval_metrics
    assert not hasattr(train_set, "transform")
    baseline = build_trainer(ExperimentConfig.from_dict(small), device="cpu")
    assert baseline.state.train_dataloader.dataset is train_set  # the next trial sees the data unaugmented


def test_tensor_dataset_view_transforms_only_the_input():
    view = ExampleTransformed(TensorDataset(torch.zeros(2, 3), torch.tensor([1, 2])), lambda x: x + 1)
    assert len(view) == 2 and [(x.tolist(), int(y)) for x, y in view] == [([1.0] * 3, 1), ([1.0] * 3, 2)]
