"""Models the Trainer can drive, by name: ``build_model("cnn" | "cnn_plain" | "resnet20" | "resnet56" | "gpt" |
"gpt2_hf", ...)``.

Classifiers (``CLASSIFIER_NAMES``) are built from ``num_classes`` and wrapped in a cross-entropy
``ClassifierModel``; language models (``LANGUAGE_MODEL_NAMES``, for the text datasets) from a ``GPTConfig``
(vocabulary, sequence length and sizes) and wrapped in a per-sequence-loss ``LanguageModel``. A config's model
is ``raycomp.config.recipe.build_model_for(config)``, which takes the sequence length from ``data.seq_len``.
"""

from __future__ import annotations

from raycomp.base.lazy import lazy_attributes

# The names a config may give (``model.name``), here and not beside their builders (``registry.py``): validating a
# config reads them, and loading it imports no model code (issue 56). tests/models/test_cnn.py checks they agree.
CLASSIFIER_NAMES: tuple[str, ...] = ("cnn", "cnn_plain", "resnet20", "resnet56")
LANGUAGE_MODEL_NAMES: tuple[str, ...] = ("gpt", "gpt2_hf")
MODEL_NAMES: tuple[str, ...] = CLASSIFIER_NAMES + LANGUAGE_MODEL_NAMES

_WHERE = {  # the rest of the package, imported when first asked for
    "build_model": "raycomp.models.registry",
    "build_user_model": "raycomp.models.registry",
    "ClassifierModel": "raycomp.loop.model",
    "RaycompModel": "raycomp.loop.model",
    "as_raycomp_model": "raycomp.loop.model",
    "SmallCNN": "raycomp.models.cnn",
    "GPT": "raycomp.models.gpt",
    "GPTConfig": "raycomp.models.gpt",
    "LanguageModel": "raycomp.models.language",
    "ResNetCIFAR": "raycomp.models.resnet_cifar",
    "resnet20": "raycomp.models.resnet_cifar",
    "resnet56": "raycomp.models.resnet_cifar",
    "resnet_cifar": "raycomp.models.resnet_cifar",
}


__getattr__ = lazy_attributes(__name__, _WHERE)


__all__ = ["CLASSIFIER_NAMES", "LANGUAGE_MODEL_NAMES", "MODEL_NAMES", *_WHERE]
