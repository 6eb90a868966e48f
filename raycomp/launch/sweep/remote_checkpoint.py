"""A trial's folder in remote storage (a bucket): its newest checkpoint, which Tune's saved state may not know
yet, and its own history file.

Tune restores a trial from the last checkpoint its saved sweep state registered. A driver killed outright
saved that state a while before it died, so the trial's folder in the bucket can hold newer checkpoints, up to
its final one; resuming from those, a trial that had finished trains no step again. On local storage
``newest_checkpoint`` reads the folder in place; here the newest is downloaded first.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.fs
from ray import tune

from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import CheckpointError, one_line
from raycomp.base.layout import STORED_TRIAL_HISTORY
from raycomp.base.scratch import remove_abandoned, scratch_folder
from raycomp.launch.sinks import StoredFile
from raycomp.loop.checkpoint import file_in, load_checkpoint

_PREFIX = "checkpoint_"  # Tune's names for a trial's checkpoints: checkpoint_000000, ... (newest last)
_LOCAL = pyarrow.fs.LocalFileSystem()


def stored_history() -> StoredFile | None:
    """This trial's history in remote storage, ``result.json`` (layout.STORED_TRIAL_HISTORY; None on local storage,
    where the trial writes ``history.jsonl`` in its folder): without it, a trial resumed by a new driver lost the
    results it reported before its checkpoint (Tune's own record of them is the driver's, and the trial does not
    report them again)."""
    storage = tune.get_context().get_storage()
    if isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        return None
    return StoredFile(storage.storage_filesystem, f"{storage.trial_fs_path}/{STORED_TRIAL_HISTORY}")


def store_params(param: dict[str, Any]) -> None:
    """This trial's Tune config as ``params.json`` in its folder, as soon as the trial starts.

    ``ledger.lost_trial_folder`` finds by it a trial that a driver killed outright lost, and ``ledger.result_arm``
    reads a trial's arm from it when the trial failed before Tune kept its config. In a bucket Tune's own logger
    is off (``loggers.result_loggers``); on local storage it writes to the driver's staging folder, which reaches
    the trial's folder only at Tune's next experiment checkpoint, too late for a trial the driver's death lost."""
    storage = tune.get_context().get_storage()
    text = json.dumps(param, default=str)
    if isinstance(storage.storage_filesystem, pyarrow.fs.LocalFileSystem):
        folder = Path(storage.trial_fs_path)
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(folder / "params.json", text)
    else:
        StoredFile(storage.storage_filesystem, f"{storage.trial_fs_path}/params.json").write_text(text)


@contextlib.contextmanager
def newest_stored_checkpoint() -> Iterator[Path | None]:
    """The newest checkpoint of this trial in remote storage that loads, as a local file while the context
    lasts; None on local storage or without one."""
    storage = tune.get_context().get_storage()
    filesystem = storage.storage_filesystem
    if isinstance(filesystem, pyarrow.fs.LocalFileSystem):
        yield None
        return
    with newest_loadable_checkpoint(filesystem, storage.trial_fs_path) as path:
        yield path


@contextlib.contextmanager
def newest_loadable_checkpoint(filesystem: pyarrow.fs.FileSystem, folder: str) -> Iterator[Path | None]:
    """The newest ``checkpoint_*`` folder under ``folder`` on ``filesystem`` whose checkpoint loads, downloaded
    into a temporary folder while the context lasts; None without one. A newer one that does not load is
    skipped, saying so.

    The download folder is named after this process (``scratch_folder``): a trial killed outright mid-download
    (its node lost) leaves it behind, and the next download on that node removes it (``remove_abandoned``).
    """
    remove_abandoned()
    with scratch_folder("raycomp-stored-") as scratch:
        for remote in reversed(checkpoint_folders(filesystem, folder)):
            local = Path(scratch) / Path(remote).name
            # A bucket has no folders, only keys, so copy_files creates none: without this every download
            # failed ("Failed to open local file") and the trial trained again from Tune's older checkpoint.
            local.mkdir()
            try:
                pyarrow.fs.copy_files(remote, str(local), source_filesystem=filesystem, destination_filesystem=_LOCAL)
                path = file_in(local)
                load_checkpoint(path)
            except (CheckpointError, OSError) as error:
                print(f"warning: skipping checkpoint {remote}: {one_line(error, with_type=False)}", file=sys.stderr)
                continue
            yield path
            return
        yield None


def checkpoint_folders(filesystem: pyarrow.fs.FileSystem, folder: str) -> list[str]:
    """A trial folder's ``checkpoint_*`` folders on ``filesystem``, oldest first (Tune numbers them in order)."""
    found = filesystem.get_file_info(pyarrow.fs.FileSelector(folder, allow_not_found=True))
    return sorted(
        info.path for info in found if info.type == pyarrow.fs.FileType.Directory and info.base_name.startswith(_PREFIX)
    )
