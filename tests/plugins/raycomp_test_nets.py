"""Models for tests only, importable in the suite's shared Ray's workers (tests/conftest.py puts this folder on
their ``PYTHONPATH``)."""

from __future__ import annotations

import torch
from torch import nn


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
