"""Temporary folders that Ctrl-C or SIGTERM cannot leave behind.

``tempfile.TemporaryDirectory`` leaks its folder when the interrupt lands while ``shutil.rmtree`` runs
(a checkpoint's megabytes take milliseconds to remove) or between ``mkdtemp`` and the ``try`` that guards
it. raycomp turns SIGTERM into ``KeyboardInterrupt`` (``raycomp.launch.signals``), so a stopped run would
leave a ``raycomp-*`` folder in TMPDIR for every such landing.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def scratch_folder(prefix: str) -> Iterator[Path]:
    """A new folder in TMPDIR, removed on the way out however the block ends."""
    # The name is known before the folder exists, so an interrupt just after mkdir still finds it;
    # 128 random bits mean no other process picks it.
    folder = Path(tempfile.gettempdir()) / f"{prefix}{uuid.uuid4().hex}"
    try:
        folder.mkdir(mode=0o700)
        yield folder
    finally:
        remove_tree(folder)


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
