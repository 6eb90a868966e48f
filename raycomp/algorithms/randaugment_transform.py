"""RandAugment's image transform, built on ``torchvision.transforms.v2.RandAugment`` (this module imports torchvision).

Composer's arguments map onto torchvision's operations: ``depth`` operations are chained, each drawn from
``augmentation_set`` (see ``raycomp.algorithms.randaugment.OPERATIONS``) and each at a strength drawn
uniformly from 0.1 to ``severity`` in steps of 0.1, as Composer samples it ("intensity sampled uniformly
from 0.1 to severity"), on torchvision's scale where 10 is its strongest (30 degrees of rotation, a shear
of 0.3, a translation of 0.45 of the side, 4 bits of posterization). The RandAugment paper, and torchvision
by itself, use one fixed strength instead.

Inputs are what torchvision takes (PIL images, uint8 tensors, float tensors in [0, 1]), plus float tensors
outside [0, 1], such as normalized images: those are mapped linearly onto [0, 1] by their own minimum and
maximum, augmented, and mapped back, where torchvision would clip them. One call draws one chain, so a
batch given at once gets the same operations (torchvision's rule); per-image draws need per-image calls,
which is what a dataset's ``transform`` makes.
"""

from __future__ import annotations

from typing import Annotated, Any, TypeVar

import torch
from pydantic import Field

from raycomp.algorithms.arguments import checked_arguments
from raycomp.algorithms.randaugment import OPERATIONS, AugmentationSet
from raycomp.base.torchvision_shim import import_torchvision

v2 = import_torchvision("torchvision.transforms.v2")

Image = TypeVar("Image")
_TENTHS = 10  # strengths are drawn in tenths of a severity step: torchvision magnitude bins 0.0, 0.1, ..., 10.0


class _OneOperation(v2.RandAugment):
    """One of ``operations``, chosen per call, at a strength drawn per call from (0, ``severity``]."""

    def __init__(self, severity: int, operations: tuple[str, ...]) -> None:
        super().__init__(num_ops=1, magnitude=0, num_magnitude_bins=10 * _TENTHS + 1)
        self.severity = severity
        self.operations = operations

    @property
    def _AUGMENTATION_SPACE(self) -> dict[str, Any]:  # torchvision's name: its forward reads it
        # A property, not a dict of torchvision's lambdas on the instance, so the transform pickles
        # (DataLoader workers started with spawn receive it pickled).
        return {name: v2.RandAugment._AUGMENTATION_SPACE[name] for name in self.operations}

    def forward(self, *inputs: Any) -> Any:
        levels = self.severity * _TENTHS
        self.magnitude = int(torch.randint(1, levels + 1, ())) if levels else 0
        return super().forward(*inputs)


class RandAugmentTransform(torch.nn.Module):
    """Composer's RandAugmentTransform: ``depth`` operations from ``augmentation_set``, each up to ``severity``.

    Usable wherever a torchvision transform is, e.g. first in ``transforms.Compose([..., ToTensor(), ...])``.
    """

    @checked_arguments
    def __init__(
        self,
        severity: Annotated[int, Field(ge=0, le=10)] = 9,
        depth: Annotated[int, Field(ge=0)] = 2,
        augmentation_set: AugmentationSet = "all",
    ) -> None:
        super().__init__()
        self.severity = severity
        self.depth = depth
        self.augmentation_set = augmentation_set
        self.chain = torch.nn.ModuleList(_OneOperation(severity, OPERATIONS[augmentation_set]) for _ in range(depth))

    def forward(self, image: Image) -> Image:
        if not (isinstance(image, torch.Tensor) and image.is_floating_point()):
            return self._augment(image)
        low, high = image.amin(), image.amax()
        if low >= 0 and high <= 1:
            return self._augment(image)
        scale = (high - low).clamp_min(torch.finfo(image.dtype).eps)
        return self._augment((image - low) / scale) * scale + low

    def _augment(self, image: Any) -> Any:
        for operation in self.chain:
            image = operation(image)
        return image

    def extra_repr(self) -> str:
        return f"severity={self.severity}, depth={self.depth}, augmentation_set={self.augmentation_set!r}"


def randaugment(severity: int = 9, depth: int = 2, augmentation_set: AugmentationSet = "all") -> RandAugmentTransform:
    """The transform to put in a dataset's ``transforms.Compose``, as the Composer page's ``cf.randaugment()``."""
    return RandAugmentTransform(severity=severity, depth=depth, augmentation_set=augmentation_set)


def randaugment_image(
    img: Image, severity: int = 9, depth: int = 2, augmentation_set: AugmentationSet = "all"
) -> Image:
    """Composer's ``randaugment_image``: one RandAugment chain applied to ``img`` (an image or a batch).

    ``augmentation_set`` is a name (``'all'``, ``'safe'``, ``'original'``) where Composer takes its list of
    functions.
    """
    return RandAugmentTransform(severity=severity, depth=depth, augmentation_set=augmentation_set)(img)
