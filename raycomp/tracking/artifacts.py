"""Checkpoints back from MLflow: ``runs:/<run_id>[/path]`` or a bare run id, for ``--resume-from``.

A bare run id (or ``runs:/<run_id>``) means the run's latest checkpoint, the one its
``raycomp.loop.checkpoint.latest`` tag names; ``runs:/<run_id>/best`` its best by the sweep's metric. Runs logged
before the tags were renamed (``raycomp.checkpoint.latest``, ``.best``) resolve the same way.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from raycomp.base import keys
from raycomp.base.errors import NotFound, one_line
from raycomp.tracking.ref import redacted_uri
from raycomp.tracking.store import make_client

RUN_ID = re.compile(r"^[0-9a-f]{32}$")  # what an MLflow run id looks like


def parse_run_reference(reference: str) -> tuple[str, str | None]:
    """``(run_id, artifact path or None)`` from ``runs:/<id>[/path]`` or ``<id>``."""
    if reference.startswith("runs:/"):
        run_id, _, path = reference.removeprefix("runs:/").strip("/").partition("/")
    else:
        run_id, path = reference, ""
    if not RUN_ID.match(run_id):
        raise NotFound(f"{reference!r} is not an MLflow run id nor runs:/<run_id>[/path]")
    return run_id, path or None


def checkpoint_tag(tags: Mapping[str, str], tag: str) -> str | None:
    """The value of a checkpoint ``tag`` (``keys.LATEST_TAG``, ``BEST_TAG``, ``BEST_VALUE_TAG``) among a run's
    ``tags``, under its current name or, for a run logged before the rename, its old one; None if neither."""
    value = tags.get(tag)
    return value if value is not None else tags.get(keys.TAGS_BEFORE_FOLDER_MOVE.get(tag, tag))


def download_checkpoint(tracking_uri: str, reference: str, folder: str | Path) -> Path:
    """Downloads the referenced checkpoint file into ``folder``; returns its local path.

    Raises ``NotFound`` naming what is missing: the run, its checkpoint tag, or the artifact.
    """
    run_id, path = parse_run_reference(reference)
    client = make_client(tracking_uri)
    try:
        run = client.get_run(run_id)
    except Exception as error:
        raise NotFound(f"no MLflow run {run_id} at {redacted_uri(tracking_uri)} ({one_line(error)})") from error
    if path in (None, "latest", "best"):
        tag = keys.BEST_TAG if path == "best" else keys.LATEST_TAG
        path = checkpoint_tag(run.data.tags, tag)
        if path is None:
            raise NotFound(f"MLflow run {run_id} has logged no checkpoint (no {tag} tag)")
    try:
        local = Path(client.download_artifacts(run_id, path, str(folder)))
    except Exception as error:
        raise NotFound(f"no checkpoint {path!r} in MLflow run {run_id} ({one_line(error)})") from error
    return local / keys.CHECKPOINT_FILE if local.is_dir() else local
