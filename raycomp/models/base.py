"""Composer's path for the model interface (``composer.models.base.ComposerModel``): ``RaycompModel`` and
``ClassifierModel`` are defined in ``raycomp.loop.model``, beside the Trainer that drives them, and kept importable
here, where the built-in networks that implement them live."""

from raycomp.loop.model import Batch, ClassifierModel, RaycompModel, class_labels

__all__ = ["Batch", "ClassifierModel", "RaycompModel", "class_labels"]
