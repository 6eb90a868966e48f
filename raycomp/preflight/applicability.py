"""Which methods can run on a workload: each algorithm says for itself (``Algorithm.check_workload``), asked with the
run's model built once and a real batch of its data (``raycomp.preflight.probe``).

The preflight refuses a configured method that cannot run, at its key, before Ray starts. An automatic choice of
methods (``methods: auto``) asks the same of every registered algorithm: ``applicable_algorithms``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

import torch

from raycomp.algorithms.registry import ALGORITHMS, algorithm_class, build_algorithm
from raycomp.base.errors import one_line
from raycomp.config.messages import Problem
from raycomp.core.algorithm import Algorithm, Inapplicable
from raycomp.preflight.probe import Workload, build_workload, model_label

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig


def algorithm_refusals(workload: Workload, algorithms: Mapping[str, Algorithm]) -> dict[str, Inapplicable | None]:
    """Each algorithm's answer on ``workload`` (its training batch, the model in train mode, no gradients).

    A check that raises is taken as a refusal: what breaks on one batch here would break every trial.
    """
    refusals: dict[str, Inapplicable | None] = {}
    workload.model.train()
    with torch.no_grad():
        for name, algorithm in algorithms.items():
            try:
                refusals[name] = algorithm.check_workload(workload.model, workload.train_batch)
            except Exception as error:
                refusals[name] = Inapplicable(f"checking it on a batch of the data failed: {one_line(error)}")
    return refusals


def applicable_algorithms(
    config: ExperimentConfig, names: Iterable[str] | None = None, workload: Workload | None = None
) -> dict[str, Inapplicable | None]:
    """Whether each named algorithm (default: every registered one) can run on ``config``'s model and data: None
    where it can, else why not. Those the config configures are built with its arguments, the others with their
    defaults. Raises ``WorkloadProblem`` when the model and data cannot train at all; pass ``workload`` to reuse one.
    """
    workload = workload or build_workload(config)
    built: dict[str, Algorithm] = {}
    refusals: dict[str, Inapplicable | None] = {}
    for name in list(names or ALGORITHMS):
        try:
            configured = config.algorithms.get(name)
            built[name] = algorithm_class(name)() if configured is None else build_algorithm(name, configured)
        except Exception as error:
            refusals[name] = Inapplicable(f"it cannot be built with these arguments: {one_line(error)}")
    refusals.update(algorithm_refusals(workload, built))
    return refusals


def refusal_problem(config: ExperimentConfig, name: str, refusal: Inapplicable) -> Problem:
    """A refusal at its config key: the argument at fault, else the algorithm, naming the model it cannot apply to."""
    if refusal.argument is not None:
        return ("algorithms", name, refusal.argument), refusal.reason
    label = f"{algorithm_class(name).__name__} cannot apply to {model_label(config)}"
    return ("algorithms", name), f"{label}: {refusal.reason}"


def algorithm_problems(config: ExperimentConfig, workload: Workload) -> list[Problem]:
    """The configured algorithms that cannot run on ``workload``, each at its key."""
    built = {name: build_algorithm(name, arguments) for name, arguments in config.algorithms.items()}
    refusals = algorithm_refusals(workload, built)
    return [refusal_problem(config, name, refusal) for name, refusal in refusals.items() if refusal is not None]
