"""The algorithms an experiment config can name: YAML name -> class, and the declaration of its arguments.

Add an algorithm with one line here; its constructor's signature is all the config needs to check its
arguments (see ``raycomp.algorithms.arguments``).
"""

from __future__ import annotations

from pydantic import BaseModel

from raycomp.algorithms.arguments import arguments_model
from raycomp.algorithms.blurpool import BlurPool
from raycomp.algorithms.channels_last import ChannelsLast
from raycomp.algorithms.cutmix import CutMix
from raycomp.algorithms.ema import EMA
from raycomp.algorithms.gradient_clipping import GradientClipping
from raycomp.algorithms.label_smoothing import LabelSmoothing
from raycomp.algorithms.layer_freezing import LayerFreezing
from raycomp.algorithms.mixup import MixUp
from raycomp.algorithms.progressive_resizing import ProgressiveResizing
from raycomp.algorithms.selective_backprop import SelectiveBackprop
from raycomp.core.algorithm import Algorithm

# In the order error messages list them.
ALGORITHMS: dict[str, type[Algorithm]] = {
    "selective_backprop": SelectiveBackprop,
    "label_smoothing": LabelSmoothing,
    "mixup": MixUp,
    "cutmix": CutMix,
    "progressive_resizing": ProgressiveResizing,
    "channels_last": ChannelsLast,
    "blurpool": BlurPool,
    "layer_freezing": LayerFreezing,
    "gradient_clipping": GradientClipping,
    "ema": EMA,
}


def algorithm_class(name: str) -> type[Algorithm]:
    """The Algorithm class registered as ``name``; a KeyError for names not in ``ALGORITHMS``."""
    return ALGORITHMS[name]


def arguments_schema(name: str) -> type[BaseModel]:
    """The pydantic model of ``name``'s constructor arguments: field names, types, ranges and defaults."""
    return arguments_model(ALGORITHMS[name])
