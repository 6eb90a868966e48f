"""The Logger algorithms and the Trainer write metrics to; destinations decide where they go."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

import torch


class LoggerDestination(Protocol):
    """Where metrics end up (MLflow, Ray reports, memory). Must be cheap: it is called every batch.

    It gets numbers. A destination that sets ``reads_tensors_later = True`` gets a metric logged as a 0-d tensor
    (the Trainer's per-step ``train/loss``) as it is, and reads it when it writes: reading it at once would make
    every GPU step wait for its kernels (issue 58)."""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...


class Logger:
    """Fans metrics out to destinations; with none, logging costs a dict and a loop."""

    def __init__(self, destinations: Iterable[LoggerDestination] = ()) -> None:
        self.destinations = list(destinations)

    def log_metrics(self, metrics: dict[str, Any], step: int) -> None:
        numbers: dict[str, Any] | None = None  # tensors read once, for the destinations that take numbers only
        for destination in self.destinations:
            if getattr(destination, "reads_tensors_later", False):
                destination.log_metrics(metrics, step)
                continue
            if numbers is None:
                numbers = {key: _number(value) for key, value in metrics.items()}
            destination.log_metrics(numbers, step)


def _number(value: Any) -> Any:
    """A one-element tensor as its number; anything else as it is."""
    return value.item() if torch.is_tensor(value) and value.numel() == 1 else value
