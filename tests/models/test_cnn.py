import pytest
import torch

from raycomp.models import CLASSIFIER_NAMES, LANGUAGE_MODEL_NAMES, MODEL_NAMES, ClassifierModel, SmallCNN, build_model


@pytest.mark.parametrize("size", [32, 16, 8])
def test_small_cnn_takes_any_size_from_8(size: int) -> None:
    model = SmallCNN(num_classes=7).eval()
    assert model(torch.randn(4, 3, size, size)).shape == (4, 7)


def test_small_cnn_has_batchnorm_and_dropout() -> None:
    kinds = {type(m) for m in SmallCNN().modules()}
    assert torch.nn.BatchNorm2d in kinds
    assert torch.nn.Dropout in kinds


def test_small_cnn_in_channels() -> None:
    assert SmallCNN(num_classes=3, in_channels=1)(torch.randn(2, 1, 16, 16)).shape == (2, 3)


@pytest.mark.parametrize("name", CLASSIFIER_NAMES)
def test_build_model_wraps_in_classifier(name: str) -> None:
    model = build_model(name, num_classes=5).eval()
    assert isinstance(model, ClassifierModel)
    batch = (torch.randn(2, 3, 32, 32), torch.tensor([0, 4]))
    outputs = model(batch)
    assert outputs.shape == (2, 5)
    assert model.loss(outputs, batch, reduction="none").shape == (2,)
    assert model.loss(outputs, batch).ndim == 0


def test_build_model_unknown_name_lists_valid_names() -> None:
    with pytest.raises(ValueError, match="'vgg16'") as excinfo:
        build_model("vgg16")
    for name in MODEL_NAMES:
        assert name in str(excinfo.value)


def test_model_names() -> None:
    assert CLASSIFIER_NAMES == ("cnn", "cnn_plain", "resnet20", "resnet56")
    assert LANGUAGE_MODEL_NAMES == ("gpt", "gpt2_hf")
    assert MODEL_NAMES == CLASSIFIER_NAMES + LANGUAGE_MODEL_NAMES


def test_plain_cnn_has_no_batch_coupling_layers():
    model = build_model("cnn_plain")
    assert not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules())
    assert all(m.p == 0 for m in model.modules() if isinstance(m, torch.nn.Dropout))
    inputs = torch.randn(6, 3, 32, 32)
    model.train()
    net = model.module
    assert torch.allclose(net(inputs)[:3], net(inputs[:3]), atol=1e-6)  # a sample's output ignores its batch


def test_the_names_a_config_reads_are_the_builders_names():
    """``raycomp.models`` keeps the names apart from their builders, so loading a config imports no model code."""
    from raycomp.models import registry

    assert tuple(registry._CLASSIFIERS) == CLASSIFIER_NAMES
    assert tuple(registry._LANGUAGE_MODELS) == LANGUAGE_MODEL_NAMES
