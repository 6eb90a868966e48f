"""Hugging Face models built from a config in YAML, with random weights: nothing is downloaded.

A ``transformers`` model class takes a config object, which YAML cannot write; ``from_config`` builds it::

    model:
      class_path: raycomp.models.hugging_face.from_config
      init_args:
        model_class: transformers.ViTForImageClassification
        config: {image_size: 32, patch_size: 4, num_labels: 10, hidden_size: 64, num_hidden_layers: 2,
                 num_attention_heads: 2, intermediate_size: 128}

The model's output object carries ``logits``, which raycomp's classifier wrapper reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from torch import nn

from raycomp.base.import_path import import_callable


def from_config(model_class: str, config: Mapping[str, Any] | None = None) -> nn.Module:
    """``model_class`` (an import path) built from ``model_class.config_class(**config)``."""
    cls = import_callable(model_class)
    config_class = getattr(cls, "config_class", None)
    if config_class is None:
        raise TypeError(f"{model_class} has no config_class: it is not a Hugging Face transformers model class")
    return cls(config_class(**dict(config or {})))
