"""CutMix (Yun et al. 2019): paste a box from another example of the batch, and mix the targets by area.

Unlike MixUp's blend every pixel stays a real pixel of some image, so the network must recognise objects
from parts of them (like Cutout) while no training signal is thrown away. One box per batch, of area
fraction ``1 - lambda``, ``lambda ~ Beta(alpha, alpha)``, centred uniformly at random and clipped at the
borders; the targets (or losses) are then weighted by the areas actually kept and pasted, as Composer.

Events and the ``interpolate_loss`` choice are MixUp's (see ``raycomp.algorithms._pair_mixing``): BEFORE_FORWARD
mixes, BEFORE_LOSS/AFTER_LOSS mix and restore the targets, or AFTER_LOSS interpolates the loss.

Differences from Composer, on purpose: ``length`` gives the box a side of ``length * H`` by
``length * W`` as Composer documents (Composer turns it into the area to keep, so its box is another size);
``alpha`` must be > 0 (Composer's ``alpha=0`` pastes boxes of the full image size); the RNG is torch's.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

import torch
from pydantic import Field

from raycomp.algorithms._pair_mixing import _PairMixing
from raycomp.algorithms.arguments import checked_arguments

BBox = tuple[int, int, int, int]


def cutmix_batch(
    input: torch.Tensor,
    target: torch.Tensor,
    length: float | None = None,
    alpha: float = 1.0,
    bbox: BBox | None = None,
    indices: torch.Tensor | None = None,
    uniform_sampling: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, float, BBox]:
    """Paste ``input[indices]`` into ``input`` inside one box; returns the batch, ``target[indices]``, the area
    fraction of the original that is kept, and the box.

    ``bbox`` is ``(x1, y1, x2, y2)`` as Composer indexes it: rows ``x1:x2`` of dim -2 (height), columns
    ``y1:y2`` of dim -1 (width). Without it the box is drawn: ``length`` (a fraction of H and W) sets its
    sides, else its area is ``1 - Beta(alpha, alpha)``. ``uniform_sampling`` places it so every pixel is
    equally likely to be covered (the paper's placement favours the centre).
    """
    if bbox is not None and length is not None:
        raise ValueError(f"Give either length or bbox, not both; got length={length}, bbox={bbox}")
    if input.dim() < 3:
        raise ValueError(f"CutMix needs inputs of shape (N, ..., H, W), got {tuple(input.shape)}")
    height, width = input.shape[-2], input.shape[-1]
    if indices is None:
        indices = torch.randperm(input.shape[0], device=input.device)
    if bbox is None:
        if length is None:
            cut_ratio = math.sqrt(1.0 - _gen_cutmix_coef(alpha))
        elif 0 <= length <= 1:
            cut_ratio = length
        else:
            raise ValueError(f"length must be in [0, 1] (a fraction of the height and width), got {length}")
        bbox = _rand_bbox(height, width, cut_ratio, uniform_sampling)
    x1, y1, x2, y2 = (int(v) for v in bbox)
    if not (0 <= x1 <= x2 <= height and 0 <= y1 <= y2 <= width):
        raise ValueError(f"bbox must satisfy 0 <= x1 <= x2 <= {height}, 0 <= y1 <= y2 <= {width}, got {bbox}")
    mixed = input.clone()
    mixed[..., x1:x2, y1:y2] = input[indices, ..., x1:x2, y1:y2]
    kept_area = 1.0 - (x2 - x1) * (y2 - y1) / (height * width)
    return mixed, target[indices], kept_area, (x1, y1, x2, y2)


def cutmix(
    input: torch.Tensor, target: torch.Tensor, alpha: float = 1.0, num_classes: int | None = None
) -> torch.Tensor:
    """The form Composer's algorithms page uses in a training loop (``data = cf.cutmix(data, target, ...)``):
    ``input`` with one box pasted from a permuted copy of the batch.

    Only the mixed inputs come back, so the loss that follows sees the original targets: CutMix as an input
    augmentation, labels unmixed. To weight the two labels by area, use ``cutmix_batch``, which also returns
    the permuted targets and the kept area. ``num_classes`` (Composer one-hot encoded targets with it) checks
    that integer targets are class ids below it.
    """
    if num_classes is not None and not target.is_floating_point() and target.numel():
        low, high = int(target.min()), int(target.max())
        if low < 0 or high >= num_classes:
            raise ValueError(f"targets must be class ids in [0, {num_classes}), got values from {low} to {high}")
    mixed, _, _, _ = cutmix_batch(input, target, alpha=alpha)
    return mixed


def _gen_cutmix_coef(alpha: float) -> float:
    """``lambda ~ Beta(alpha, alpha)``: the nominal area fraction to keep."""
    if alpha <= 0:
        raise ValueError(f"alpha must be > 0, got {alpha}")
    return float(torch.distributions.Beta(float(alpha), float(alpha)).sample())


def _rand_bbox(height: int, width: int, cut_ratio: float, uniform_sampling: bool = False) -> BBox:
    """A box of sides ``cut_ratio * (height, width)``, placed at random and clipped to the image."""
    cut_h, cut_w = int(height * cut_ratio), int(width * cut_ratio)
    x1, y1 = _start(height, cut_h, uniform_sampling), _start(width, cut_w, uniform_sampling)
    return max(x1, 0), max(y1, 0), min(x1 + cut_h, height), min(y1 + cut_w, width)


def _start(size: int, cut: int, uniform_sampling: bool) -> int:
    """The box's first index along one axis, before clipping.

    The paper draws the centre uniformly over the image, so border pixels are covered less often; drawing
    the start uniformly over every position that overlaps the image covers each pixel with equal odds.
    """
    if cut == 0:
        return 0
    if uniform_sampling:
        return int(torch.randint(1 - cut, size, ()))
    return int(torch.randint(0, size, ())) - cut // 2


class CutMix(_PairMixing):
    """Pastes a box from a permuted batch on BEFORE_FORWARD; mixes targets or the loss by area, as MixUp.

    ``alpha`` is the Beta pseudocount for the kept area (1, the paper's, makes it uniform);
    ``interpolate_loss`` interpolates the two losses instead of the targets; ``uniform_sampling`` places the
    box so that every pixel is equally likely to be pasted over. After each batch ``bbox``, ``indices`` and
    ``permuted_weight`` (the pasted area fraction) hold what was used.
    """

    # the values a recipe search (raycomp find) tries beside the defaults
    tuned_arguments: ClassVar[Mapping[str, tuple[Any, ...]]] = {"alpha": (0.5, 1.0)}
    incompatible_with: ClassVar[frozenset[str]] = frozenset({"mixup"})  # both mix the batch: one at a time

    @checked_arguments
    def __init__(
        self, alpha: Annotated[float, Field(gt=0)] = 1.0, interpolate_loss: bool = False, uniform_sampling: bool = False
    ) -> None:
        self.alpha = alpha
        self.uniform_sampling = uniform_sampling
        self.bbox: BBox | None = None
        self._init_mixing(interpolate_loss)

    def mix(self, input: torch.Tensor, target: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, float]:
        indices = torch.randperm(input.shape[0], device=input.device)
        mixed, _, kept_area, self.bbox = cutmix_batch(
            input, target, alpha=self.alpha, indices=indices, uniform_sampling=self.uniform_sampling
        )
        return mixed, indices, 1.0 - kept_area
