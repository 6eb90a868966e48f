"""The built-in networks by name (``MODEL_NAMES``, in the package's light ``__init__``), and the user's by
``class_path``: what ``raycomp.config.recipe`` builds a config's model with."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from torch import nn

from raycomp.loop.model import ClassifierModel, RaycompModel, as_raycomp_model
from raycomp.models import MODEL_NAMES
from raycomp.models.cnn import SmallCNN
from raycomp.models.gpt import GPT, GPTConfig
from raycomp.models.language import LanguageModel
from raycomp.models.resnet_cifar import resnet20, resnet56

_CLASSIFIERS: dict[str, Callable[[int], nn.Module]] = {
    "cnn": lambda num_classes: SmallCNN(num_classes=num_classes),
    "cnn_plain": lambda num_classes: SmallCNN(num_classes=num_classes, dropout=0.0, norm=False),
    "resnet20": resnet20,
    "resnet56": resnet56,
}


def _hf_gpt2(config: GPTConfig) -> LanguageModel:
    from raycomp.models.hf_gpt2 import hf_gpt2  # transformers is an optional extra: imported only when built

    return hf_gpt2(config)


_LANGUAGE_MODELS: dict[str, Callable[[GPTConfig], RaycompModel]] = {
    "gpt": lambda config: LanguageModel(GPT(config)),
    "gpt2_hf": _hf_gpt2,
}


def build_model(name: str, num_classes: int = 10, *, gpt: GPTConfig | None = None) -> RaycompModel:
    """The named network as a ``RaycompModel``: classifiers take ``num_classes``, language models ``gpt``."""
    if name in _CLASSIFIERS:
        return ClassifierModel(_CLASSIFIERS[name](num_classes))
    if name in _LANGUAGE_MODELS:
        return _LANGUAGE_MODELS[name](gpt or GPTConfig())
    raise ValueError(f"unknown model {name!r}; valid names are {', '.join(MODEL_NAMES)}")


def build_user_model(class_path: str, init_args: Mapping[str, Any]) -> RaycompModel:
    """The model ``class_path`` names, called with ``init_args`` (``model.class_path``): a plain module becomes a
    classifier (``as_raycomp_model``)."""
    from raycomp.base.import_path import import_callable

    return as_raycomp_model(import_callable(class_path)(**init_args), f"{class_path} returned")
