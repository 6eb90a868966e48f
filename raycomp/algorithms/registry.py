"""The algorithms an experiment config can name: YAML name -> class, and the declaration of its arguments.

Add an algorithm with one line here; its constructor's signature is all the config needs to check its
arguments (see ``raycomp.algorithms.arguments``). Your own algorithms: ``register("name", cls)`` in a
module named in ``RAYCOMP_PLUGINS`` (comma-separated modules, imported with this registry in every
process: the CLI's and each Ray worker's, which inherit the environment).
"""

from __future__ import annotations

import importlib
import os

from raycomp.algorithms.alibi import Alibi
from raycomp.algorithms.arguments import Arguments, arguments_model
from raycomp.algorithms.blurpool import BlurPool
from raycomp.algorithms.channels_last import ChannelsLast
from raycomp.algorithms.cutmix import CutMix
from raycomp.algorithms.ema import EMA
from raycomp.algorithms.fused_layernorm import FusedLayerNorm
from raycomp.algorithms.glu import GatedLinearUnits
from raycomp.algorithms.gradient_clipping import GradientClipping
from raycomp.algorithms.label_smoothing import LabelSmoothing
from raycomp.algorithms.layer_freezing import LayerFreezing
from raycomp.algorithms.mixup import MixUp
from raycomp.algorithms.progressive_resizing import ProgressiveResizing
from raycomp.algorithms.randaugment import RandAugment
from raycomp.algorithms.selective_backprop import SelectiveBackprop
from raycomp.algorithms.seq_length_warmup import SeqLengthWarmup
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
    "randaugment": RandAugment,
    "alibi": Alibi,
    "gated_linear_units": GatedLinearUnits,
    "fused_layernorm": FusedLayerNorm,
    "seq_length_warmup": SeqLengthWarmup,
}


PLUGINS_ENV = "RAYCOMP_PLUGINS"


def register(name: str, cls: type[Algorithm]) -> None:
    """Makes ``cls`` available in experiment YAML as ``algorithms.<name>``."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise TypeError(f"register({name!r}, ...) needs an Algorithm subclass, got {cls!r}")
    if ALGORITHMS.get(name, cls) is not cls:
        raise ValueError(f"an algorithm is registered as {name!r} already ({ALGORITHMS[name].__qualname__})")
    ALGORITHMS[name] = cls


def algorithm_class(name: str) -> type[Algorithm]:
    """The Algorithm class registered as ``name``; a KeyError for names not in ``ALGORITHMS``."""
    return ALGORITHMS[name]


def arguments_schema(name: str) -> type[Arguments]:
    """The pydantic model of ``name``'s constructor arguments: field names, types, ranges, defaults and rules."""
    return arguments_model(ALGORITHMS[name])


def build_algorithm(name: str, arguments: Arguments) -> Algorithm:
    """The algorithm registered as ``name``, built with its validated ``arguments`` (the config's)."""
    return ALGORITHMS[name](**arguments.given())


def _import_plugins() -> None:
    for module in filter(None, (name.strip() for name in os.environ.get(PLUGINS_ENV, "").split(","))):
        importlib.import_module(module)


_import_plugins()
