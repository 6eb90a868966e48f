"""What one training run is given, whole: a frozen, picklable ``TrialSpec``.

Ray hands it unchanged to every Train worker (``train_loop_config``) and Tune to every local-mode
trial, so a new option is one field here and one reader, not a bag of keywords passed down five calls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from raycomp.config import ExperimentConfig
from raycomp.core import Callback
from raycomp.tracking.ref import RunRef

if TYPE_CHECKING:
    from raycomp.launch.sinks import StoredFile


@dataclasses.dataclass(frozen=True)
class ResumeSource:
    """An MLflow run's checkpoint to start from (``--resume-from``): each worker downloads it itself,
    because a cluster's workers may not see the driver's copy."""

    tracking_uri: str
    reference: str


@dataclasses.dataclass(frozen=True)
class TrialSpec:
    """One training run: its resolved config (no sweep section), where it is tracked, what it resumes from.

    ``metric``/``mode`` rank its checkpoints (the sweep's objective); ``fixed_metrics`` go with every
    report (the trial's arm, its MLflow run id) so the driver can tell trials apart in Tune's results.
    ``resume_from`` is used only while the run has no checkpoint of its own. ``history`` is the file where
    a Tune trial keeps each of its results itself (``sinks.HistorySink``; in a bucket, ``StoredHistorySink``).
    ``budget`` is a frontier trial's fraction of ``config.max_duration`` that only its workers can turn into
    steps (``config.trial.worker_budget``).
    """

    config: ExperimentConfig
    metric: str
    mode: str
    run: RunRef | None = None
    resume_from: ResumeSource | None = None
    recreate_required: bool = False
    fixed_metrics: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    callbacks: tuple[Callback, ...] = ()  # the user's own raycomp Callbacks, copied to every worker
    history: Path | StoredFile | None = None
    budget: float | None = None

    @classmethod
    def of(cls, config: ExperimentConfig, **fields: Any) -> TrialSpec:
        """A spec for ``config`` ranked by its own objective (the sweep's metric, else accuracy)."""
        metric, mode = config.objective
        return cls(config, metric, mode, **fields)

    def with_metrics(self, **metrics: Any) -> TrialSpec:
        return dataclasses.replace(self, fixed_metrics={**self.fixed_metrics, **metrics})
