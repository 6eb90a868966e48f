"""Checks across the model, data and eval sections: what an experiment trains on and how it is measured.

Kept apart from the schema because they read the model and dataset registries and build torchmetrics
metrics, which the schema's field checks need not know about.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raycomp.base import keys
from raycomp.config.messages import Problem
from raycomp.core.evaluator import build_metric


def model_data_problems(model: str, data: str) -> list[Problem]:
    """Language models train on the text datasets' token sequences, classifiers on the others' images."""
    from raycomp.data import DATASET_NAMES, TEXT_DATASETS
    from raycomp.models import CLASSIFIER_NAMES, LANGUAGE_MODEL_NAMES

    if (model in LANGUAGE_MODEL_NAMES) == (data in TEXT_DATASETS):
        return []
    if model in LANGUAGE_MODEL_NAMES:
        wanted, kind = f"a text dataset ({', '.join(TEXT_DATASETS)})", "a language model"
    else:
        images = [d for d in DATASET_NAMES if d not in TEXT_DATASETS]
        wanted, kind = f"an image dataset ({', '.join(images)})", "an image classifier"
    models = LANGUAGE_MODEL_NAMES if data in TEXT_DATASETS else CLASSIFIER_NAMES
    message = (
        f"{model!r} is {kind} and needs {wanted}, but data.name is {data!r} "
        f"(change data.name, or model.name to one of {', '.join(models)})"
    )
    return [(("model", "name"), message)]


def eval_metric_problems(metrics: Mapping[str, tuple[str, dict[str, Any]]], num_classes: int) -> list[Problem]:
    """Each ``eval.metrics`` entry built once, so a bad class or argument is reported at its key."""
    problems: list[Problem] = []
    for name, (class_name, arguments) in metrics.items():
        where = ("eval", "metrics", name)
        if name in (keys.LOSS, keys.ACCURACY):
            problems.append((where, f"eval/{name} is always computed; give this metric another name"))
            continue
        try:
            build_metric(class_name, arguments, num_classes)
        except ValueError as exc:
            problems.append((where, str(exc)))
    return problems


def metric_num_classes(data: str, model_classes: int) -> int:
    """A metric's default ``num_classes``: the model's classes, or the text datasets' vocabulary."""
    from raycomp.data import TEXT_DATASETS, VOCAB_SIZE

    return VOCAB_SIZE if data in TEXT_DATASETS else model_classes
