"""The workloads of a performance profile, read from finds' and sweeps' folders: each arm's evaluation curve per
seed and the baseline's final metric per seed, the target its time is measured to (``raycomp.results.profiles``).

A find's arms are its recipes (find.json's ``tried``); a sweep's are its configurations, named from what they
override (``selective_backprop(keep=0.5)``, as a find names a recipe). Both keep the baseline; the control (the
baseline again) and the baseline's other budgets are references, not methods. ``by="method"`` groups a workload's
arms by the algorithms they run, each method taking its fastest setting there; ``by="recipe"`` keeps each.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from raycomp.base import keys
from raycomp.base.errors import NotFound
from raycomp.find.recipes import Method, Recipe, arguments
from raycomp.report.find_data import is_find_folder, read_find
from raycomp.report.text import shown_path
from raycomp.results.profiles import NEVER, Curve, time_to_target
from raycomp.results.results_files import read_results, results_file

BASELINE = keys.BASELINE


@dataclasses.dataclass(frozen=True)
class WorkloadArm:
    label: str  # the recipe: algorithms and the arguments they set
    method: str  # the algorithms alone, ``+``-joined; ``baseline`` for the baseline
    curves: dict[int, Curve]  # seed -> (wall time, metric) at each evaluation of a trial that trained to its end
    finals: dict[int, float]  # seed -> final metric of those trials


@dataclasses.dataclass(frozen=True)
class Workload:
    name: str
    metric: str
    mode: str
    tolerance: float  # the verdicts' equal metric: a time to within this of the baseline's final metric
    arms: tuple[WorkloadArm, ...]
    source: str

    def times(self, by: str = "method", tolerance: float | None = None) -> dict[str, float]:
        """Each method's (or recipe's) time to the baseline's final metric at the same seed."""
        baseline = next((arm for arm in self.arms if arm.method == BASELINE), None)
        targets = baseline.finals if baseline is not None else {}
        allowed = self.tolerance if tolerance is None else tolerance
        times: dict[str, float] = {}
        for arm in self.arms:
            key = arm.method if by == "method" else arm.label
            time = time_to_target(arm.curves, targets, self.mode, allowed)
            times[key] = min(times.get(key, NEVER), time)
        return times


def read_workload(path: str | Path) -> Workload:
    """The workload of a find's folder (find.json) or a sweep's (results.json)."""
    if is_find_folder(path):
        return _find_workload(path)
    if results_file(path).is_file():
        return _sweep_workload(path)
    raise NotFound(f"no find or sweep at {path}: neither find.json nor {keys.RESULTS_JSON} is there")


def _find_workload(path: str | Path) -> Workload:
    report = read_find(path)
    arms = []
    for arm in report.tried:
        if arm.is_reference and arm.arm != BASELINE:
            continue
        done = [run for run in arm.runs if run.get("accuracy") is not None and run.get("time_s") is not None]
        curves = {run["seed"]: tuple((float(t), float(v)) for t, v in run.get("curve") or ()) for run in done}
        finals = {run["seed"]: run["accuracy"] for run in done}
        method = BASELINE if arm.arm == BASELINE else "+".join(_names(arm.arm))
        arms.append(WorkloadArm(arm.arm, method, curves, finals))
    return Workload(report.name, report.metric, report.mode, report.tolerance or 0.0, tuple(arms), report.source)


def _names(key: str) -> list[str]:
    """The algorithms of a recipe's key (``a(x=1)+b``): its ``+`` outside parentheses split the methods."""
    names, depth, current = [], 0, ""
    for char in key + "+":
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "+" and depth == 0:
            names.append(current.split("(")[0])
            current = ""
        else:
            current += char
    return names


def _sweep_workload(path: str | Path) -> Workload:
    results = read_results(path)
    file = results_file(path)
    by_config: dict[str, list[Any]] = {}
    for trial in results.trials:
        if trial.variant in (keys.METHOD, keys.BASELINE):
            by_config.setdefault(trial.config_id or trial.trial_id, []).append(trial)
    arms = []
    for trials in by_config.values():
        done = [t for t in trials if t.status == keys.TERMINATED and t.final_metric is not None]
        curves = {t.repeat or 0: tuple((wall, value) for _, wall, value in t.curve if wall is not None) for t in done}
        finals = {t.repeat or 0: t.final_metric for t in done}
        if trials[0].variant == keys.BASELINE:
            arms.append(WorkloadArm(BASELINE, BASELINE, curves, finals))
        else:
            arms.append(WorkloadArm(*sweep_label(trials[0].overrides), curves, finals))
    return Workload(file.parent.name, results.metric, results.mode, _tolerance(results), tuple(arms), shown_path(file))


def _tolerance(results: Any) -> float:
    """The sweep's accuracy_tolerance: ``Results.judging`` (raycomp.results.judging), or the tuple before it."""
    judging = getattr(results, "judging", None)
    return float(judging.tolerance if judging is not None else results.judged_with[0])


def sweep_label(overrides: Mapping[str, Any]) -> tuple[str, str]:
    """(recipe, method) of a sweep configuration: the algorithms its overrides select or set, named as a find names
    a recipe; other swept keys follow as ``key=value``."""
    methods: dict[str, dict[str, Any]] = {}
    others = []
    for key, value in sorted(overrides.items()):
        if value is None:
            continue
        if key == "algorithms":
            for name in value:
                methods.setdefault(name, {})
        elif key.startswith("algorithms."):
            _, name, *argument = key.split(".")
            methods.setdefault(name, {}).update({".".join(argument): value} if argument else {})
        else:
            others.append(f"{key}={value}")
    recipe = Recipe(tuple(Method(name, arguments(args)) for name, args in methods.items()))
    label = ", ".join(([recipe.key] if methods else []) + others) or "(no override)"
    return label, "+".join(recipe.names) or label
