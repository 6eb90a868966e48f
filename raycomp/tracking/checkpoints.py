"""Checkpoints back from MLflow: ``runs:/<run_id>[/path]`` or a bare run id, for ``--resume-from``.

A bare run id (or ``runs:/<run_id>``) means the run's latest checkpoint, the one its
``raycomp.checkpoint.latest`` tag names; ``runs:/<run_id>/best`` its best by the sweep's metric.
"""

from __future__ import annotations

import re
from pathlib import Path

from raycomp.tracking.reporter import BEST_TAG, LATEST_TAG
from raycomp.tracking.store import make_client, one_line

_RUN_ID = re.compile(r"^[0-9a-f]{32}$")


class CheckpointNotFound(LookupError):
    """The run or its checkpoint does not exist; the message says which and how to find one."""


def parse_run_reference(reference: str) -> tuple[str, str | None]:
    """``(run_id, artifact path or None)`` from ``runs:/<id>[/path]`` or ``<id>``."""
    if reference.startswith("runs:/"):
        run_id, _, path = reference.removeprefix("runs:/").strip("/").partition("/")
    else:
        run_id, path = reference, ""
    if not _RUN_ID.match(run_id):
        raise CheckpointNotFound(f"{reference!r} is not an MLflow run id nor runs:/<run_id>[/path]")
    return run_id, path or None


def download_checkpoint(tracking_uri: str, reference: str, folder: str | Path) -> Path:
    """Downloads the referenced checkpoint file into ``folder``; returns its local path."""
    run_id, path = parse_run_reference(reference)
    client = make_client(tracking_uri)
    try:
        run = client.get_run(run_id)
    except Exception as error:
        raise CheckpointNotFound(f"no MLflow run {run_id} at {tracking_uri} ({one_line(error)})") from error
    if path in (None, "latest", "best"):
        tag = BEST_TAG if path == "best" else LATEST_TAG
        path = run.data.tags.get(tag)
        if path is None:
            raise CheckpointNotFound(f"MLflow run {run_id} has logged no checkpoint (no {tag} tag)")
    try:
        local = Path(client.download_artifacts(run_id, path, str(folder)))
    except Exception as error:
        raise CheckpointNotFound(f"no checkpoint {path!r} in MLflow run {run_id} ({one_line(error)})") from error
    return local / "checkpoint.pt" if local.is_dir() else local
