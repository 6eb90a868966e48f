"""A sweep checked once, as a whole, at the driver, before anything starts.

Every swept path must exist; every listed value and bound must make a valid config on its own; and grid
values valid one at a time must not clash in a combination the grid trains (SB ``start`` 0.85 with
``end`` 0.3). A trial never runs these checks: ``trial_config`` drops the sweep section.
"""

from __future__ import annotations

import copy
import difflib
import itertools
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from raycomp.algorithms.registry import ALGORITHMS, arguments_schema
from raycomp.base import keys
from raycomp.config.messages import Problem, dotted, leaf_paths, problems_of, show, suggest
from raycomp.config.sections import MAX_SEED
from raycomp.config.sweep import SELECTION, SPACE, SweepConfig, assign

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

MAX_CHECKED_COMBINATIONS = 1000  # grid combinations validated together, each a whole config
_CLASS_PATH_SECTIONS = ("model", "data", "optimizer", "schedule")  # those whose init_args a sweep may vary


def sweep_problems(config: ExperimentConfig) -> list[Problem]:
    """Each swept path must exist, and each listed value and bound must make a valid config on its own."""
    if config.sweep is None:
        return []
    root = type(config)
    base = config.model_dump(mode="json")
    base["sweep"] = None
    leaves = leaf_paths(root)
    problems: list[Problem] = []
    objective = _objective_problem(config)
    if objective:
        problems.append((("sweep", "metric"), objective))
    for path, domain in config.sweep.space.items():
        where = (*SPACE, path)
        problem = _swept_path_problem(config, path, leaves)
        if problem:
            problems.append((where, problem))
            continue
        for index, value in enumerate(domain.candidates()):
            for inner, message in _trial_problems(root, base, {path: value}, config.sweep):
                key = "" if dotted(inner) == path else f"{dotted(inner)}: "
                problems.append(((*where, domain.kind, index), f"{show(value)} is invalid: {key}{message}"))
    key = "max_repeats" if config.sweep.adaptive else "repeats"
    repeats = getattr(config.sweep, key)
    if config.seed + repeats - 1 > MAX_SEED:
        message = f"seed + {key} - 1 = {config.seed + repeats - 1} is over {MAX_SEED} (lower seed or {key})"
        problems.append((("sweep", key), message))
    return problems or _grid_combination_problems(config, root, base)


def _trial_problems(
    root: type[ExperimentConfig], base: dict[str, Any], values: Mapping[str, Any], sweep: SweepConfig
) -> list[Problem]:
    """Problems of the config ``base`` (plain data, no sweep) with ``values`` at their dotted paths (and only
    the algorithms an ``algorithms`` value lists, of those the sweep selects among)."""
    trial = copy.deepcopy(base)
    dropped, values = sweep.left_out(values)
    for name in dropped:
        trial["algorithms"].pop(name, None)
    for path, value in values.items():
        assign(trial, path, value)
    try:
        root.model_validate(trial)
    except ValidationError as exc:
        return problems_of(exc, root)
    return []


def _grid_combination_problems(config: ExperimentConfig, root: type[ExperimentConfig], base: dict) -> list[Problem]:
    """Grid values valid one at a time can still clash (SB ``start`` 0.85 with ``end`` 0.3): every grid
    combination trains, so each is checked here, before the sweep starts, up to ``MAX_CHECKED_COMBINATIONS``.
    Random domains are drawn at the driver and checked as each trial's config is built."""
    assert config.sweep is not None
    grids = {path: domain.values for path, domain in config.sweep.space.items() if domain.kind == "grid"}
    if len(grids) < 2 or math.prod(len(values) for values in grids.values()) > MAX_CHECKED_COMBINATIONS:
        return []
    problems: list[Problem] = []
    for combination in itertools.product(*grids.values()):
        values = dict(zip(grids, combination, strict=True))
        found = _trial_problems(root, base, values, config.sweep)
        if found:
            named = ", ".join(f"{path}={show(value)}" for path, value in values.items())
            inner, message = found[0]
            where = (*SPACE, list(grids)[-1], "grid")
            problem = f"the grid combination {named} is invalid: {dotted(inner)}: {message}"
            problems.append((where, f"{problem} (drop one of these values from its grid)"))
    return problems


def _objective_problem(config: ExperimentConfig) -> str | None:
    """An ``eval/...`` objective must be a metric the evaluator computes; other reported numbers are not checked.
    A user's model may bring metrics of its own (``get_metrics``) and have no accuracy: the preflight checks its
    objective once the model is built (``config.objective``)."""
    metric = config.sweep.metric if config.sweep else keys.DEFAULT_METRIC
    label, _, name = metric.partition("/")
    if label != keys.EVAL_LABEL or config.model.class_path is not None:
        return None
    known = [keys.LOSS, keys.ACCURACY, *config.eval.metrics]
    if name in known or name.split("/")[0] in config.eval.metrics:  # a vector metric's elements: eval/<name>/<i>
        return None
    names = ", ".join(f"{label}/{known_name}" for known_name in known)
    return f"{metric!r} is not computed: the evaluator computes {names} (name more metrics under eval.metrics)"


def _init_arg_problem(config: ExperimentConfig, section: str, argument: str) -> str | None:
    """``model.init_args.<argument>`` (or data's, optimizer's, schedule's) is sweepable when the section's
    ``class_path`` callable takes it."""
    from raycomp.base.import_path import import_callable
    from raycomp.config.optimization import is_torch_scheduler
    from raycomp.config.user_code import argument_problems

    class_path = getattr(config, section).class_path
    if class_path is None:
        return f"{section}.init_args are the arguments of {section}.class_path, which is not set"
    try:
        target = import_callable(class_path)
    except ValueError:
        return None  # reported at the section's class_path
    supplied = None  # an optimizer's parameters, a torch scheduler's optimizer: raycomp passes them
    if section == "optimizer" or (section == "schedule" and is_torch_scheduler(target)):
        supplied = "passed by raycomp"
    found = argument_problems(target, {argument: None}, section, supplied)
    return next((message for key, message in found if key == ("init_args", argument)), None)


def _swept_path_problem(config: ExperimentConfig, path: str, leaves: set[str]) -> str | None:
    if path == SELECTION and config.sweep is not None:
        missing = [name for name in config.sweep.selectable_algorithms() if name not in config.algorithms]
        listed = ", ".join(repr(name) for name in missing)
        return f"lists {listed} but not under algorithms (configure each with its arguments there)" if missing else None
    parts = path.split(".")
    if len(parts) == 3 and parts[0] in _CLASS_PATH_SECTIONS and parts[1] == "init_args":
        return _init_arg_problem(config, parts[0], parts[2])
    if parts[0] != "algorithms":
        if path in leaves:
            return None
        close = difflib.get_close_matches(path, leaves, n=1, cutoff=0.6)
        guess = f"did you mean {close[0]!r}?; " if close else ""
        return f"not a config key ({guess}sweep a leaf such as optimizer.lr or algorithms.<name>.<argument>)"
    if len(parts) != 3:
        return "name an algorithm argument as algorithms.<name>.<argument>, e.g. algorithms.selective_backprop.keep"
    name, arg = parts[1:]
    if name not in ALGORITHMS:
        return f"unknown algorithm {name!r} {suggest(name, ALGORITHMS, 'algorithms')}"
    if name not in config.algorithms:
        return f"algorithm {name!r} is swept but not configured (add `{name}: {{}}` under algorithms)"
    arguments = arguments_schema(name).model_fields
    if arg not in arguments:
        return f"{arg!r} is not an argument of {name} {suggest(arg, arguments, 'arguments')}"
    return None
