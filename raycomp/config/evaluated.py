"""Whether a model's evaluation computes an accuracy: a fact only the built model tells.

The preflight (``raycomp.preflight``) records it when it builds the model; ``ExperimentConfig.objective`` reads it
for a run without a sweep section, which ranks its checkpoints by ``eval/accuracy``, or by ``eval/loss`` when its
model has none (a regression). The config itself never builds the model to find out.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

_HAS_ACCURACY: dict[str, bool] = {}  # a model and data section's JSON -> whether evaluation computes an accuracy


def _workload_key(config: ExperimentConfig) -> str:
    """What decides whether a run has an accuracy: its model and its data."""
    return json.dumps([config.model.model_dump(mode="json"), config.data.model_dump(mode="json")], sort_keys=True)


def record_accuracy(config: ExperimentConfig, has_accuracy: bool) -> None:
    """What the preflight found on ``config``'s built model and data."""
    _HAS_ACCURACY[_workload_key(config)] = has_accuracy


def recorded_accuracy(config: ExperimentConfig) -> bool | None:
    """Whether ``config``'s evaluation computes ``eval/accuracy``, as the preflight found; None if it did not run."""
    return _HAS_ACCURACY.get(_workload_key(config))
