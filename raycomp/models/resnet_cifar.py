"""The CIFAR ResNets of He et al. 2016 (sec. 4.2), as in Composer's ``resnet_cifar``.

Three stages of 16/32/64 channels with ``n`` basic blocks each, so depth is
``6n + 2`` (ResNet-20: n=3, ~0.27M parameters; ResNet-56: n=9, ~0.85M).
Shortcuts that change shape use a 1x1 conv + BN projection (the paper's option B,
also Composer's choice); the paper's CIFAR numbers use option A (zero padding),
which differs only by these few projection parameters.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


class BasicBlock(nn.Module):
    """Two 3x3 conv-BN layers plus an identity (or projection) shortcut."""

    def __init__(self, in_planes: int, planes: int, stride: int = 1) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_planes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.shortcut: nn.Module = nn.Identity()
        if stride != 1 or in_planes != planes:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_planes, planes, 1, stride=stride, bias=False), nn.BatchNorm2d(planes)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNetCIFAR(nn.Module):
    """Stem conv, three stages of ``blocks_per_stage`` basic blocks, global average pool, linear."""

    def __init__(self, blocks_per_stage: int, num_classes: int = 10, in_channels: int = 3) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        stages: list[nn.Module] = []
        in_planes = 16
        for planes, stride in ((16, 1), (32, 2), (64, 2)):
            blocks = [BasicBlock(in_planes, planes, stride)]
            blocks += [BasicBlock(planes, planes) for _ in range(blocks_per_stage - 1)]
            stages.append(nn.Sequential(*blocks))
            in_planes = planes
        self.layers = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(64, num_classes)
        self._init_weights()

    def _init_weights(self) -> None:
        # Kaiming (He) init for convs, as the paper does; BN starts as the identity.
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn1(self.conv1(x)))
        x = self.pool(self.layers(x)).flatten(1)
        return self.fc(x)


def resnet_cifar(depth: int, num_classes: int = 10) -> ResNetCIFAR:
    """The CIFAR ResNet of the given depth; depth must be ``6n + 2`` for some n >= 1."""
    if depth < 8 or (depth - 2) % 6 != 0:
        raise ValueError(f"CIFAR ResNet depth must be 6n+2 with n >= 1 (20, 32, 44, 56, 110, ...), got {depth}")
    return ResNetCIFAR((depth - 2) // 6, num_classes=num_classes)


def resnet20(num_classes: int = 10) -> ResNetCIFAR:
    return resnet_cifar(20, num_classes)


def resnet56(num_classes: int = 10) -> ResNetCIFAR:
    return resnet_cifar(56, num_classes)
