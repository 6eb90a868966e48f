"""A trial checkpoint that Tune's saved state names but Tune's retention already deleted, stood in for on resume.

Tune deletes a trial's checkpoints beyond ``num_to_keep`` as soon as it registers a newer one, and saves the sweep's
state (which names each trial's newest checkpoint) only at its next snapshot: it forces one every ``num_to_keep``
checkpoints, but after that deletion. A driver that dies in between (Ray stopped under it, the machine lost) leaves
a state naming a deleted checkpoint, and restoring that trial then fails every retry ("does not exist on storage
anymore") although its folder holds newer checkpoints. Before Tune restores the sweep, each trial whose named
checkpoint is gone gets a copy of the newest one its folder holds, under that name. The trial resumes from its
newest checkpoint in any case (``trial.newest_checkpoint``, ``remote_checkpoint.newest_stored_checkpoint``).
"""

from __future__ import annotations

import fnmatch
import json
import posixpath
import sys

import pyarrow.fs
from ray.tune.experiment.trial import Trial

from raycomp.base.errors import one_line
from raycomp.launch.sweep.ledger import STATE_PATTERN, filesystem_of
from raycomp.launch.sweep.remote_checkpoint import checkpoint_folders


def stand_in_for_retired_checkpoints(folder: str) -> list[str]:
    """Copies, for each trial of the sweep saved in ``folder`` whose named checkpoint is gone, the newest checkpoint
    its folder holds to that name; returns the paths it wrote. A state it cannot read is left to Tune's restore."""
    filesystem, root = filesystem_of(folder)
    try:
        trials = _saved_trials(filesystem, root)
    except Exception as error:  # Tune's own restore reports a damaged state, in raycomp's words (tuner.restore_tuner)
        print(f"warning: could not check the sweep's saved checkpoints: {one_line(error)}", file=sys.stderr)
        return []
    written = []
    for trial in trials:
        checkpoint = trial.checkpoint
        if checkpoint is None:
            continue
        trial_folder = posixpath.join(root, trial.storage.trial_dir_name)
        named = posixpath.join(trial_folder, posixpath.basename(checkpoint.path.rstrip("/")))
        if filesystem.get_file_info(named).type != pyarrow.fs.FileType.NotFound:
            continue
        kept = checkpoint_folders(filesystem, trial_folder)
        if not kept:
            continue
        _copy_folder(filesystem, kept[-1], named)
        print(
            f"note: trial {trial.trial_id}: its saved state names {posixpath.basename(named)}, which Tune deleted as "
            f"the trial kept checkpointing (the driver died before it saved again); it resumes from "
            f"{posixpath.basename(kept[-1])}",
            file=sys.stderr,
        )
        written.append(named)
    return written


def _saved_trials(filesystem: pyarrow.fs.FileSystem, root: str) -> list[Trial]:
    found = filesystem.get_file_info(pyarrow.fs.FileSelector(root, allow_not_found=True))
    states = sorted(info.path for info in found if fnmatch.fnmatch(info.base_name, STATE_PATTERN))  # Tune's: the newest
    if not states:
        return []
    with filesystem.open_input_stream(states[-1]) as stream:
        saved = json.loads(stream.read())
    trials = []
    for json_state, run_metadata in saved["trial_data"]:
        trial = Trial.from_json_state(json_state, stub=True)
        trial.restore_run_metadata(run_metadata)
        trials.append(trial)
    return trials


def _copy_folder(filesystem: pyarrow.fs.FileSystem, source: str, target: str) -> None:
    """``source`` copied to ``target``; on a local disk under a temporary name, then renamed: whole or absent. (A
    bucket has no folders to rename, and ``copy_files`` creates none: the target is made first.)"""
    local = isinstance(filesystem, pyarrow.fs.LocalFileSystem)
    staging = posixpath.join(posixpath.dirname(target), f".{posixpath.basename(target)}.tmp") if local else target
    if local and filesystem.get_file_info(staging).type != pyarrow.fs.FileType.NotFound:
        filesystem.delete_dir(staging)  # left by a resume killed while it copied
    filesystem.create_dir(staging)
    pyarrow.fs.copy_files(source, staging, source_filesystem=filesystem, destination_filesystem=filesystem)
    if local:
        filesystem.move(staging, target)
