"""Where runs are tracked: the tracking URI, the MLflow experiment, and a reachability check at start.

The URI comes from the experiment's ``tracking.tracking_uri``, else ``MLFLOW_TRACKING_URI``, else a
SQLite store beside the experiment's output (``raycomp.base.layout``: ``<storage_path>/mlflow.db``,
artifacts in ``<storage_path>/mlartifacts``): MLflow 3's recommended local backend, so a laptop needs
no server. Every process builds its own ``MlflowClient``; no process-global active run is used.
"""

from __future__ import annotations

import contextlib
import os
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests
from mlflow import MlflowClient
from mlflow.exceptions import MlflowException

from raycomp.base.errors import TrackingUnavailable, one_line
from raycomp.base.layout import MLFLOW_DB, is_uri, sqlite_path
from raycomp.base.process_env import environment
from raycomp.base.redaction import without_credentials, without_secret_query
from raycomp.config import ExperimentConfig
from raycomp.tracking.experiment_page import mark_training_experiment
from raycomp.tracking.ref import redacted_uri
from raycomp.tracking.sqlite_store import build_sqlite_store

# A server that is down must not stall training: MLflow's defaults retry for minutes. A failed send
# is kept and sent again at the next report (client.py), so a few quick tries are enough, without
# exponential backoff (MLflow's factor is an integer: 1 slept ~3 s a call, and a find on a dead server
# made dozens of calls: its driver and trials sat in those sleeps). A random wait of up to half a second
# before the second retry keeps many trials from calling a recovering server at once; a 429 or 503's
# Retry-After is still honoured.
HTTP_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "0",
    "MLFLOW_HTTP_REQUEST_BACKOFF_JITTER": "0.5",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "10",
}
# At start nothing has been sent yet: a store that is down is told at once. A server's /health is asked
# first: one that answers is alive, however slowly its API answers (a fresh server's first call took over
# 5 s on a loaded VM: reliability notes, D13), and gets FIRST_ANSWER_S in all, tried again after a timeout, a
# lost connection or a 5xx. Nothing listening is refused within PROBE_S; a health probe that hangs, too.
PROBE_S = 5
FIRST_ANSWER_S = 30
_RETRY_AFTER_S = 1.0
_TRANSIENT_STATUS = frozenset({429, 500, 502, 503, 504})


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
            build_sqlite_store(database)
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


def open_experiment(config: ExperimentConfig) -> tuple[MlflowClient, str]:
    """The client and the id of the config's MLflow experiment, created if new.

    Raises ``TrackingUnavailable`` (one line: the URI and the cause) when the store does not answer,
    before anything else starts: within ``PROBE_S`` when nothing answers, within about ``FIRST_ANSWER_S``
    when a server's ``/health`` answers but its API does not (each call of a try waits at most the time
    left). With the default SQLite store, artifacts go beside it.
    """
    uri = tracking_uri(config)
    began = time.monotonic()
    alive = server_answers(uri, PROBE_S)
    if alive is False and time.monotonic() - began >= PROBE_S:  # it hung: its API would hang as long
        raise TrackingUnavailable(
            f"MLflow tracking store {redacted_uri(uri)} is not reachable: its /health gave no answer in {PROBE_S} s"
        )
    deadline = began + FIRST_ANSWER_S
    while True:
        seconds = max(1, round(deadline - time.monotonic())) if alive else PROBE_S
        try:
            with _one_try(seconds):
                return _open_experiment(config, uri)
        except Exception as error:
            if alive and _transient(error) and time.monotonic() + _RETRY_AFTER_S < deadline:
                time.sleep(_RETRY_AFTER_S)
                continue
            raise _unavailable(uri, error) from error


def _open_experiment(config: ExperimentConfig, uri: str) -> tuple[MlflowClient, str]:
    client = make_client(uri)
    name = experiment_name(config)
    experiment = client.get_experiment_by_name(name)
    if experiment is None:
        created = client.create_experiment(name, artifact_location=_artifact_location(config, uri))
        experiment = client.get_experiment(created)
    mark_training_experiment(client, experiment, *config.objective)  # MLflow's UI opens on the runs
    return client, experiment.experiment_id


@contextlib.contextmanager
def _one_try(seconds: int) -> Iterator[None]:
    """MLflow's HTTP calls in the block: no retries of their own, each waiting at most ``seconds``."""
    with environment({"MLFLOW_HTTP_REQUEST_MAX_RETRIES": "0", "MLFLOW_HTTP_REQUEST_TIMEOUT": str(seconds)}):
        yield


def _transient(error: BaseException) -> bool:
    """A failure a live server may not repeat: a timeout, a lost connection, 429 or a 5xx (not a refusal)."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, requests.exceptions.Timeout | requests.exceptions.ConnectionError):
            return True
        if isinstance(seen, MlflowException) and seen.get_http_status_code() in _TRANSIENT_STATUS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _unavailable(uri: str, error: BaseException) -> TrackingUnavailable:
    cause = one_line(error, with_type=False)
    database = sqlite_path(uri)
    if database is not None:
        return TrackingUnavailable(
            f"MLflow's SQLite store {database} could not be opened: {cause} (if an older raycomp was "
            "interrupted while creating it, move the file aside: a new one is then created)"
        )
    return TrackingUnavailable(f"MLflow tracking store {redacted_uri(uri)} is not reachable: {cause}")


def health_url(uri: str) -> str | None:
    """An HTTP(S) tracking server's health endpoint, without the URI's credentials; None for other stores."""
    parts = urlsplit(uri)
    if parts.scheme not in ("http", "https"):
        return None
    host = parts.netloc.rsplit("@", 1)[-1]
    return urlunsplit((parts.scheme, host, parts.path.rstrip("/") + "/health", "", ""))


def server_answers(uri: str, timeout_s: float) -> bool | None:
    """Whether the server at ``uri`` gives any HTTP reply to ``/health`` within ``timeout_s`` (an error status
    counts: it is alive); None for a store that is no server."""
    url = health_url(uri)
    if url is None:
        return None
    try:
        with urllib.request.urlopen(url, timeout=timeout_s):
            return True
    except urllib.error.HTTPError:
        return True
    except Exception:  # refused, unreachable, or silent past the timeout
        return False


def _artifact_location(config: ExperimentConfig, uri: str) -> str | None:
    """Beside our default SQLite file; a server or a user's URI decides for itself."""
    layout = config.layout
    if is_uri(layout.storage) or uri != _sqlite_uri(layout.default_store_file):
        return None
    return layout.default_artifact_location
