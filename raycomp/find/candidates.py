"""The candidates of an experiment's ``find`` section: each method that can run on its model and data, with the
argument settings its Tune stage tries (``Algorithm.tuned_arguments``) and the methods it is never combined with
(``Algorithm.incompatible_with``).

Applicability is the preflight's own (``config.applicability``): each method, at each setting, is asked on the
model built once on the CPU and a real batch; at the setting it starts from, it also trains a few steps there
(``config.trial_step``). A method the user named that cannot run is a problem at its key; under ``methods: auto``
it is left out, with its reason.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from raycomp.algorithms.registry import ALGORITHMS, algorithm_class, arguments_schema
from raycomp.base.errors import one_line
from raycomp.config.algorithm_arguments import never_together
from raycomp.config.find import AUTO
from raycomp.config.messages import Problem
from raycomp.find.plan import FindPlan, Proxy, Seeds
from raycomp.find.recipes import Arguments, Candidate, arguments
from raycomp.preflight.applicability import algorithm_refusals
from raycomp.preflight.probe import Workload, build_workload, model_label
from raycomp.preflight.trial_step import training_failure
from raycomp.results.judging import Judging

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

METHODS = ("find", "methods")


def find_candidates(
    config: ExperimentConfig, workload: Workload | None = None
) -> tuple[tuple[Candidate, ...], dict[str, str], list[Problem]]:
    """(the candidates, the methods ``auto`` left out with why, the problems of the methods the user named).

    The experiment's own ``algorithms`` run in every arm, the baseline's included: they are never candidates."""
    assert config.find is not None
    chosen = config.find.chosen_methods()
    names = list(chosen) if chosen is not None else [name for name in ALGORITHMS if name not in config.algorithms]
    workload = workload or build_workload(config)
    trains = training_failure(workload, None) is None  # else the runs will say why the baseline cannot train
    candidates, left_out, problems = [], {}, []
    for name in names:
        given = dict((chosen or {}).get(name, {}))
        start, why, changed = _starting_arguments(config, workload, name, given, trains)
        if why is None and name in config.algorithms:
            why = "it is in the experiment's algorithms, so the baseline runs it too: name it in one place"
        clash = next((other for other in config.algorithms if never_together(name, other)), None)
        if why is None and clash is not None:  # every arm runs the experiment's algorithms (L7)
            why = f"it cannot be trained with {clash}, which the experiment's algorithms run in every arm"
        if why is None:
            settings = tuned_settings(name, start, workload, config.find.max_settings, config.seed)
            incompatible = frozenset(algorithm_class(name).incompatible_with)
            candidates.append(Candidate(name, settings, incompatible, changed))
        elif chosen is not None:
            problems.append(((*METHODS, name), f"{algorithm_class(name).__name__} cannot run here: {why}"))
        else:
            left_out[name] = why
    return tuple(candidates), left_out, problems + objective_problems_of_find(config, workload) + proxy_problems(config)


def objective_problems_of_find(config: ExperimentConfig, workload: Workload) -> list[Problem]:
    """``find.metric`` and ``find.mode`` against what the evaluation computes, as a sweep's are checked: a metric
    not logged, or a loss maximised (which judged a higher loss "more accurate"), refused before Ray starts."""
    from raycomp.config.sweep import SweepConfig
    from raycomp.preflight.objective import objective_problems

    find = config.find
    assert find is not None
    given = {key: getattr(find, key) for key in ("metric", "mode") if key in find.model_fields_set}
    problems = objective_problems(SweepConfig(**given), config, workload)
    words = {"sweep.": "find.", "the sweep would": "the find would"}
    return [(("find", *where[1:]), _in_find_words(message, words)) for where, message in problems]


def _in_find_words(message: str, words: Mapping[str, str]) -> str:
    for sweep_word, find_word in words.items():
        message = message.replace(sweep_word, find_word)
    return message


def _starting_arguments(
    config: ExperimentConfig, workload: Workload, name: str, given: Mapping[str, Any], trains: bool
) -> tuple[dict[str, Any], str | None, str]:
    """(the arguments the method starts from, why it cannot run here or None, what the find changed to make it run).

    A method refused for one argument the user did not set starts from the first of that argument's tuned values
    that runs: SelectiveBackprop on tabular inputs, which cannot be downsampled, at ``scale_factor: 1.0``."""
    why, argument = _refusal(config, workload, name, given, trains)
    if why is None or argument is None or argument in given:
        return dict(given), why, ""
    for value in algorithm_class(name).tuned_arguments.get(argument, ()):
        changed = {**given, argument: value}
        if _refusal(config, workload, name, changed, trains)[0] is None:
            return changed, None, f"starts at {argument}: {value}, since at its default {why}"
    return dict(given), why, ""


def _refusal(
    config: ExperimentConfig, workload: Workload, name: str, args: Mapping[str, Any], trains: bool
) -> tuple[str | None, str | None]:
    """(why ``name`` with ``args`` cannot train this workload or None, the argument at fault or None). Its own
    check first, then a few real training steps with it (``config.trial_step``) when the baseline's train."""
    try:
        algorithm = algorithm_class(name)(**args)
    except Exception as error:
        return f"it cannot be built with {args}: {one_line(error)}", None
    if config.compile is not False and not algorithm.compiles:
        return "it changes the batch's shape as it trains, which compile refuses", None
    refusal = algorithm_refusals(workload, {name: algorithm})[name]
    if refusal is not None:
        where = f" (its {refusal.argument})" if refusal.argument else ""
        return f"{refusal.reason}{where} ({model_label(config)})", refusal.argument
    failure = training_failure(workload, algorithm) if trains else None
    if failure is not None:
        return f"training {model_label(config)} with it failed on a batch of the data: {failure}", None
    return None, None


def tuned_settings(
    name: str, start: Mapping[str, Any], workload: Workload, limit: int, seed: int
) -> tuple[Arguments, ...]:
    """The argument settings Tune tries: ``start`` first, then each combination of the declared values of the
    arguments ``start`` does not fix that builds and applies, at most ``limit`` in all (a seeded draw).

    ``start`` takes the algorithm's ``find_defaults`` for the arguments it does not fix, where they build: its
    own defaults may assume a longer run than the find's (EMA's half-life of 1000 batches on a run of 32)."""
    cls = algorithm_class(name)
    fields = arguments_schema(name).model_fields
    defaults = {arg: field.default for arg, field in fields.items() if not field.is_required()}
    scaled = {arg: value for arg, value in cls.find_defaults.items() if arg not in start and arg in fields}
    if scaled and _builds(cls, {**start, **scaled}):
        start = {**start, **scaled}
    tuned = cls.tuned_arguments.items()  # those ``start`` took from find_defaults stay tuned
    grid = {arg: values for arg, values in tuned if arg in fields and (arg not in start or arg in scaled)}
    checked: dict[str, bool] = {}
    settings: dict[Arguments, None] = {_plain(start, defaults): None}
    for values in itertools.product(*grid.values()):
        combined = {**start, **dict(zip(grid, values, strict=True))}
        setting = _plain(combined, defaults)
        if setting not in settings and _runs(name, combined, workload, checked):
            settings[setting] = None
    first, *rest = settings
    if len(rest) >= limit:
        rest = sorted(random.Random(f"{seed}:{name}").sample(rest, limit - 1), key=rest.index)
    return (first, *rest)


def _plain(values: Mapping[str, Any], defaults: Mapping[str, Any]) -> Arguments:
    """The arguments that differ from their defaults: one setting, one key."""
    return arguments({arg: value for arg, value in values.items() if arg not in defaults or defaults[arg] != value})


def _builds(cls: type, values: Mapping[str, Any]) -> bool:
    try:
        cls(**values)
    except Exception:  # a combination the constructor's rules refuse (EMA's half_life with smoothing)
        return False
    return True


def _runs(name: str, values: Mapping[str, Any], workload: Workload, checked: dict[str, bool]) -> bool:
    """Whether the method builds with ``values`` and its check accepts the workload (asked once per value of the
    arguments the check reads: ``Algorithm.workload_arguments``)."""
    cls = algorithm_class(name)
    try:
        algorithm = cls(**values)
    except Exception:  # a combination the constructor's rules refuse (SelectiveBackprop's start >= end)
        return False
    read = cls.workload_arguments
    key = repr(sorted((k, v) for k, v in values.items() if read is None or k in read))
    if key not in checked:
        checked[key] = algorithm_refusals(workload, {name: algorithm})[name] is None
    return checked[key]


def find_plan(config: ExperimentConfig, candidates: tuple[Candidate, ...]) -> FindPlan:
    """The race's rules as the ``find`` section sets them."""
    find = config.find
    assert find is not None
    return FindPlan(
        candidates,
        screen=Seeds(*find.screen),
        tune=Seeds(*find.tune),
        compose=Seeds(*find.compose),
        confirm=Seeds(*find.confirm),
        judging=Judging.of(find),
        mode=find.mode,
        tolerance_auto=find.accuracy_tolerance == AUTO,
        frontier_budgets=tuple(sorted(find.baseline_budgets)),
        control=find.control,
        budget_s=find.budget,
        proxy=_proxy(config),
    )


def _proxy(config: ExperimentConfig) -> Proxy | None:
    """The find section's proxy as the race takes it (its share of the run); its problems are ``proxy_problems``'."""
    from raycomp.config.run_length import proxy_fraction

    assert config.find is not None
    fraction, _ = proxy_fraction(config)
    proxy = config.find.proxy
    if proxy is None or fraction is None:
        return None
    in_epochs = config.max_duration.unit.value == "ep"
    share = fraction * (proxy.data_fraction if in_epochs else 1.0)
    return Proxy(fraction, frozenset(proxy.stages), proxy.max_duration, proxy.data_fraction, share)


def proxy_problems(config: ExperimentConfig) -> list[Problem]:
    """A proxy whose length cannot be told against the run's, or that is not shorter: one line at its key."""
    from raycomp.config.run_length import proxy_fraction

    _, why = proxy_fraction(config)
    problems: list[Problem] = [(("find", "proxy", "max_duration"), why)] if why else []
    proxy, data = config.find.proxy if config.find else None, config.data
    if proxy is not None and proxy.data_fraction != 1 and data.class_path is not None:
        from raycomp.data.user_data import call_user_data

        if call_user_data(data.class_path, data.init_args).datasets is None:
            why = f"{data.class_path} gives a data module, whose loaders are used as they are: drop data_fraction"
            problems.append((("find", "proxy", "data_fraction"), why))
    return problems
