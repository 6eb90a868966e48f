"""A small conv net with BatchNorm and Dropout, cheap enough to train on a laptop CPU.

It has BatchNorm and Dropout on purpose: SelectiveBackprop's selection pass must
leave BN running statistics and dropout alone, and tests need layers that would
show it if it did not. Global average pooling lets it take any input of at
least 8x8, since SelectiveBackprop scores a 16x16 downsample of 32x32 images.
"""

from __future__ import annotations

import torch
from torch import nn


def _block(in_channels: int, out_channels: int, pool: bool, norm: bool = True) -> nn.Sequential:
    layers: list[nn.Module] = [
        nn.Conv2d(in_channels, out_channels, kernel_size=3, padding=1, bias=not norm),
        nn.BatchNorm2d(out_channels) if norm else nn.Identity(),
        nn.ReLU(inplace=True),
    ]
    if pool:
        layers.append(nn.MaxPool2d(2))
    return nn.Sequential(*layers)


class SmallCNN(nn.Module):
    """Three conv-BN-ReLU blocks (``width``, 2x, 4x channels; the first two max-pooled), GAP, dropout, linear.

    ``norm=False, dropout=0`` (the "cnn_plain" model) makes each sample's loss independent of the rest of
    its batch, so DDP over any number of ranks must follow the single-process loss curve exactly.
    """

    def __init__(
        self, num_classes: int = 10, in_channels: int = 3, width: int = 32, dropout: float = 0.25, norm: bool = True
    ) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _block(in_channels, width, pool=True, norm=norm),
            _block(width, 2 * width, pool=True, norm=norm),
            _block(2 * width, 4 * width, pool=False, norm=norm),
        )
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(4 * width, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.features(x)).flatten(1)
        return self.fc(self.dropout(x))
