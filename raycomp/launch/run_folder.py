"""A command's claim on ``storage_path/name`` before anything starts: writable, one process, one config.

- **Writable.** ``storage_path/name`` and ``TMPDIR`` (where each checkpoint is written first) are
  written to once at start, so a read-only or full disk is one line now, not a traceback after the
  first epoch.
- **One process.** A ``flock`` on ``.raycomp.lock`` in the run folder, which names its holder. The
  kernel drops it when the holder dies however it dies (SIGKILL included), so a lock is never stale;
  the file stays, and the next command takes it.
- **One config.** ``training_config.json`` records the training-relevant keys the folder's checkpoints
  were trained with. A rerun that would resume them (``raycomp.train`` with checkpoints there,
  ``raycomp.tune --resume`` or ``--extend``) with other values is refused with the changed keys: it would
  record the old run's results under the new params. A new sweep (``raycomp.tune`` without either) over a
  name that holds one is refused too: it would adopt the old trials. A missing or damaged record refuses
  rather than switching the check off. ``max_duration`` is a training key for sweeps (a sweep's verdicts
  compare trials of one length) but not for ``raycomp.train`` (a longer run resumes on purpose). Where
  and how a run runs and is watched is not (``NOT_TRAINING``: ``name``, ``storage_path``, ``tracking``,
  ``scaling``, ``checkpoint``, ``failure``, ``eval``...). ``data.root`` is where ``synthetic`` and ``cifar10``
  cache their data, but for the readers of the user's files (``ROOT_IS_DATA``) it is the data: for them the
  record holds the folder and ``data.root_files``, what it holds (``data_files_summary``).
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

from raycomp.base.errors import NotFound, RunConflict, StorageUnwritable
from raycomp.base.layout import RunLayout, is_uri
from raycomp.base.redaction import redacted
from raycomp.base.remedies import remedies
from raycomp.base.scratch import remove_abandoned
from raycomp.config import ExperimentConfig
from raycomp.launch.signals import sigterm_as_interrupt
from raycomp.launch.training_record import record_training_config

LONGER_ALLOWED = frozenset({"max_duration"})  # raycomp.train resumes a run to a longer max_duration on purpose


def run_guarded(
    config: ExperimentConfig, body: Callable[[], int], *, resume: bool | None = None, extend: bool = False
) -> int:
    """Runs a CLI's ``body`` with SIGTERM acting as Ctrl-C, holding the run folder (``claimed``)."""
    with sigterm_as_interrupt(), claimed(config, resume=resume, extend=extend):
        return body()


@contextlib.contextmanager
def claimed(config: ExperimentConfig, *, resume: bool | None = None, extend: bool = False) -> Iterator[None]:
    """Checks and holds ``storage_path/name`` for the block; raises before anything started.

    ``resume``: True for ``raycomp.tune --resume`` or ``--extend`` (the folder must hold the sweep, trained
    with this config), False for a new sweep (the folder must hold none), None for ``raycomp.train``
    (it resumes the folder's checkpoints by itself, to any ``max_duration``). ``extend``: the ``sweep``
    section may differ from the recorded one (``--extend`` adds arms); every other training key must not.
    """
    layout = config.layout
    words = remedies()
    if resume and not was_started(layout):
        flags = f"{words.resume} or {words.extend}" if words.extend else words.resume
        raise NotFound(f"no {words.kind} to continue at {layout.run_dir} (run without {flags} to start one)")
    check_writable(layout.local_dir, "storage_path")
    check_writable(Path(tempfile.gettempdir()), "TMPDIR")
    remove_abandoned()  # what earlier commands killed outright left in TMPDIR
    with RunLock(layout.lock_file):
        new_sweep = resume is False
        if new_sweep and was_started(layout):
            extend = f", add arms or seeds to it with {words.extend}" if words.extend else ""
            raise RunConflict(
                f"{layout.run_dir} holds a {words.kind} already; continue it with {words.resume}{extend}, or start a "
                f"new one under another name ({words.rename})"
            )
        sweep_command = resume is not None
        if resume is None:
            resume = has_checkpoints(layout)
        record_training_config(
            config,
            refuse_changes=bool(resume),
            except_sweep=extend,
            ignored=frozenset() if sweep_command else LONGER_ALLOWED,
        )
        try:
            yield
        except BaseException:
            if new_sweep and not tune_saved_state(layout):
                # Stopped before its Tune experiment existed (the store down, Ctrl-C or SIGTERM while MLflow or
                # Ray started): nothing of it was kept, so the same command starts it again (reliability notes, D8).
                layout.training_config_file.unlink(missing_ok=True)
            raise


def nothing_to_resume(layout: RunLayout) -> bool:
    """``--resume`` of a sweep whose driver was killed before it recorded anything (its first seconds: the
    folder holds its lock file and nothing else) has nothing to continue and nothing to clash with: it starts
    the sweep, saying so. A name with no folder at all is a typo: ``claimed`` refuses it."""
    if was_started(layout) or not layout.local_dir.is_dir():
        return False
    print(
        f"raycomp: nothing of this sweep was saved at {layout.run_dir}; starting it from the beginning", file=sys.stderr
    )
    return True


def was_started(layout: RunLayout) -> bool:
    """A command started a run in the folder: it recorded its config (before anything else), or, for a
    sweep from before that record, Tune saved its tuner there. Killed at any moment after, it resumes."""
    return layout.training_config_file.is_file() or (layout.local_dir / "tuner.pkl").is_file()


def tune_saved_state(layout: RunLayout) -> bool:
    """Tune saved the sweep's experiment in its folder (``tuner.pkl``, written before any trial starts), or
    the storage is remote, where this is not looked up (the record then stays)."""
    return is_uri(layout.storage) or (layout.local_dir / "tuner.pkl").is_file()


def check_writable(folder: Path, setting: str) -> None:
    """Creates ``folder`` and writes, syncs and removes a small file in it; ``StorageUnwritable`` if it cannot."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".raycomp-probe-") as probe:
            probe.write(b"\0" * 4096)
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as error:
        raise StorageUnwritable(
            f"cannot write to {folder} ({setting}): {error.strerror or error}; point {setting} at a writable folder"
        ) from None


def has_checkpoints(layout: RunLayout) -> bool:
    """The run folder holds checkpoints a rerun resumes from: raycomp's local ones or Ray Train's."""
    if is_uri(layout.storage):
        return False  # not listed from here; the config record is then kept without a check
    return any(path.is_dir() for path in Path(layout.run_dir).glob("checkpoint_*"))


class RunLock:
    """An exclusive, non-blocking ``flock`` on ``path``, which holds the holder's pid, host and command."""

    def __init__(self, path: Path):
        self.path = path
        self.fd: int | None = None

    def __enter__(self) -> RunLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise RunConflict(
                f"{self.path.parent} is in use by {holder}; wait for it to end, "
                f"or pick another name ({remedies().rename})"
            ) from None
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": datetime.datetime.now().isoformat(timespec="seconds"),
            "command": redacted(" ".join(sys.argv)),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self.fd = fd
        return self

    def __exit__(self, *exc: object) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, 0)
            os.close(self.fd)  # closing drops the flock
            self.fd = None


def _read_holder(fd: int) -> str:
    try:
        holder = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"process {holder['pid']} on {holder['host']} since {holder['since']} ({holder['command']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process"
