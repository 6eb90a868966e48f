"""A new SQLite store for MLflow, built whole, from a copy of an empty one where raycomp's cache has it."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import time
from pathlib import Path

from mlflow import MlflowClient
from mlflow.version import VERSION as mlflow_version

from raycomp.base.atomic_files import atomic_writer
from raycomp.base.cache import cache_root


def build_sqlite_store(database: Path) -> None:
    """A new SQLite store, built under a temporary name and linked into place whole.

    MLflow creates its schema in many statements: a first run interrupted meanwhile (Ctrl-C, a full disk)
    would leave a half-built ``mlflow.db`` that every later run fails to open (reliability notes, M6).
    ``os.link`` does not replace: when two processes build at once, the first store linked is kept.
    The build is a copy of an empty store kept in raycomp's cache, once one was built with this MLflow: its
    migrations cost far more CPU than a copy, and every new experiment folder pays it (every test too).
    """
    staging = database.with_name(f".{database.name}.{os.getpid()}.building")
    try:
        if not _copied_from_template(staging):
            MlflowClient(f"sqlite:///{staging}").search_experiments(max_results=1)  # creates and migrates
            _keep_as_template(staging)
        with contextlib.suppress(FileExistsError):
            os.link(staging, database)
    finally:
        staging.unlink(missing_ok=True)


def _template() -> Path:
    """An empty store built by this MLflow version (its schema is the version's)."""
    return cache_root() / "mlflow" / f"empty-store-{mlflow_version}.db"


def _copied_from_template(staging: Path) -> bool:
    """Whether ``staging`` is now a working empty store, copied from the template. Its Default experiment (id 0,
    which raycomp does not use) is given what a new build gives it: the artifact folder under the working
    directory and the time of now."""
    try:
        shutil.copyfile(_template(), staging)
        now = int(time.time() * 1000)
        with contextlib.closing(sqlite3.connect(staging)) as store, store:
            store.execute(
                "UPDATE experiments SET artifact_location = ?, creation_time = ?, last_update_time = ?"
                " WHERE experiment_id = 0",
                (str(Path.cwd() / "mlruns" / "0"), now, now),
            )
        MlflowClient(f"sqlite:///{staging}").search_experiments(max_results=1)  # a broken copy raises here
        return True
    except Exception:  # none yet, or not a store this MLflow opens: a cache, so build the store instead
        staging.unlink(missing_ok=True)
        return False


def _keep_as_template(store: Path) -> None:
    """Keeps a copy of the new, empty ``store`` for the next build."""
    with contextlib.suppress(OSError), atomic_writer(_template()) as file, store.open("rb") as source:
        shutil.copyfileobj(source, file)  # a read-only or full cache costs only the next build's migrations
