"""Models for tests only, importable in the suite's shared Ray's workers (tests/conftest.py puts this folder on
their ``PYTHONPATH``)."""

from __future__ import annotations

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset


class FailsAfter(nn.Module):
    """A linear classifier that raises in a training step after ``fail_after`` of them (None: never)."""

    def __init__(self, num_classes: int = 10, fail_after: int | None = None) -> None:
        super().__init__()
        self.linear = nn.Linear(3 * 32 * 32, num_classes)
        self.fail_after = fail_after
        self.steps = 0

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        if self.training and torch.is_grad_enabled():  # training steps only: not the preflight's probe
            self.steps += 1
            if self.fail_after is not None and self.steps > self.fail_after:
                raise RuntimeError(f"planted failure at training step {self.steps}\nthe traceback's second line")
        return self.linear(images.flatten(1))


class Batches32:
    """A Lightning-style data module of ``num_train`` samples of four features batching by 32 (400: 13 batches an
    epoch), whatever ``data.batch_size`` says: a frontier counts its budgets in the steps it really takes (issue 55)."""

    def __init__(self, num_train: int = 400, num_eval: int = 64, batch_size: int = 32) -> None:
        self.sizes, self.batch_size = (num_train, num_eval), batch_size

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(0)
        self.train, self.val = (self._split(n, generator) for n in self.sizes)

    @staticmethod
    def _split(n: int, generator: torch.Generator) -> TensorDataset:
        features = torch.randn(n, 4, generator=generator)
        return TensorDataset(features, (features.sum(dim=1) > 0).long())

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val, batch_size=self.batch_size)
