"""Files written whole or not at all: a reader (or a crash) never sees half of one.

The content goes to a staging file beside the target (same filesystem, so the rename is atomic), is
synced to disk, and replaces the target in one ``os.replace``; the folder is synced too, so the rename
survives a power cut. A failure or an interrupt removes the staging file. The one owner of this pattern:
checkpoints, results, the report's page and figures, the config record and spilled metrics use it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO


@contextlib.contextmanager
def atomic_writer(path: str | Path) -> Iterator[BinaryIO]:
    """A binary file to write ``path``'s new content into; it replaces ``path`` only when the block succeeds."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, staging = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(staging, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(staging)
        raise
    sync_folder(path.parent)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Writes ``data`` to ``path`` whole: the old content or the new one, never a mix or a truncation."""
    with atomic_writer(path) as file:
        file.write(data)


def atomic_write_text(path: str | Path, text: str) -> None:
    atomic_write_bytes(path, text.encode())


def sync_folder(folder: Path) -> None:
    """Makes a rename in ``folder`` durable (POSIX); a filesystem that cannot sync folders is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
