"""The user's network: a plain ``nn.Module`` from images to logits. raycomp trains it as a classifier
(cross-entropy, accuracy) because it is not a ``RaycompModel``; ``TinyResNet`` is named in the YAML as
``model: {class_path: my_project.nets.TinyResNet, init_args: {...}}``."""

from __future__ import annotations

import torch
from torch import nn


class Block(nn.Module):
    """A residual block: two 3x3 convolutions, the first strided when the width grows."""

    def __init__(self, width_in: int, width_out: int) -> None:
        super().__init__()
        stride = 1 if width_in == width_out else 2
        self.conv1 = nn.Conv2d(width_in, width_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(width_out)
        self.conv2 = nn.Conv2d(width_out, width_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width_out)
        self.shortcut = (
            nn.Identity()
            if stride == 1
            else nn.Sequential(nn.Conv2d(width_in, width_out, 1, stride=2, bias=False), nn.BatchNorm2d(width_out))
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class TinyResNet(nn.Module):
    """A small ResNet for ``num_classes`` classes, ``widths`` channels per stage."""

    def __init__(self, num_classes: int = 10, widths: tuple[int, ...] = (16, 32), dropout: float = 0.0) -> None:
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 3, padding=1, bias=False), nn.BatchNorm2d(widths[0]))
        self.stages = nn.Sequential(*(Block(a, b) for a, b in zip((widths[0], *widths), widths, strict=False)))
        self.head = nn.Sequential(
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(dropout), nn.Linear(widths[-1], num_classes)
        )

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.head(self.stages(torch.relu(self.stem(images))))
