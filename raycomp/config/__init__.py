"""Experiment YAML -> validated, frozen config objects, with errors that name the file, line, key and fix.

One module per job: ``sections`` and ``schema`` (what a config holds), ``sweep`` (search domains and the
config each trial trains), ``source`` (YAML and ``--set``), ``messages`` (pydantic's errors in the user's
terms). Ray is not imported; the algorithm registry is ``raycomp.algorithms.registry``.
"""

from raycomp.base.errors import ConfigError
from raycomp.config.schema import ExperimentConfig
from raycomp.config.sections import (
    CheckpointConfig,
    DataConfig,
    EvalConfig,
    FailureConfig,
    ModelConfig,
    OptimizerConfig,
    ProfileConfig,
    ScalingConfig,
    ScheduleConfig,
    TrackingConfig,
)
from raycomp.config.source import load_experiment
from raycomp.config.sweep import DOMAIN_KINDS, SearchDomain, SweepConfig, TrialSchedulerConfig
from raycomp.config.trial import trial_config

__all__ = [
    "DOMAIN_KINDS",
    "CheckpointConfig",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "ExperimentConfig",
    "FailureConfig",
    "ModelConfig",
    "OptimizerConfig",
    "ProfileConfig",
    "ScalingConfig",
    "ScheduleConfig",
    "SearchDomain",
    "SweepConfig",
    "TrackingConfig",
    "TrialSchedulerConfig",
    "load_experiment",
    "trial_config",
]
