"""What a run records about itself: environment tags and the flattened config, within MLflow's limits."""

from __future__ import annotations

import importlib.metadata
import subprocess
from pathlib import Path
from typing import Any

from mlflow import MlflowClient
from mlflow.entities import Param, RunTag
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

from raycomp.algorithms.registry import algorithm_class
from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.tracking.ref import redacted_uri

URI_KEY = "tracking.tracking_uri"

_VERSIONED = ("raycomp", "ray", "torch", "mlflow")


def environment_tags(experiment_file: str | None) -> dict[str, str]:
    """Versions of raycomp and the stack, the experiment file and, in a git checkout, its commit."""
    tags = {f"raycomp.version.{name}": _version(name) for name in _VERSIONED}
    if experiment_file:
        tags[keys.EXPERIMENT_FILE_TAG] = str(experiment_file)
        tags["mlflow.source.name"] = str(experiment_file)
        commit = _git_commit(Path(experiment_file).resolve().parent)
        if commit:
            tags["mlflow.source.git.commit"] = commit
    return tags


def log_config(client: MlflowClient, run_id: str, config: ExperimentConfig) -> None:
    """The flattened config as params (``algorithms.selective_backprop.keep``, ...) and each algorithm's
    ``required_on_load`` flag as a tag, within MLflow's length and batch limits."""
    flat = config.flatten()
    if flat.get(URI_KEY):
        flat[URI_KEY] = redacted_uri(flat[URI_KEY])
    params = [Param(_key(key), _value(value)) for key, value in sorted(flat.items())]
    tags = [RunTag(keys.ALGORITHMS_TAG, ",".join(config.algorithms) or "none")]
    for name in config.algorithms:
        required = bool(algorithm_class(name).required_on_load())
        tags.append(RunTag(f"raycomp.algorithm.{name}.required_on_load", str(required).lower()))
    for start in range(0, len(params), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=params[start : start + MAX_PARAMS_TAGS_PER_BATCH])
    client.log_batch(run_id, tags=tags)


def public_config(config: ExperimentConfig) -> dict[str, Any]:
    """The config as the run's ``config.yaml`` shows it: the tracking URI without its credentials."""
    data = config.to_dict()
    if data["tracking"].get("tracking_uri"):
        data["tracking"]["tracking_uri"] = redacted_uri(data["tracking"]["tracking_uri"])
    return data


def _key(key: str) -> str:
    return key if len(key) <= MAX_ENTITY_KEY_LENGTH else key[: MAX_ENTITY_KEY_LENGTH - 3] + "..."


def _value(value: Any) -> str:
    text = "null" if value is None else str(value)
    return text if len(text) <= MAX_PARAM_VAL_LENGTH else text[: MAX_PARAM_VAL_LENGTH - 3] + "..."


def _version(distribution: str) -> str:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _git_commit(folder: Path) -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(folder), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
