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
import hashlib
import json
import os
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import NotFound, RunConflict, StorageUnwritable
from raycomp.base.layout import RunLayout, is_uri
from raycomp.base.redaction import redacted
from raycomp.base.remedies import remedies
from raycomp.base.scratch import remove_abandoned
from raycomp.config import ExperimentConfig
from raycomp.launch.signals import sigterm_as_interrupt

# Sections and keys that change where, how long or how a run is watched, not what its checkpoints hold.
NOT_TRAINING = frozenset(
    {"name", "storage_path", "tracking", "scaling", "checkpoint", "failure", "eval", "profile"}
    | {"data.root", "data.num_workers", "data.eval_batch_size"}
    | {"sweep.max_concurrent_trials", "sweep.max_repeats", "sweep.max_sweep_s"}  # how many at once, how long
    | {"sweep.accuracy_tolerance", "sweep.equivalence", "sweep.timing"}  # how verdicts judge
)
ROOT_IS_DATA = ("image_folder", "hf_dataset", "text_files")  # data.root is the dataset, not a cache
DATA_FILES = "data.root_files"  # the record's key for what a ROOT_IS_DATA folder holds
LONGER_ALLOWED = frozenset({"max_duration"})  # raycomp.train resumes a run to a longer max_duration on purpose
_SHOWN = 4  # changed keys listed before "and N more"


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
    if resume and not was_started(layout):
        words = remedies()
        raise NotFound(
            f"no sweep to continue at {layout.run_dir} (run without {words.resume} or {words.extend} to start one)"
        )
    check_writable(layout.local_dir, "storage_path")
    check_writable(Path(tempfile.gettempdir()), "TMPDIR")
    remove_abandoned()  # what earlier commands killed outright left in TMPDIR
    with RunLock(layout.lock_file):
        new_sweep = resume is False
        if new_sweep and was_started(layout):
            raise RunConflict(
                f"{layout.run_dir} holds a sweep already; continue it with {remedies().resume}, add arms or seeds "
                f"to it with {remedies().extend}, or start a new one under another name ({remedies().rename})"
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


def training_config(config: ExperimentConfig) -> dict[str, Any]:
    """The dotted keys that decide what a checkpoint holds (algorithms with their defaults filled in):
    every top-level section but ``NOT_TRAINING``, and the data of a reader whose ``data.root`` is its data."""
    flat = config.flatten()
    keys = {key: value for key, value in flat.items() if not {key, key.split(".")[0]} & NOT_TRAINING}
    data = config.data
    if data.class_path is None and data.name in ROOT_IS_DATA and data.root:
        keys["data.root"] = os.path.abspath(data.root)
        keys[DATA_FILES] = data_files_summary(Path(data.root))
    return keys


def data_files_summary(root: Path) -> str:
    """What a dataset folder (or file) holds, cheaply: a hash of every file's path under it, size and
    modification time, with their count and bytes (``missing`` if nothing is there). No file is read, so an
    ImageNet-sized folder costs a walk; a file rewritten in place changes its time. Hidden files (a desktop's
    ``.DS_Store``) are left out, as the readers leave them."""
    entries: list[str] = []
    total = 0
    if root.is_file():
        stat = root.stat()
        entries.append(f"{root.name} {stat.st_size} {stat.st_mtime_ns}")
        total = stat.st_size
    for folder, subfolders, files in os.walk(root, followlinks=True):  # nothing for a file or a missing root
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        for name in sorted(name for name in files if not name.startswith(".")):
            path = Path(folder, name)
            with contextlib.suppress(OSError):  # a broken link: not data
                stat = path.stat()
                entries.append(f"{path.relative_to(root).as_posix()} {stat.st_size} {stat.st_mtime_ns}")
                total += stat.st_size
    if not entries:
        return "missing"
    digest = hashlib.sha256("\n".join(entries).encode()).hexdigest()[:12]
    return f"{digest} ({len(entries)} files, {total} bytes)"


def training_config_digest(config: ExperimentConfig) -> str:
    """A short hash of the training keys outside the ``sweep`` section: equal for every arm of one sweep,
    also after ``--extend``, and different when anything an arm's trial trains with differs."""
    keys = {key: value for key, value in training_config(config).items() if not key.startswith("sweep.")}
    text = json.dumps(keys, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def record_training_config(
    config: ExperimentConfig, *, refuse_changes: bool, except_sweep: bool = False, ignored: frozenset[str] = frozenset()
) -> None:
    """Writes the run's training config beside its checkpoints; first, if ``refuse_changes``, refuses a
    config that differs from the one recorded there in any key but ``ignored`` (and the ``sweep``
    section's, if ``except_sweep``), and a record that is missing or cannot be read: without it nothing
    says the folder's checkpoints fit this config."""
    path = config.layout.training_config_file
    current = json.loads(json.dumps(training_config(config), default=str))  # as it reads back
    if refuse_changes:
        recorded = _read_record(path)
        changes = [
            change
            for change in changed_keys(recorded, current)
            if change.split(":")[0] not in ignored and not (except_sweep and change.startswith("sweep."))
        ]
        if changes:
            more = f", and {len(changes) - _SHOWN} more" if len(changes) > _SHOWN else ""
            raise RunConflict(
                f"{config.layout.run_dir} holds checkpoints trained with another config "
                f"({', '.join(changes[:_SHOWN])}{more}); resuming them would record the old run under the new "
                f"values: pick another name ({remedies().rename}), or run it with the config it was started with"
            )
    atomic_write_text(path, json.dumps(current, indent=2, sort_keys=True) + "\n")


def _read_record(path: Path) -> dict[str, Any]:
    """The recorded training config; ``RunConflict`` naming the file when it is missing or damaged."""
    try:
        recorded = json.loads(path.read_text())
    except FileNotFoundError:
        reason = "is missing"
    except (OSError, ValueError) as error:
        reason = f"cannot be read ({error.__class__.__name__})"
    else:
        if isinstance(recorded, dict):
            return recorded
        reason = "is not a JSON object"
    raise RunConflict(
        f"{path} {reason}, so nothing says the checkpoints in {path.parent} fit this config: "
        f"pick another name ({remedies().rename}), or move the folder aside to start over"
    )


def changed_keys(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """Each dotted key whose value differs, as ``key: old -> new`` (``unset`` where one side lacks it)."""
    return [
        f"{key}: {_shown(old, key)} -> {_shown(new, key)}"
        for key in sorted(set(old) | set(new))
        if old.get(key, _UNSET) != new.get(key, _UNSET)
    ]


_UNSET = object()


def _shown(values: dict[str, Any], key: str) -> str:
    """A recorded value as a refusal quotes it: cut to 40 characters, but a dataset's folder whole (its
    beginning alone would name no folder)."""
    if key not in values:
        return "unset"
    shown = json.dumps(values[key])
    return shown if key == "data.root" else shown[:40]
