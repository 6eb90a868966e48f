"""A trial's newest checkpoint in remote storage (a bucket), which Tune's saved state may not know yet.

Tune restores a trial from the last checkpoint its saved sweep state registered. A driver killed outright
saved that state a while before it died, so the trial's folder in the bucket can hold newer checkpoints, up to
its final one; resuming from those, a trial that had finished trains no step again. On local storage
``newest_checkpoint`` reads the folder in place; here the newest is downloaded first.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs
from ray import tune

from raycomp.base.errors import CheckpointError, one_line
from raycomp.loop.checkpoint import file_in, load_checkpoint

_PREFIX = "checkpoint_"  # Tune's names for a trial's checkpoints: checkpoint_000000, ... (newest last)


@contextlib.contextmanager
def newest_stored_checkpoint() -> Iterator[Path | None]:
    """The newest checkpoint of this trial in remote storage that loads, as a local file while the context
    lasts; None on local storage or without one. A newer one that does not load is skipped, saying so."""
    storage = tune.get_context().get_storage()
    filesystem = storage.storage_filesystem
    if isinstance(filesystem, pyarrow.fs.LocalFileSystem):
        yield None
        return
    found = filesystem.get_file_info(pyarrow.fs.FileSelector(storage.trial_fs_path, allow_not_found=True))
    folders = sorted(
        (
            info.path
            for info in found
            if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(_PREFIX)
        ),
        reverse=True,
    )
    with tempfile.TemporaryDirectory(prefix="raycomp-stored-") as scratch:
        for remote in folders:
            local = Path(scratch) / Path(remote).name
            try:
                pyarrow.fs.copy_files(remote, str(local), source_filesystem=filesystem)
                path = file_in(local)
                load_checkpoint(path)
            except (CheckpointError, OSError) as error:
                print(f"warning: skipping checkpoint {remote}: {one_line(error, with_type=False)}", file=sys.stderr)
                continue
            yield path
            return
        yield None
