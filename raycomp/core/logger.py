"""The Logger algorithms and the Trainer write metrics to; destinations decide where they go."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol


class LoggerDestination(Protocol):
    """Where metrics end up (MLflow, Ray reports, memory). Must be cheap: it is called every batch."""

    def log_metrics(self, metrics: dict[str, float], step: int) -> None: ...


class Logger:
    """Fans metrics out to destinations; with none, logging costs a dict and a loop."""

    def __init__(self, destinations: Iterable[LoggerDestination] = ()) -> None:
        self.destinations = list(destinations)

    def log_metrics(self, metrics: dict[str, float], step: int) -> None:
        for destination in self.destinations:
            destination.log_metrics(metrics, step)
