"""The algorithms as plain functions, for use in your own training loop (``import raycomp.functional as rf``).

The RandAugment names import torchvision, so they are loaded on first use: ``import raycomp.functional``
stays as quick as the rest of it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from raycomp.algorithms._targets import ensure_targets_one_hot
from raycomp.algorithms.alibi import apply_alibi
from raycomp.algorithms.blurpool import apply_blurpool
from raycomp.algorithms.blurpool_layers import blur_2d, blurmax_pool2d
from raycomp.algorithms.channels_last import apply_channels_last
from raycomp.algorithms.cutmix import cutmix, cutmix_batch
from raycomp.algorithms.ema import compute_ema
from raycomp.algorithms.fused_layernorm import apply_fused_layernorm
from raycomp.algorithms.glu import apply_gated_linear_units
from raycomp.algorithms.gradient_clipping import apply_gradient_clipping
from raycomp.algorithms.label_smoothing import smooth_labels
from raycomp.algorithms.layer_freezing import freeze_layers
from raycomp.algorithms.loss_selection import select_using_loss, should_selective_backprop
from raycomp.algorithms.mixup import mixup_batch
from raycomp.algorithms.progressive_resizing import resize_batch
from raycomp.algorithms.seq_length_warmup import set_batch_sequence_length
from raycomp.loop.batchnorm import recalibrate_batchnorm

if TYPE_CHECKING:
    from raycomp.algorithms.randaugment_transform import RandAugmentTransform, randaugment, randaugment_image

_TORCHVISION_NAMES = {"RandAugmentTransform", "randaugment", "randaugment_image"}

__all__ = [
    "RandAugmentTransform",
    "apply_alibi",
    "apply_blurpool",
    "apply_channels_last",
    "apply_fused_layernorm",
    "apply_gated_linear_units",
    "apply_gradient_clipping",
    "blur_2d",
    "blurmax_pool2d",
    "compute_ema",
    "cutmix",
    "cutmix_batch",
    "ensure_targets_one_hot",
    "freeze_layers",
    "mixup_batch",
    "randaugment",
    "randaugment_image",
    "recalibrate_batchnorm",
    "resize_batch",
    "select_using_loss",
    "set_batch_sequence_length",
    "should_selective_backprop",
    "smooth_labels",
]


def __getattr__(name: str) -> Any:
    if name in _TORCHVISION_NAMES:
        return getattr(importlib.import_module("raycomp.algorithms.randaugment_transform"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
