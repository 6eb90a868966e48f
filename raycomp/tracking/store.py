"""Where runs are tracked: the tracking URI, the MLflow experiment, and a reachability check at start.

The URI comes from the experiment's ``tracking.tracking_uri``, else ``MLFLOW_TRACKING_URI``, else a
SQLite store beside the experiment's output (``raycomp.base.layout``: ``<storage_path>/mlflow.db``,
artifacts in ``<storage_path>/mlartifacts``): MLflow 3's recommended local backend, so a laptop needs
no server. Every process builds its own ``MlflowClient``; no process-global active run is used.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from mlflow import MlflowClient

from raycomp.base.errors import TrackingUnavailable, one_line
from raycomp.base.layout import MLFLOW_DB, is_uri, sqlite_path
from raycomp.base.process_env import environment
from raycomp.base.redaction import without_credentials, without_secret_query
from raycomp.config import ExperimentConfig
from raycomp.tracking.experiment_page import mark_training_experiment
from raycomp.tracking.ref import redacted_uri

# A server that is down must not stall training: MLflow's defaults retry for minutes. A failed send
# is kept and sent again at the next report (client.py), so a few quick tries are enough.
HTTP_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
# At start nothing has been sent yet: one quick try tells the user at once that the store is down.
_REACHABILITY_ENV = {"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": "5"}


def tracking_uri(config: ExperimentConfig) -> str:
    """The store a command uses: the config's URI, else ``MLFLOW_TRACKING_URI``, else the SQLite store
    beside the run folder. The one place this choice is made (``tracking_uri_near`` reads it back)."""
    if config.tracking.tracking_uri:
        return config.tracking.tracking_uri
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    return _sqlite_uri(config.layout.default_store_file)


def tracking_uri_near(sweep_folder: Path | None) -> str | None:
    """The store a sweep written to ``sweep_folder`` (else to ``runs/``) used when its config named none:
    ``MLFLOW_TRACKING_URI``, else the default SQLite store beside the folder if it exists (``python -m
    raycomp.report`` has no config to ask)."""
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return os.environ["MLFLOW_TRACKING_URI"]
    database = (sweep_folder.parent if sweep_folder is not None else Path("runs")) / MLFLOW_DB
    return _sqlite_uri(database) if database.is_file() else None


def _sqlite_uri(database: Path) -> str:
    return f"sqlite:///{database.absolute()}"


def experiment_name(config: ExperimentConfig) -> str:
    return config.tracking.experiment_name or config.name


def make_client(uri: str) -> MlflowClient:
    """A client for ``uri`` with the short HTTP retry caps; a SQLite store's folder is created.

    Credentials in the URI's host part go to MLflow by its environment variables, and the client gets the
    URI without them: MLflow quotes its URI in every error, which trials print and Ray keeps in its logs.
    """
    for key, value in HTTP_ENV.items():
        os.environ.setdefault(key, value)
    if redacted_uri(uri) != uri:  # MLflow prints "View run ... at <uri>" with a query's token in it
        os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    database = sqlite_path(uri)
    if database is not None:
        database.parent.mkdir(parents=True, exist_ok=True)
        if not database.exists():
            _build_sqlite_store(database)
    return MlflowClient(client_uri(uri))


def client_uri(uri: str) -> str:
    """The URI MLflow is given: ``uri`` without the credentials of its host, which are set as MLflow's
    ``MLFLOW_TRACKING_USERNAME``/``MLFLOW_TRACKING_PASSWORD`` for this process instead, and, for a server,
    without secret query values, which MLflow cannot send as a query anyway (``without_secret_query``)."""
    bare, user, password = without_credentials(without_secret_query(uri))
    if user is not None:
        os.environ["MLFLOW_TRACKING_USERNAME"] = user
    if password is not None:
        os.environ["MLFLOW_TRACKING_PASSWORD"] = password
    return bare


def _build_sqlite_store(database: Path) -> None:
    """A new SQLite store, built under a temporary name and linked into place whole.

    MLflow creates its schema in many statements: a first run interrupted meanwhile (Ctrl-C, a full disk)
    would leave a half-built ``mlflow.db`` that every later run fails to open (reliability notes, M6).
    ``os.link`` does not replace: when two processes build at once, the first store linked is kept.
    """
    staging = database.with_name(f".{database.name}.{os.getpid()}.building")
    try:
        MlflowClient(f"sqlite:///{staging}").search_experiments(max_results=1)  # creates and migrates
        with contextlib.suppress(FileExistsError):
            os.link(staging, database)
    finally:
        staging.unlink(missing_ok=True)


def open_experiment(config: ExperimentConfig) -> tuple[MlflowClient, str]:
    """The client and the id of the config's MLflow experiment, created if new.

    Raises ``TrackingUnavailable`` (one line: the URI and the cause) when the store does not answer,
    before anything else starts. With the default SQLite store, artifacts go beside it.
    """
    uri = tracking_uri(config)
    try:
        with environment(_REACHABILITY_ENV):
            client = make_client(uri)
            name = experiment_name(config)
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                created = client.create_experiment(name, artifact_location=_artifact_location(config, uri))
                experiment = client.get_experiment(created)
            mark_training_experiment(client, experiment, *config.objective)  # MLflow's UI opens on the runs
            return client, experiment.experiment_id
    except Exception as error:
        cause = one_line(error, with_type=False)
        database = sqlite_path(uri)
        if database is not None:
            raise TrackingUnavailable(
                f"MLflow's SQLite store {database} could not be opened: {cause} (if an older raycomp was "
                "interrupted while creating it, move the file aside: a new one is then created)"
            ) from error
        raise TrackingUnavailable(f"MLflow tracking store {redacted_uri(uri)} is not reachable: {cause}") from error


def _artifact_location(config: ExperimentConfig, uri: str) -> str | None:
    """Beside our default SQLite file; a server or a user's URI decides for itself."""
    layout = config.layout
    if is_uri(layout.storage) or uri != _sqlite_uri(layout.default_store_file):
        return None
    return layout.default_artifact_location
