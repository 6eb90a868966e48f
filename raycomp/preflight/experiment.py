"""The workload check of an experiment, once per command: its one entry (``check_experiment``) and what it found.

A config is data: ``load_experiment`` parses and validates it, and builds and reads nothing. Here the files
``data.root`` names are read, the model and a batch of each split are built and run (``checks.py``), and what they
tell is kept in one ``WorkloadFacts`` that the sweep, the find and the API receive: nothing builds the model again.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from raycomp.base.errors import ConfigError
from raycomp.config.messages import KeyPath, Problem, format_problems
from raycomp.config.source import read_experiment
from raycomp.preflight.checks import checked_workload
from raycomp.preflight.probe import Workload

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig
    from raycomp.core import Inapplicable


@dataclass(frozen=True)
class WorkloadFacts:
    """What building ``config``'s model and data told: whether evaluation computes an accuracy, the metrics it
    logs, which methods can run on it. ``workload`` is the built model and batch (None: it could not be built, and
    the problem was reported), handed on so that nothing builds it again."""

    config: ExperimentConfig
    workload: Workload | None

    @property
    def has_accuracy(self) -> bool:
        return self.workload is None or self.workload.has_accuracy

    def metrics(self) -> dict[str, bool | None]:
        """The names evaluation logs under ``eval/``, each with whether higher is better (None: not declared)."""
        from raycomp.preflight.objective import evaluated_metrics

        return evaluated_metrics(self.workload) if self.workload is not None else {}

    def applicable(self, names: Iterable[str] | None = None) -> dict[str, Inapplicable | None]:
        """Each method (every registered one by default): None if it can run on this workload, else why not."""
        from raycomp.preflight.applicability import applicable_algorithms

        return applicable_algorithms(self.config, list(names) if names is not None else None, workload=self.workload)


def check_experiment(
    config: ExperimentConfig, source: str = "<config>", locations: Mapping[KeyPath, str] | None = None
) -> WorkloadFacts:
    """The workload check: ``ConfigError`` with every problem at its key (``file:line`` where ``locations`` say),
    else the facts. Builds the model once."""
    problems = data_source_problems(config)
    if problems:  # no model is built on data that is not there
        raise ConfigError(format_problems(problems, source, locations or {}))
    workload, problems = checked_workload(config)
    if problems:
        raise ConfigError(format_problems(problems, source, locations or {}))
    return WorkloadFacts(config, workload)


def load_checked_experiment(
    path: str | os.PathLike[str], overrides: Sequence[str] = ()
) -> tuple[ExperimentConfig, WorkloadFacts]:
    """``load_experiment``, then ``check_experiment``: what every command does before Ray or a run starts."""
    config, locations = read_experiment(path, overrides)
    return config, check_experiment(config, os.fspath(path), locations)


def data_source_problems(config: ExperimentConfig) -> list[Problem]:
    """The files ``data.root`` names, read before Ray starts: an image folder without an image per class (or whose
    first ones do not decode), a Hugging Face dataset without its splits or columns, a ``text_files`` corpus that
    does not exist or holds too little text. One line each at its key, not an error in every trial. The text streams
    are cached (``raycomp.data.text``), so the trials do not read the corpus again."""
    data = config.data
    if data.class_path is not None:
        return []
    if data.name == "image_folder":
        from raycomp.data.image_folder import folder_problems

        return [(("data", "root"), problem) for problem in folder_problems(data.root)]
    if data.name == "hf_dataset":
        from raycomp.data.hf_dataset import hf_problems

        found = hf_problems(data.root, (data.train_split, data.eval_split), (data.input_column, data.label_column))
        return [(("data", key), problem) for key, problem in found]
    if data.name == "text_files" and data.root is not None:
        from raycomp.data.loaders import text_train_size

        try:
            text_train_size(data.name, data.root, data.seq_len, data.max_bytes)
        except (OSError, ValueError) as error:
            return [(("data", "root"), str(error))]
    return []
