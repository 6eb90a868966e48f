"""Speed-up methods, each a pure function (see ``raycomp.functional``) and a thin Algorithm."""

from raycomp.algorithms.alibi import Alibi
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

__all__ = [
    "EMA",
    "Alibi",
    "BlurPool",
    "ChannelsLast",
    "CutMix",
    "FusedLayerNorm",
    "GatedLinearUnits",
    "GradientClipping",
    "LabelSmoothing",
    "LayerFreezing",
    "MixUp",
    "ProgressiveResizing",
    "RandAugment",
    "SelectiveBackprop",
    "SeqLengthWarmup",
]
