"""What a find leaves in its run folder: ``find.json`` (the answer, the metric and clock it was judged on, each
candidate's path through the stages and every recipe tried, with its trials and median time and accuracy: what
the report page draws) and ``recipe.yaml``, the experiment with the recommended recipe,
which ``python -m raycomp.train`` trains as it is. Both written whole (``base.atomic_files``)."""

from __future__ import annotations

import dataclasses
import json
import statistics
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from raycomp.base.atomic_files import atomic_write_text
from raycomp.find.answer import Answer
from raycomp.find.observations import Observations, Trial
from raycomp.find.state import STAGES

if TYPE_CHECKING:
    from raycomp.config.schema import ExperimentConfig

FIND_JSON, RECIPE_YAML = "find.json", "recipe.yaml"


def recipe_config(config: ExperimentConfig, answer: Answer) -> dict[str, Any] | None:
    """The experiment that trains the recommended recipe (its own algorithms and the recipe's), named
    ``<name>-recipe`` so that it trains in a folder of its own; None when nothing is recommended. Its tracking URI
    keeps no credentials (a password, a ``?token=``): the file is uploaded to MLflow, and MLflow's own variables
    (``MLFLOW_TRACKING_USERNAME``/``PASSWORD``/``TOKEN``) carry them when it is trained."""
    recipe = answer.recommended
    if recipe is None:
        return None
    data = config.to_dict()
    data["name"] = f"{config.name}-recipe"
    data["algorithms"] = {**data["algorithms"], **recipe.algorithms()}
    data.pop("find"), data.pop("sweep")
    if data.get("tracking", {}).get("tracking_uri"):
        from raycomp.base.redaction import without_credentials, without_secret_query

        data["tracking"]["tracking_uri"] = without_secret_query(
            without_credentials(data["tracking"]["tracking_uri"])[0]
        )
    return data


def tried(observations: Observations) -> list[dict[str, Any]]:
    """Every arm the find trained, with its seeds and median accuracy and time (what a Pareto front draws), the
    stages whose rounds trained it, and each trial's values (``runs``: the report's dots and profiles)."""
    arms: dict[str, list] = {}
    for trial in observations:
        arms.setdefault(trial.arm, []).append(trial)
    rows = []
    for arm, trials in sorted(arms.items()):
        trials.sort(key=lambda t: t.seed)
        done = [t for t in trials if t.accuracy is not None and t.time_s is not None]
        rows.append(
            {
                "arm": arm,
                "seeds": [t.seed for t in trials],
                "accuracy_median": statistics.median(t.accuracy for t in done) if done else None,
                "time_median_s": statistics.median(t.time_s for t in done) if done else None,
                "failed": [t.seed for t in trials if t.error],
                "stages": [stage for stage in STAGES if any(t.stage == stage for t in trials)],
                "runs": [_run(trial) for trial in trials],
            }
        )
    return rows


def _run(trial: Trial) -> dict[str, Any]:
    values = {"seed": trial.seed, "accuracy": trial.accuracy, "time_s": trial.time_s, "stage": trial.stage}
    return {**values, "curve": [list(point) for point in trial.curve], "error": trial.error}


def write_find_files(
    folder: Path, config: ExperimentConfig, answer: Answer, observations: Observations, left_out: dict[str, str]
) -> list[Path]:
    """Writes find.json and, when a recipe is recommended, recipe.yaml (else removes an older one)."""
    verdicts = {
        key: dataclasses.asdict(v) if v else None
        for key, v in (("verdict", answer.verdict), ("control", answer.control))
    }
    find = config.find
    assert find is not None
    document = {
        "name": config.name,
        "metric": find.metric,
        "mode": find.mode,
        "timing": find.timing,
        "accuracy_tolerance": answer.tolerance if answer.tolerance is not None else find.accuracy_tolerance,
        "headline": answer.headline(),
        "spread": answer.spread,
        "recommended": answer.recommended.algorithms() if answer.recommended else None,
        "chosen": answer.chosen.key if answer.chosen else None,
        **verdicts,
        "candidates": {name: dataclasses.asdict(line) for name, line in answer.lines.items()},
        "paths": {name: [dataclasses.asdict(step) for step in steps] for name, steps in answer.paths.items()},
        "left_out": left_out,
        "tried": tried(observations),
        "proxy": None
        if not answer.proxy
        else {
            "max_duration": answer.proxy,
            "data_fraction": answer.proxy_data,
            "recipes": [
                {
                    "recipe": key,
                    "proxy": dataclasses.asdict(proxy),
                    "full": dataclasses.asdict(full) if full else None,
                    "held": held,
                    "covered": answer.in_held_recipe(key),  # not run alone: the recipe it is in held
                }
                for key, proxy, full, held in answer.proxy_held()
            ],
        },
    }
    paths = [folder / FIND_JSON]
    atomic_write_text(paths[0], json.dumps(document, indent=2, default=str) + "\n")
    recipe = recipe_config(config, answer)
    if recipe is None:
        (folder / RECIPE_YAML).unlink(missing_ok=True)
        return paths
    header = f"# The recipe raycomp find recommended for {config.name}: {answer.headline()}\n"
    atomic_write_text(folder / RECIPE_YAML, header + yaml.safe_dump(recipe, sort_keys=False))
    return [*paths, folder / RECIPE_YAML]
