"""Files written whole or not at all: a reader (or a crash) never sees half of one.

The text goes to a staging file beside the target (same filesystem, so the rename is atomic), is synced
to disk, and replaces the target in one ``os.replace``; a failure or an interrupt removes the staging file.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` whole: the old content or the new one, never a mix or a truncation."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())
