"""Rows of 8 float features, made here (no download): a target that is a noisy nonlinear function of them, and the
same rows as three classes of that target. Data modules in Lightning's shape (``setup``, ``train_dataloader``,
``val_dataloader``), batching by ``batch_size`` whatever ``data.batch_size`` says."""

from __future__ import annotations

import torch
from torch.utils.data import DataLoader, TensorDataset

FEATURES = 8


def rows(count: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``count`` rows and their target: a weighted sum, a product and a sine of the features, plus noise."""
    generator = torch.Generator().manual_seed(seed)
    inputs = torch.randn(count, FEATURES, generator=generator)
    weights = torch.linspace(-1.0, 1.0, FEATURES)
    target = inputs @ weights + inputs[:, 0] * inputs[:, 1] + torch.sin(2 * inputs[:, 2])
    return inputs, target + 0.3 * torch.randn(count, generator=generator)


class Rows:
    """``num_train`` and ``num_eval`` rows; ``classes`` 0 gives the regression target, 3 its terciles as labels."""

    def __init__(self, num_train: int = 4000, num_eval: int = 2000, batch_size: int = 64, classes: int = 0) -> None:
        self.num_train, self.num_eval, self.batch_size, self.classes = num_train, num_eval, batch_size, classes

    def setup(self, stage: str) -> None:
        train, val = rows(self.num_train, 0), rows(self.num_eval, 1)
        if self.classes:
            edges = torch.quantile(train[1], torch.linspace(0, 1, self.classes + 1)[1:-1])
            train, val = ((inputs, torch.bucketize(target, edges)) for inputs, target in (train, val))
        self.train, self.val = TensorDataset(*train), TensorDataset(*val)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val, batch_size=512)
