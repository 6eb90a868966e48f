"""A sweep's configurations run against the workload before any trial starts.

Each model and data value its space can draw (``sweep.space.model.*``, ``sweep.space.data.*``: a ``class_path``
choice, an ``init_args`` value) is built and run as the preflight runs the base config's, and every method with
every argument value the space can draw (``sweep.space.algorithms`` lists, ``algorithms.<name>.<argument>``
domains) is asked whether it can run on each of them. What cannot run is listed at the swept key, one line per
value or configuration, instead of failing its trials one by one. Values are the listed ones, or both bounds of a
range; combinations are checked up to ``MAX_CHECKED_COMBINATIONS`` (beyond it, each value with the others' first).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any

from raycomp.algorithms.registry import algorithm_class
from raycomp.base.errors import ConfigError
from raycomp.config.messages import KeyPath, Problem, dotted, show
from raycomp.config.sweep import SELECTION, SPACE, SearchDomain, swept_algorithm
from raycomp.config.sweep_checks import MAX_CHECKED_COMBINATIONS
from raycomp.preflight.applicability import algorithm_refusals, refusal_problem
from raycomp.preflight.objective import objective_problems
from raycomp.preflight.probe import Workload, WorkloadProblem, build_workload

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

# Loader settings: they cannot change a batch of two, so their values are not built as workloads of their own.
_LOADER_ONLY = ("data.batch_size", "data.eval_batch_size", "data.num_workers")
Pick = tuple[int, Any]  # a domain's candidate: its index and value


def sweep_preflight_problems(config: ExperimentConfig, base: Workload | None) -> list[Problem]:
    """What cannot run of what ``config``'s sweep can draw, and a ``sweep.metric`` some drawn model's evaluation does
    not compute; ``base`` is the base config's workload (the baseline's), None when it failed (reported on its own)."""
    assert config.sweep is not None
    problems: list[Problem] = []
    unswept = config.model_copy(update={"sweep": None})
    candidates: list[tuple[dict[str, Any], ExperimentConfig, Workload]] = []
    if base is not None:
        candidates.append(({}, unswept, base))
    space = _space(config)
    paths = [path for path in space if path.split(".")[0] in ("model", "data") and path not in _LOADER_ONLY]
    for picks in _combinations([space[path] for path in paths]) if paths else ():
        values = {path: value for path, (_, value) in zip(paths, picks, strict=True)}
        try:
            trial = unswept.with_overrides(values)
        except ConfigError:  # a value invalid on its own: the sweep's checks report it
            continue
        try:
            candidates.append((values, trial, build_workload(trial)))
        except WorkloadProblem as failure:
            picked = dict(zip(paths, picks, strict=True))
            problems += [_value_problem(space, picked, problem) for problem in failure.problems]
    for values, trial, workload in candidates:
        suffix = f" (with {_named(values)})" if values else ""
        found = objective_problems(config.sweep, trial, workload) + _method_problems(config, trial, workload)
        problems += [(where, message + suffix) for where, message in found]
    return problems


def _space(config: ExperimentConfig) -> Mapping[str, SearchDomain]:
    assert config.sweep is not None
    return config.sweep.space


def _method_problems(config: ExperimentConfig, trial: ExperimentConfig, workload: Workload) -> list[Problem]:
    """Every configured method with every argument value the space can draw, checked on ``workload``."""
    assert config.sweep is not None
    space = config.sweep.space
    selectable = config.sweep.selectable_algorithms()
    problems: list[Problem] = []
    for name, arguments in config.algorithms.items():
        read = algorithm_class(name).workload_arguments  # the others keep their configured values: unread
        paths = [path for path in space if swept_algorithm(path) == name and (read is None or _argument(path) in read)]
        for picks in _combinations([space[path] for path in paths]):
            drawn = {_argument(path): value for path, (_, value) in zip(paths, picks, strict=True)}
            try:
                algorithm = algorithm_class(name)(**{**arguments.given(), **drawn})
            except Exception:  # a clash of drawn values (start >= end): refused when such a trial is drawn
                continue
            refusal = algorithm_refusals(workload, {name: algorithm})[name]
            if refusal is None:
                continue
            where, message = refusal_problem(trial, name, refusal)
            swept_path = f"algorithms.{name}.{refusal.argument}"
            if swept_path in paths:
                index, value = picks[paths.index(swept_path)]
                at = (*SPACE, swept_path, space[swept_path].kind, index)
                problems.append((at, f"{show(value)} cannot run: {message}"))
            elif name in selectable:
                problems += _selection_problems(space[SELECTION], name, f"{dotted(where)}: {message}")
            else:
                problems.append((where, message))
    return problems


def _argument(path: str) -> str:
    """``keep`` of ``algorithms.selective_backprop.keep``."""
    return path.split(".", 2)[2]


def _selection_problems(domain: SearchDomain, name: str, problem: str) -> list[Problem]:
    """Each configuration of ``sweep.space.algorithms`` that runs ``name``, which cannot run."""
    return [
        ((*SPACE, SELECTION, domain.kind, index), f"the configuration {show(names)} cannot run: {problem}")
        for index, names in enumerate(domain.values)
        if name in names
    ]


def _value_problem(space: Mapping[str, SearchDomain], picks: Mapping[str, Pick], problem: Problem) -> Problem:
    """A model or data value (or combination of them) that cannot run, at its swept key."""
    inner, message = problem
    paths = list(picks)
    last = paths[-1]
    if len(paths) == 1:
        index, value = picks[last]
        where: KeyPath = (*SPACE, last, space[last].kind, index)
        return where, f"{show(value)} cannot run: {dotted(inner)}: {message}"
    named = _named({path: value for path, (_, value) in picks.items()})
    return (*SPACE, last, space[last].kind), f"the combination {named} cannot run: {dotted(inner)}: {message}"


def _named(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{path}={show(value)}" for path, value in values.items())


def _combinations(domains: list[SearchDomain]) -> Iterator[tuple[Pick, ...]]:
    """Every combination of the domains' candidates, or, past ``MAX_CHECKED_COMBINATIONS``, each candidate with the
    other domains at their first. No domains: one empty combination (the configured values alone)."""
    picks = [list(enumerate(domain.candidates())) for domain in domains]
    if math.prod(len(options) for options in picks) <= MAX_CHECKED_COMBINATIONS:
        yield from itertools.product(*picks)
        return
    firsts = tuple(options[0] for options in picks)
    for position, options in enumerate(picks):
        for pick in options:
            yield (*firsts[:position], pick, *firsts[position + 1 :])
