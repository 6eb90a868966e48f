"""The checks of an experiment that build and run its model and data, once, on the driver, before Ray or any run
starts (``experiment.check_experiment`` calls them; loading a config builds nothing).

``class_path`` and ``init_args`` are imported and matched against the signature on every validation
(``user_code.py``); what the model and data *do* can only be known by running them. Here, once per command: the
model is built on the CPU and run forward on a batch of two from each split of the data (``probe.py``), then each
configured method is asked whether it can run on them (``applicability.py``), and for a sweep every model, data
and method value its space can draw (``sweep_preflight.py``). Each problem is at its key, so it prints as
``file:line: model.class_path: ...`` like every other config error, and the CLIs exit with code 2.

The random number generators are left as they were (building a model draws its initial weights), and torch runs
on one thread meanwhile: on batches of two, more threads only wait for each other (several times slower on a busy
machine).
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterator
from typing import TYPE_CHECKING

import torch

from raycomp.base.errors import one_line
from raycomp.base.import_path import import_callable
from raycomp.config.evaluated import record_accuracy
from raycomp.config.messages import Problem
from raycomp.preflight.applicability import algorithm_problems
from raycomp.preflight.call_problems import call_problem
from raycomp.preflight.probe import Workload, WorkloadProblem, build_workload

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig


def preflight_problems(config: ExperimentConfig) -> list[Problem]:
    """What building and running ``config``'s workload shows wrong, and the methods that cannot run on it."""
    return checked_workload(config)[1]


def checked_workload(config: ExperimentConfig) -> tuple[Workload | None, list[Problem]]:
    """``config``'s workload, built once (None if it cannot be), and what building and running it shows wrong: the
    model and data, the optimizer and schedule, the methods (and for a sweep, every value its space can draw)."""
    from raycomp.preflight.sweep import sweep_preflight_problems

    with _one_thread_and_generators_kept():
        problems: list[Problem] = []
        workload: Workload | None = None
        try:
            workload = build_workload(config)
        except WorkloadProblem as failure:
            problems += failure.problems
        if workload is not None:
            record_accuracy(config, workload.has_accuracy)
            problems += optimization_problems(config, workload)
        if config.sweep is not None:
            problems += sweep_preflight_problems(config, workload)
        elif workload is not None:
            problems += algorithm_problems(config, workload)
    return workload, list(dict.fromkeys(problems))


def built_workload(config: ExperimentConfig) -> Workload | None:
    """``config``'s workload as the preflight builds it (generators kept, one thread), or None if it cannot be."""
    with _one_thread_and_generators_kept():
        try:
            return build_workload(config)
        except WorkloadProblem:
            return None


def optimization_problems(config: ExperimentConfig, workload: Workload) -> list[Problem]:
    """The optimizer and schedule built on the workload's model, as the recipe builds them: a ``class_path`` whose
    ``init_args`` values its class refuses (Adam's ``betas: [0.9]``), or that returns something else, is one line at
    its key instead of every trial's failure."""
    from raycomp.config.optimization_recipe import build_optimizer, build_scheduler

    sections = (("optimizer", config.optimizer), ("schedule", config.schedule))
    optimizer = None
    for name, section in sections:
        try:
            if name == "optimizer":
                optimizer = build_optimizer(config, workload.model)
            elif optimizer is not None:
                build_scheduler(config, optimizer)
        except Exception as error:
            if section.class_path is None:
                return [((name, "name"), f"building the {name} failed: {one_line(error)}")]
            target = import_callable(section.class_path)
            return [call_problem(name, target, section.class_path, section.init_args, error)]
    return []


@contextlib.contextmanager
def _one_thread_and_generators_kept() -> Iterator[None]:
    """Python's, NumPy's and torch's CPU generators as they were before (the user's code may draw from any), and
    torch's thread count."""
    import numpy as np

    python_state, numpy_state, threads = random.getstate(), np.random.get_state(), torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng(devices=[]):
            yield
    finally:
        torch.set_num_threads(threads)
        random.setstate(python_state)
        np.random.set_state(numpy_state)
