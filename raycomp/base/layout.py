"""Where a run's files go: ``storage_path/name/...`` and the default MLflow store beside it.

The only module that knows the folder layout, that a storage path may be a URI, and where the
default SQLite store lives; everything else asks a ``RunLayout``.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from pathlib import Path

MLFLOW_DB = "mlflow.db"
MLFLOW_ARTIFACTS = "mlartifacts"
TRIAL_HISTORY = "history.jsonl"  # in a Tune trial's folder: every result the trial reported, written by the trial
# The same file in a trial's folder in a bucket, under the name Tune's JSON logger (off there) gives it: JSON lines,
# one a result. Tune's ResultGrid then finds each trial's results with one HEAD and a GET, where two files it could
# not find cost a HEAD and a LIST each, one trial after another at every experiment's end (issue 33).
STORED_TRIAL_HISTORY = "result.json"


def is_uri(path: str) -> bool:
    """``s3://...``, ``gs://...``: storage no local path can name."""
    return "://" in path


def join_uri(uri: str, *parts: str) -> str:
    """``parts`` appended to the path of ``uri``, before its query (``s3://b/runs?endpoint_override=...``)."""
    path, question, query = uri.partition("?")
    return "/".join([path.rstrip("/"), *parts]) + question + query


# pyarrow's S3 filesystem writes every file as a multipart upload, three requests however small the file; with this
# option it writes a file under 5 MB with one PutObject (Arrow GH-40557). A bucket's files are small (a trial's
# result.json at every report, params.json, Tune's state, most checkpoints), so this is a third of the requests.
# Its cost: a write to a missing bucket fails when the file is closed instead of when it is opened.
S3_ONE_REQUEST_WRITES = "allow_delayed_open"


def opened_uri(uri: str) -> str:
    """``uri`` as raycomp hands it to Ray and pyarrow: an ``s3://`` URI gains ``allow_delayed_open=true``
    (``S3_ONE_REQUEST_WRITES``) unless it sets that option itself; anything else is returned as it is. Only
    where storage is opened: the run's name in MLflow and what the CLIs print keep the URI as written."""
    if not uri.startswith("s3://"):
        return uri
    path, _, query = uri.partition("?")
    if any(key == S3_ONE_REQUEST_WRITES for key, _ in urllib.parse.parse_qsl(query, keep_blank_values=True)):
        return uri
    return f"{path}?{query}{'&' if query else ''}{S3_ONE_REQUEST_WRITES}=true"


def resolved_storage(storage_path: str) -> str:
    """``storage_path`` made absolute against the working directory; URIs are kept as they are."""
    return storage_path if is_uri(storage_path) else os.path.abspath(os.path.expanduser(storage_path))


@dataclasses.dataclass(frozen=True)
class RunLayout:
    """The folders and files of one sweep or run named ``name`` under ``storage_path``."""

    storage: str  # resolved: absolute path or URI
    name: str

    @classmethod
    def of(cls, storage_path: str, name: str) -> RunLayout:
        return cls(resolved_storage(storage_path), name)

    @property
    def run_dir(self) -> str:
        """Ray's folder for the sweep or run (a URI under remote storage)."""
        return join_uri(self.storage, self.name) if is_uri(self.storage) else os.path.join(self.storage, self.name)

    @property
    def local_dir(self) -> Path:
        """Where the driver writes results and the report: the run folder, or ``runs/name`` for URIs."""
        return Path("runs" if is_uri(self.storage) else self.storage) / self.name

    @property
    def train_dir(self) -> str:
        """Ray Train's storage for multi-worker trials (one run per trial id inside)."""
        return join_uri(self.run_dir, "train") if is_uri(self.storage) else os.path.join(self.run_dir, "train")

    @property
    def resume_dir(self) -> Path:
        """Where ``--resume-from`` downloads a checkpoint on the driver."""
        return self.local_dir / "resume_from"

    @property
    def lock_file(self) -> Path:
        """Held (``flock``) by the one process running this name; it names that process."""
        return self.local_dir / ".raycomp.lock"

    @property
    def training_config_file(self) -> Path:
        """The training-relevant config the run folder's checkpoints were trained with."""
        return self.local_dir / "training_config.json"

    @property
    def unsent_metrics_dir(self) -> Path:
        """Where an MLflow outage's unsent metric points wait, a file per run (``unsent_metrics``)."""
        return self.local_dir / "unsent_metrics"

    def unsent_metrics(self, run_id: str) -> Path:
        """Metric points an MLflow outage kept from run ``run_id``, sent when the run resumes."""
        return self.unsent_metrics_dir / f"{run_id}.jsonl"

    def run_key(self, kind: str) -> str:
        """The MLflow tag value that finds this sweep's or run's MLflow run again."""
        return f"{kind}:{self.storage}/{self.name}"

    @property
    def default_store_file(self) -> Path:
        """Where the default SQLite store lives: beside the run folder; for remote storage, in the working
        directory (``tracking.store`` decides when it is used)."""
        return Path(os.path.abspath(MLFLOW_DB)) if is_uri(self.storage) else Path(self.storage) / MLFLOW_DB

    @property
    def default_artifact_location(self) -> str:
        return (Path(self.storage) / MLFLOW_ARTIFACTS).as_uri()


def sqlite_path(uri: str) -> Path | None:
    """The file of a ``sqlite:///`` URI, else None."""
    return Path(uri.removeprefix("sqlite:///")) if uri.startswith("sqlite:///") else None
