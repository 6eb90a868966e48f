"""Temporary folders that Ctrl-C or SIGTERM cannot leave behind.

``tempfile.TemporaryDirectory`` leaks its folder when the interrupt lands while ``shutil.rmtree`` runs
(a checkpoint's megabytes take milliseconds to remove) or between ``mkdtemp`` and the ``try`` that guards
it. raycomp turns SIGTERM into ``KeyboardInterrupt`` (``raycomp.launch.signals``), so a stopped run would
leave a ``raycomp-*`` folder in TMPDIR for every such landing. A process killed outright (SIGKILL) runs no
removal at all: each folder's name holds its process id, and ``remove_abandoned`` clears those whose process
is gone when the next raycomp command starts.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new folder in TMPDIR, removed on the way out however the block ends."""
    # The name is known before the folder exists, so an interrupt just after mkdir still finds it;
    # 128 random bits mean no other process picks it.
    folder = Path(tempfile.gettempdir()) / f"{prefix}{os.getpid()}-{uuid.uuid4().hex}"
    try:
        folder.mkdir(mode=0o700)
        yield folder
    finally:
        remove_tree(folder)


def process_scratch_path(prefix: str) -> Path:
    """The scratch folder in TMPDIR of this process for one use (``prefix``), named by its process id alone:
    shorter than ``scratch_folder``'s, for a private Ray's sockets (a unix socket's path holds 107 bytes at
    most). ``remove_abandoned`` knows it. Not created; the caller removes it."""
    return Path(tempfile.gettempdir()) / f"{prefix}{os.getpid()}"


def remove_tree(folder: Path) -> None:
    """Removes ``folder`` whole, finishing the removal when an interrupt lands mid-way, then re-raising it."""
    interrupted: BaseException | None = None
    while True:
        try:
            shutil.rmtree(folder, ignore_errors=True)
            break
        except KeyboardInterrupt as error:  # a second Ctrl-C or SIGTERM: finish, then stop as asked
            interrupted = error
    if interrupted is not None:
        raise interrupted


_NAME = re.compile(r"raycomp-[a-z]+-(\d+)(?:-[0-9a-f]{32})?")
_ABANDONED_AFTER_S = 60.0  # a folder this old whose process is gone is no one's (a pid is reused only later)


def remove_abandoned(folder: Path | None = None) -> int:
    """Removes the scratch folders in TMPDIR (or ``folder``) of processes that no longer run; their count."""
    removed = 0
    root = folder or Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for path in root.iterdir():
            match = _NAME.fullmatch(path.name)
            if match is None or _alive(int(match.group(1))):
                continue
            with contextlib.suppress(OSError):
                if time.time() - path.stat().st_mtime > _ABANDONED_AFTER_S:
                    remove_tree(path)
                    removed += 1
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True
