"""What a run records about itself: environment tags and the settings it trains with, within MLflow's limits.

Params are the flattened config less the settings this run does not read (``applied_params``): a user's model or
data (``class_path``) reads none of the built-in sizes and readers' settings, a built-in dataset only its own, an
optimizer or a schedule only its form's. What only the running code knows, a user's data loaders' batch size and
workers and a classifier's number of classes (its output width), the run logs itself as ``data.batch_size``,
``data.eval_batch_size``, ``data.num_workers`` and ``model.num_classes`` (``measured_params``, from the
``MlflowCallback``): a data module that batches by 32 is never recorded as the default 128. A frontier trial logs its
``max_duration`` the same way: its workers count its budget in their loader's steps (``config.trial.worker_budget``).
"""

from __future__ import annotations

import importlib.metadata
import subprocess
from collections.abc import Collection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlflow import MlflowClient
from mlflow.entities import Param, RunTag
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

from raycomp.algorithms.registry import algorithm_class
from raycomp.base import keys
from raycomp.config import ExperimentConfig
from raycomp.tracking.ref import redacted_uri

if TYPE_CHECKING:
    from raycomp.core import State

URI_KEY = "tracking.tracking_uri"

# What each built-in dataset reads beside its loaders' settings; a user's data reads none of them.
_DATASET_SETTINGS: dict[str, tuple[str, ...]] = {
    "synthetic": ("seed", "num_train", "num_test"),
    "cifar10": ("root",),
    "stdlib_text": ("seq_len", "max_bytes"),
    "text_files": ("root", "seq_len", "max_bytes"),
    "image_folder": ("root", "image_size"),
    "hf_dataset": ("root", "train_split", "eval_split", "input_column", "label_column", "image_size", "seq_len"),
}
_READER_SETTINGS = {setting for settings in _DATASET_SETTINGS.values() for setting in settings}
_LOADER_SETTINGS = ("batch_size", "eval_batch_size", "num_workers")  # a data module's loaders have their own
_LANGUAGE_MODEL_SIZES = ("d_model", "n_layers", "n_heads", "dropout")
_SCHEDULE_SETTINGS = {"warmup_fraction": ("cosine", "linear"), "step_size": ("step",), "gamma": ("step",)}
CLASSES_PARAM = "model.num_classes"

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


def log_config(client: MlflowClient, run_id: str, config: ExperimentConfig, measured: Collection[str] = ()) -> None:
    """The flattened config as params (``algorithms.selective_backprop.keep``, ...), less the settings the run does
    not read (``applied_params``) and those it logs itself (``measured``: see ``measured_params``), and each
    algorithm's ``required_on_load`` flag as a tag, within MLflow's length and batch limits."""
    flat = {key: value for key, value in applied_params(config).items() if key not in measured}
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


def applied_params(config: ExperimentConfig) -> dict[str, Any]:
    """``config.flatten()`` without the settings the run does not read (the module's docstring says which)."""
    from raycomp.models import LANGUAGE_MODEL_NAMES

    model, data = config.model, config.data
    if model.class_path is not None:  # its own init_args say what it is; its classes are measured
        unread_sizes: tuple[str, ...] = ("num_classes", *_LANGUAGE_MODEL_SIZES)
    else:
        unread_sizes = ("num_classes",) if model.name in LANGUAGE_MODEL_NAMES else _LANGUAGE_MODEL_SIZES
    unused = {f"model.{size}" for size in unread_sizes}
    if data.class_path is not None:  # its loaders' settings are measured
        read: tuple[str, ...] = ()
        unused |= {f"data.{setting}" for setting in _LOADER_SETTINGS}
    else:
        read = _DATASET_SETTINGS.get(data.name, tuple(_READER_SETTINGS))
    unused |= {f"data.{setting}" for setting in _READER_SETTINGS if setting not in read}
    if config.optimizer.class_path is None and config.optimizer.name != "sgd":
        unused |= {"optimizer.momentum", "optimizer.nesterov"}
    if config.schedule.class_path is None:
        name = config.schedule.name
        unused |= {f"schedule.{key}" for key, names in _SCHEDULE_SETTINGS.items() if name not in names}
    return {key: value for key, value in config.flatten().items() if key not in unused}


def measured_params(state: State) -> dict[str, Any]:
    """The loader settings a run really uses, read from its DataLoaders (a user's data module sets its own), and the
    ``max_duration`` it trains to (a frontier trial's workers count theirs in their loader's steps)."""
    found: dict[str, Any] = {"max_duration": str(state.max_duration)}
    train = state.train_dataloader
    if getattr(train, "batch_size", None) is not None:
        found["data.batch_size"] = train.batch_size  # type: ignore[union-attr]
    if isinstance(getattr(train, "num_workers", None), int):
        found["data.num_workers"] = train.num_workers  # type: ignore[union-attr]
    for evaluator in state.evaluators:
        if evaluator.label == keys.EVAL_LABEL and getattr(evaluator.dataloader, "batch_size", None) is not None:
            found["data.eval_batch_size"] = evaluator.dataloader.batch_size  # type: ignore[attr-defined]
    return found


def measured_classes(outputs: Any, batch: Any) -> int | None:
    """A classifier's number of classes: the width of its ``(batch, classes)`` outputs on labelled data, else None."""
    from raycomp.models.base import class_labels

    return int(outputs.shape[-1]) if class_labels(outputs, batch) is not None else None


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
