"""The training config a run folder's checkpoints were trained with: the keys that decide what they hold
(``training_config``), recorded in ``training_config.json`` and compared with a rerun's
(``record_training_config``, refusing one that would resume them under other values), and digested for each
arm of a sweep (``training_config_digest``). ``run_folder.py`` describes the rule: which keys count
(``NOT_TRAINING``), and why a reader's ``data.root`` is its data (``ROOT_IS_DATA``).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from raycomp.base.atomic_files import atomic_write_text
from raycomp.base.errors import RunConflict
from raycomp.base.remedies import remedies
from raycomp.config import ExperimentConfig

# Sections and keys that change where, how long or how a run is watched, not what its checkpoints hold.
NOT_TRAINING = frozenset(
    {"name", "storage_path", "tracking", "scaling", "checkpoint", "failure", "eval", "profile"}
    | {"data.root", "data.num_workers", "data.eval_batch_size"}
    | {"sweep.max_concurrent_trials", "sweep.max_repeats", "sweep.max_sweep_s"}  # how many at once, how long
    | {"sweep.accuracy_tolerance", "sweep.equivalence", "sweep.timing"}  # how verdicts judge
)
ROOT_IS_DATA = ("image_folder", "hf_dataset", "text_files")  # data.root is the dataset, not a cache
DATA_FILES = "data.root_files"  # the record's key for what a ROOT_IS_DATA folder holds
_SHOWN = 4  # changed keys listed before "and N more"


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
