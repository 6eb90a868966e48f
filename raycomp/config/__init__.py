"""Experiment YAML -> validated, frozen config objects, with errors that name the file, line, key and fix.

One module per job: ``sections`` and ``schema`` (what a config holds), ``sweep`` (search domains and the
config each trial trains), ``source`` (YAML and ``--set``), ``messages`` (pydantic's errors in the user's
terms). Ray is not imported; the algorithm registry is ``raycomp.algorithms.registry``.
"""

from raycomp.base.errors import ConfigError
from raycomp.config.schema import ExperimentConfig
from raycomp.config.source import load_experiment
from raycomp.config.sweep import SearchDomain, SweepConfig
from raycomp.config.trial import trial_config

__all__ = [
    "ConfigError",
    "ExperimentConfig",
    "SearchDomain",
    "SweepConfig",
    "load_experiment",
    "trial_config",
]
