"""Where runs are tracked: the tracking URI, the MLflow experiment, and a reachability check at start.

The URI comes from the experiment's ``tracking.tracking_uri``, else ``MLFLOW_TRACKING_URI``, else a
SQLite store beside the experiment's output (``<storage_path>/mlflow.db``, artifacts in
``<storage_path>/mlartifacts``): MLflow 3's recommended local backend, so a laptop needs no server.
Every process builds its own ``MlflowClient`` from a ``RunRef``; no process-global active run is used.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from mlflow import MlflowClient

from raycomp.config import ExperimentConfig

# A server that is down must not stall training: MLflow's defaults retry for minutes. A failed send
# is kept and sent again at the next report (see run.py), so a few quick tries are enough.
HTTP_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}


class TrackingUnavailable(RuntimeError):
    """The tracking store cannot be reached or opened; the message is one line for the CLI."""


@dataclasses.dataclass(frozen=True)
class RunRef:
    """One MLflow run, as plain data that crosses process boundaries (Ray workers, Tune trials)."""

    tracking_uri: str
    experiment_id: str
    run_id: str

    def to_dict(self) -> dict[str, str]:
        return dataclasses.asdict(self)

    def client(self) -> MlflowClient:
        return make_client(self.tracking_uri)


def tracking_uri(config: ExperimentConfig) -> str:
    """The config's URI, else ``MLFLOW_TRACKING_URI``, else ``sqlite:///<storage_path>/mlflow.db``."""
    if config.tracking.tracking_uri:
        return config.tracking.tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    storage = config.resolved_storage_path()
    if "://" in storage:  # remote storage (s3://...): no local file beside it; MLflow's own default
        return f"sqlite:///{os.path.abspath('mlflow.db')}"
    return f"sqlite:///{Path(storage) / 'mlflow.db'}"


def experiment_name(config: ExperimentConfig) -> str:
    return config.tracking.experiment_name or config.name


def make_client(uri: str) -> MlflowClient:
    for key, value in HTTP_ENV.items():
        os.environ.setdefault(key, value)
    if uri.startswith("sqlite:///"):
        Path(uri.removeprefix("sqlite:///")).parent.mkdir(parents=True, exist_ok=True)
    return MlflowClient(uri)


def open_experiment(config: ExperimentConfig) -> tuple[MlflowClient, str]:
    """The client and the id of the config's MLflow experiment, created if new.

    Raises ``TrackingUnavailable`` (one line: the URI and the cause) when the store does not answer,
    before anything else starts. With the default SQLite store, artifacts go beside it.
    """
    uri = tracking_uri(config)
    saved = {key: os.environ.get(key) for key in ("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "MLFLOW_HTTP_REQUEST_TIMEOUT")}
    os.environ.update({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"})
    try:
        client = make_client(uri)
        name = experiment_name(config)
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            return client, experiment.experiment_id
        return client, client.create_experiment(name, artifact_location=_artifact_location(config, uri))
    except Exception as error:
        raise TrackingUnavailable(f"MLflow tracking store {uri} is not reachable: {_one_line(error)}") from error
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _artifact_location(config: ExperimentConfig, uri: str) -> str | None:
    """Beside our default SQLite file; a server or a user's URI decides for itself."""
    if uri != f"sqlite:///{Path(config.resolved_storage_path()) / 'mlflow.db'}":
        return None
    return (Path(config.resolved_storage_path()) / "mlartifacts").as_uri()


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split()) or type(error).__name__
    return text if len(text) <= 300 else text[:297] + "..."


def one_line(error: BaseException) -> str:
    """An exception as one short line, for warnings printed while training goes on."""
    return f"{type(error).__name__}: {_one_line(error)}"


__all__ = [
    "RunRef",
    "TrackingUnavailable",
    "experiment_name",
    "make_client",
    "one_line",
    "open_experiment",
    "tracking_uri",
]
