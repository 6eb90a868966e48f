"""Models the Trainer can drive, by name: ``build_model("cnn" | "cnn_plain" | "resnet20" | "resnet56")``."""

from __future__ import annotations

from collections.abc import Callable

from torch import nn

from raycomp.models.base import ClassifierModel, RaycompModel
from raycomp.models.cnn import SmallCNN
from raycomp.models.resnet_cifar import ResNetCIFAR, resnet20, resnet56, resnet_cifar

_BUILDERS: dict[str, Callable[[int], nn.Module]] = {
    "cnn": lambda num_classes: SmallCNN(num_classes=num_classes),
    "cnn_plain": lambda num_classes: SmallCNN(num_classes=num_classes, dropout=0.0, norm=False),
    "resnet20": resnet20,
    "resnet56": resnet56,
}
MODEL_NAMES: tuple[str, ...] = tuple(_BUILDERS)


def build_model(name: str, num_classes: int = 10) -> ClassifierModel:
    """The named network wrapped in a cross-entropy ``ClassifierModel``, so configs name models by string."""
    try:
        builder = _BUILDERS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}; valid names are {', '.join(MODEL_NAMES)}") from None
    return ClassifierModel(builder(num_classes))


__all__ = [
    "MODEL_NAMES",
    "ClassifierModel",
    "RaycompModel",
    "ResNetCIFAR",
    "SmallCNN",
    "build_model",
    "resnet20",
    "resnet56",
    "resnet_cifar",
]
