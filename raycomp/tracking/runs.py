"""The shape of what is tracked: one parent run per sweep, a child run per trial, one run per training.

Runs are found again by tags, not by process state: a restored sweep reopens its parent run
(``raycomp.run_key``), and a restarted or restored trial reopens its child (``raycomp.trial_id``
under ``mlflow.parentRunId``), so retries append to the run they belong to.
"""

from __future__ import annotations

import importlib.metadata
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from mlflow import MlflowClient
from mlflow.entities import Param, RunTag
from mlflow.utils.validation import MAX_ENTITY_KEY_LENGTH, MAX_PARAM_VAL_LENGTH, MAX_PARAMS_TAGS_PER_BATCH

from raycomp.config import ExperimentConfig, algorithm_class
from raycomp.tracking.store import RunRef, one_line, open_experiment, tracking_uri

PARENT_TAG = "mlflow.parentRunId"
TRIAL_TAG = "raycomp.trial_id"
RUN_KEY_TAG = "raycomp.run_key"  # the sweep or run folder: storage_path/name
FINISHED, FAILED, KILLED = "FINISHED", "FAILED", "KILLED"


def start_run(
    config: ExperimentConfig, *, kind: str, experiment_file: str | None = None, reopen: bool = False
) -> RunRef:
    """A top-level run for a sweep (``kind="sweep"``) or a training (``"train"``), tagged and with its config.

    ``reopen`` continues the latest unfinished run of the same ``storage_path/name`` instead (a resumed
    sweep or training); without one, a new run starts. Raises ``TrackingUnavailable`` if the store is down.
    """
    client, experiment_id = open_experiment(config)
    key = f"{kind}:{config.resolved_storage_path()}/{config.name}"
    if reopen:
        previous = _find(client, experiment_id, {RUN_KEY_TAG: key})
        if previous is not None and previous.info.status != FINISHED:
            client.update_run(previous.info.run_id, status="RUNNING")
            return RunRef(tracking_uri(config), experiment_id, previous.info.run_id)
    tags = {**environment_tags(experiment_file), RUN_KEY_TAG: key, "raycomp.kind": kind}
    run = client.create_run(experiment_id, tags=tags, run_name=config.name)
    ref = RunRef(tracking_uri(config), experiment_id, run.info.run_id)
    client.log_text(ref.run_id, yaml.safe_dump(config.to_dict(), sort_keys=False), "config.yaml")
    if kind == "train":
        log_config(client, ref.run_id, config)
    return ref


def start_trial_run(parent: RunRef, trial_id: str, variant: str, config: ExperimentConfig) -> RunRef:
    """The child run of one trial under the sweep's run, reopened if the trial ran before (a restore)."""
    client = parent.client()
    previous = _find(client, parent.experiment_id, {PARENT_TAG: parent.run_id, TRIAL_TAG: trial_id})
    if previous is not None:
        client.update_run(previous.info.run_id, status="RUNNING")
        return RunRef(parent.tracking_uri, parent.experiment_id, previous.info.run_id)
    tags = {PARENT_TAG: parent.run_id, TRIAL_TAG: trial_id, "raycomp.variant": variant, "raycomp.kind": "trial"}
    run = client.create_run(parent.experiment_id, tags=tags, run_name=f"{trial_id}-{variant}")
    log_config(client, run.info.run_id, config)
    return RunRef(parent.tracking_uri, parent.experiment_id, run.info.run_id)


def log_config(client: MlflowClient, run_id: str, config: ExperimentConfig) -> None:
    """The flattened config as params (``algorithms.selective_backprop.keep``, ...) and each algorithm's
    ``required_on_load`` flag as a tag, within MLflow's length and batch limits."""
    params = [Param(_key(key), _value(value)) for key, value in sorted(config.flatten().items())]
    tags = [RunTag("raycomp.algorithms", ",".join(config.algorithms) or "none")]
    for name in config.algorithms:
        required = bool(algorithm_class(name).required_on_load())
        tags.append(RunTag(f"raycomp.algorithm.{name}.required_on_load", str(required).lower()))
    for start in range(0, len(params), MAX_PARAMS_TAGS_PER_BATCH):
        client.log_batch(run_id, params=params[start : start + MAX_PARAMS_TAGS_PER_BATCH])
    client.log_batch(run_id, tags=tags)


def end_run(ref: RunRef, status: str, *, only_if_running: bool = False) -> bool:
    """Marks the run FINISHED, FAILED or KILLED (``only_if_running``: unless it already ended).

    Never raises: it runs while a failure is being handled. A store that does not answer is reported.
    """
    try:
        client = ref.client()
        if only_if_running and client.get_run(ref.run_id).info.status != "RUNNING":
            return True
        client.set_terminated(ref.run_id, status=status)
        return True
    except Exception as error:
        print(f"raycomp: could not mark MLflow run {ref.run_id} {status}: {one_line(error)}", file=sys.stderr)
        return False


def close_trial_run(ref: RunRef, *, failed: bool, only_if_running: bool = False) -> bool:
    """Ends a trial's run: FAILED on an error, else FINISHED if it reported its final result, else KILLED.

    Tune ends a trial it stops (ASHA) and one that is done alike, so the run's own ``finished`` metric,
    logged with every report, tells them apart.
    """
    status = FAILED
    if not failed:
        try:
            finished = ref.client().get_run(ref.run_id).data.metrics.get("finished")
        except Exception:
            finished = None
        status = FINISHED if finished == 1.0 else KILLED
    return end_run(ref, status, only_if_running=only_if_running)


def find_trial_run(parent: RunRef, trial_id: str) -> RunRef | None:
    run = _find(parent.client(), parent.experiment_id, {PARENT_TAG: parent.run_id, TRIAL_TAG: trial_id})
    return RunRef(parent.tracking_uri, parent.experiment_id, run.info.run_id) if run else None


def environment_tags(experiment_file: str | None) -> dict[str, str]:
    """Versions of raycomp and the stack, the experiment file and, in a git checkout, its commit."""
    tags = {f"raycomp.version.{name}": _version(name) for name in ("raycomp", "ray", "torch", "mlflow")}
    if experiment_file:
        tags["raycomp.experiment_file"] = str(experiment_file)
        tags["mlflow.source.name"] = str(experiment_file)
        commit = _git_commit(Path(experiment_file).resolve().parent)
        if commit:
            tags["mlflow.source.git.commit"] = commit
    return tags


def _find(client: MlflowClient, experiment_id: str, tags: Mapping[str, str]) -> Any:
    query = " and ".join(f"tags.`{key}` = '{value}'" for key, value in tags.items())
    runs = client.search_runs([experiment_id], query, max_results=1, order_by=["attributes.start_time DESC"])
    return runs[0] if runs else None


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


__all__ = [
    "FAILED",
    "FINISHED",
    "KILLED",
    "close_trial_run",
    "end_run",
    "environment_tags",
    "find_trial_run",
    "log_config",
    "start_run",
    "start_trial_run",
]
