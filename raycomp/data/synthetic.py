"""A deterministic, CIFAR-shaped classification set that needs no download.

Each class has a fixed smooth prototype (random low-resolution noise, upsampled);
an example is its class prototype at a random contrast plus pixel noise. A
``hard_fraction`` of examples are blended with another class's prototype and
get much more noise, and a ``label_noise`` fraction of *train* labels are flipped
to another class. So a small CNN learns the set well but not perfectly, and the
hard and mislabelled examples keep a high loss: exactly what loss-based
selection (SelectiveBackprop) is meant to find. ``is_hard`` and ``is_noisy``
record which examples are which, for analysis.

All tensors are made at construction from ``torch.Generator``s seeded by
``seed`` (prototypes) and by ``(seed, split)`` (examples), so train and test
share prototypes but not samples, and the same arguments give identical data
on every machine. Images are stored as float32, roughly zero-mean and unit
variance (12 KiB per 32x32 example), so ``__getitem__`` is a plain index.
"""

from __future__ import annotations

import torch
from torch.nn import functional as F
from torch.utils.data import Dataset

_SPLIT_OFFSETS = {"train": 1, "test": 2}

# Generator constants, tuned so SmallCNN reaches ~90% test accuracy in a few epochs.
_PROTOTYPE_RES = 4  # side of the low-resolution noise each prototype is upsampled from
_EASY_NOISE = 0.9  # std of pixel noise on easy examples (prototypes have unit std)
_HARD_NOISE = 1.8  # std of pixel noise on hard examples
_HARD_MIX = (0.3, 0.5)  # weight of the other class's prototype in a hard example
_CONTRAST = (0.6, 1.2)  # per-example scale of the (blended) prototype


class SyntheticCIFAR(Dataset):
    """``(image float32 [3, S, S], label int64 scalar)`` pairs from ``num_classes`` noisy prototypes."""

    def __init__(
        self,
        num_samples: int = 5000,
        split: str = "train",
        seed: int = 0,
        num_classes: int = 10,
        hard_fraction: float = 0.3,
        label_noise: float = 0.05,
        image_size: int = 32,
    ) -> None:
        if split not in _SPLIT_OFFSETS:
            raise ValueError(f"split must be 'train' or 'test', got {split!r}")
        if num_classes < 2:
            raise ValueError(f"num_classes must be at least 2, got {num_classes}")
        for name, frac in (("hard_fraction", hard_fraction), ("label_noise", label_noise)):
            if not 0.0 <= frac <= 1.0:
                raise ValueError(f"{name} must be in [0, 1], got {frac}")
        self.split = split
        self.num_classes = num_classes

        proto_gen = torch.Generator().manual_seed(seed)
        low = torch.randn(num_classes, 3, _PROTOTYPE_RES, _PROTOTYPE_RES, generator=proto_gen)
        protos = F.interpolate(low, size=(image_size, image_size), mode="bicubic", align_corners=False)
        protos = (protos - protos.mean(dim=(1, 2, 3), keepdim=True)) / protos.std(dim=(1, 2, 3), keepdim=True)
        self.prototypes = protos

        # A distinct stream per (seed, split); the large odd multiplier keeps seeds from colliding.
        gen = torch.Generator().manual_seed(seed * 1_000_003 + _SPLIT_OFFSETS[split])
        n = num_samples
        labels = torch.randint(num_classes, (n,), generator=gen)
        is_hard = _exact_mask(n, hard_fraction, gen)
        other = (labels + torch.randint(1, num_classes, (n,), generator=gen)) % num_classes
        mix = torch.empty(n).uniform_(*_HARD_MIX, generator=gen) * is_hard
        contrast = torch.empty(n).uniform_(*_CONTRAST, generator=gen)
        noise_std = torch.where(is_hard, _HARD_NOISE, _EASY_NOISE)
        w = mix.view(n, 1, 1, 1)
        signal = (1 - w) * protos[labels] + w * protos[other]
        noise = torch.randn(n, 3, image_size, image_size, generator=gen)
        self.images = contrast.view(n, 1, 1, 1) * signal + noise_std.view(n, 1, 1, 1) * noise
        self.is_hard = is_hard

        self.clean_targets = labels
        self.is_noisy = _exact_mask(n, label_noise, gen) if split == "train" else torch.zeros(n, dtype=torch.bool)
        flipped = (labels + torch.randint(1, num_classes, (n,), generator=gen)) % num_classes
        self.targets = torch.where(self.is_noisy, flipped, labels)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[index], self.targets[index]


def _exact_mask(n: int, fraction: float, gen: torch.Generator) -> torch.Tensor:
    """A bool mask with exactly ``round(fraction * n)`` True entries at random positions."""
    mask = torch.zeros(n, dtype=torch.bool)
    mask[torch.randperm(n, generator=gen)[: round(fraction * n)]] = True
    return mask
