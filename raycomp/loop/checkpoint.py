"""Checkpoints: the one module that names their files, lays out their folders and checks ``required_on_load``.

A checkpoint is plain data and tensors: the State's ``state_dict()`` (model, optimizers, schedulers,
scaler, timestamp, and each algorithm's class path, constructor arguments, state and
``required_on_load`` flag), the RNG states, and the seed (written and checked by ``checkpoint_format``).
Nothing read from it is evaluated or imported: algorithms are re-created only from classes already
defined in this process.

Layouts raycomp writes itself (Ray Train, Tune and MLflow keep theirs in their own folders):
- a report's checkpoint: ``<folder>/checkpoint.pt`` (``save_to_folder``), the folder handed to Ray or MLflow;
- a local run's kept checkpoints: ``<run folder>/checkpoint_<n>/checkpoint.pt`` (``KeptCheckpoints``);
- a ``Trainer(save_folder=...)``: ``ep<E>-ba<B>.pt`` plus a ``latest.pt`` link (``CheckpointSaver``).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

import torch

from raycomp.base.atomic_files import atomic_writer
from raycomp.base.errors import CheckpointError, one_line
from raycomp.base.keys import CHECKPOINT_FILE
from raycomp.base.scratch import remove_tree
from raycomp.core.algorithm import Algorithm, class_path, registered_algorithm
from raycomp.core.callback import Callback
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State
from raycomp.core.time import Time, TimeUnit
from raycomp.loop.checkpoint_format import check_payload, checkpoint_payload

if TYPE_CHECKING:
    from raycomp.core.engine import Engine

LATEST = "latest.pt"


def atomic_save(obj: Any, path: Path) -> None:
    """``torch.save`` written whole (``atomic_files``): a crash leaves the old file as it was."""
    with atomic_writer(path) as file:
        torch_save(obj, file)


def torch_save(obj: Any, file: BinaryIO) -> None:
    """``torch.save``, through which an interrupt stays an interrupt. Ctrl-C, or SIGTERM turned into it, landing
    in one of its writes made torch's zip writer raise its own ``RuntimeError`` ("unexpected pos") as it closed,
    over the ``KeyboardInterrupt``: the run then ended failed (exit 1), not interrupted (130)."""
    try:
        torch.save(obj, file)
    except Exception as error:
        if isinstance(error.__context__, KeyboardInterrupt):
            raise error.__context__ from None
        raise


def save_to_folder(state: State, folder: str | Path) -> Path:
    """``folder/checkpoint.pt``: the checkpoint a report hands to Ray (rank 0) or uploads to MLflow."""
    path = Path(folder) / CHECKPOINT_FILE
    atomic_save(checkpoint_payload(state), path)
    return path


def file_in(folder: str | Path) -> Path:
    """The checkpoint file inside a checkpoint folder (Ray's, Tune's, MLflow's or a kept one)."""
    return Path(folder) / CHECKPOINT_FILE


def save_checkpoint(state: State, folder: str | Path) -> Path:
    """Save to ``folder/ep{E}-ba{B}.pt`` and point ``folder/latest.pt`` at it."""
    folder = Path(folder)
    path = folder / f"ep{state.timestamp.epoch}-ba{state.timestamp.batch}.pt"
    atomic_save(checkpoint_payload(state), path)
    tmp_link = folder / f".{LATEST}.{os.getpid()}.tmp"
    with contextlib.suppress(FileNotFoundError):
        tmp_link.unlink()
    tmp_link.symlink_to(path.name)
    os.replace(tmp_link, folder / LATEST)
    return path


def load_checkpoint(path: str | Path) -> dict[str, Any]:
    """Read a checkpoint with ``torch.load(weights_only=True)``; no code in it can run."""
    path = Path(path)
    if path.is_dir():
        path = path / LATEST
    if not path.exists():
        raise FileNotFoundError(f"No checkpoint at {path}")
    try:
        payload = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as error:
        raise CheckpointError(f"Cannot read checkpoint {path}: {error}") from error
    check_payload(payload, path)
    return dict(payload)


def restore_required_algorithms(
    payload: Mapping[str, Any], state: State, engine: Engine, recreate: bool
) -> list[Algorithm]:
    """Make the run hold every ``required_on_load`` algorithm the checkpoint was trained with.

    Missing ones are refused with an error naming them, or, when ``recreate`` is set, built again from
    their stored constructor arguments and their INIT (model surgery) replayed, before weights load.
    """
    missing = missing_required(payload, (type(algorithm) for algorithm in state.algorithms))
    if missing and not recreate:
        raise CheckpointError(refusal(missing, "load_recreate_required_algorithms=True"))
    added = []
    for entry in missing:
        cls = registered_algorithm(entry["class_path"])
        if cls is None or entry["init_args"] is None:
            why = "its class is not defined in this process" if cls is None else "its arguments were not saved"
            raise CheckpointError(f"Cannot re-create {entry['class_path']} from the checkpoint: {why}")
        try:
            algorithm = cls(**entry["init_args"])
        except (TypeError, ValueError) as error:  # arguments its constructor refuses: the file is wrong
            raise CheckpointError(
                f"Cannot re-create {entry['class_path']} from the checkpoint's arguments: {one_line(error)}"
            ) from None
        state.algorithms.append(algorithm)
        if algorithm.match(Event.INIT, state):
            engine.run_algorithms(Event.INIT, [algorithm])
        added.append(algorithm)
    return added


def missing_required(payload: Mapping[str, Any], present: Iterable[type]) -> list[dict[str, Any]]:
    """The checkpoint's ``required_on_load`` algorithms (model surgery) whose class is not among ``present``."""
    paths = {class_path(cls) for cls in present}
    return [e for e in payload["state"]["algorithms"] if e["required_on_load"] and e["class_path"] not in paths]


def refusal(missing: list[dict[str, Any]], fix: str) -> str:
    """The one message for a checkpoint refused for lack of its ``required_on_load`` algorithms."""
    names = ", ".join(entry["class_path"] for entry in missing)
    return (
        f"the checkpoint was trained with {names}, which must be present to load it (required_on_load): "
        f"add it under algorithms, or pass {fix} to re-create it"
    )


class KeptCheckpoints:
    """A local run's checkpoints: ``folder/checkpoint_<n>/``, the newest ``num_to_keep`` kept.

    Used where no Ray worker group persists checkpoints (``python -m raycomp.train`` with 0 workers).
    Each folder is copied in under a temporary name and renamed: whole or absent.
    """

    def __init__(self, folder: str | Path, num_to_keep: int | None = None):
        self.folder = Path(folder)
        self.num_to_keep = num_to_keep

    def add(self, checkpoint_dir: Path) -> Path:
        saved = self.folders()
        index = int(saved[-1].name.split("_")[-1]) + 1 if saved else 0
        self.folder.mkdir(parents=True, exist_ok=True)
        target = self.folder / f"checkpoint_{index:06d}"
        staging = self.folder / f".{target.name}.tmp"
        remove_tree(staging)
        try:
            shutil.copytree(checkpoint_dir, staging)
            staging.rename(target)
        except BaseException:  # Ctrl-C or SIGTERM mid-copy: leave no half-copied folder behind
            remove_tree(staging)
            raise
        if self.num_to_keep:
            for old in self.folders()[: -self.num_to_keep]:
                shutil.rmtree(old, ignore_errors=True)
        return target

    def folders(self) -> list[Path]:
        if not self.folder.is_dir():
            return []
        return sorted(p for p in self.folder.glob("checkpoint_*") if p.is_dir())

    def newest_loadable(self, check: Callable[[Path], None] = load_checkpoint) -> Path | None:
        """The newest kept checkpoint file ``check`` accepts (default: it loads), or None if none is kept.

        A newer one that fails is skipped with a one-line warning naming it, so a checkpoint damaged on
        disk costs the training since the previous one, not the run. If none passes, the newest one's
        ``CheckpointError`` is raised, saying how many were tried and what to delete.
        """
        files = [file_in(folder) for folder in reversed(self.folders())]
        first_error: CheckpointError | None = None
        for path in files:
            try:
                check(path)
            except (CheckpointError, OSError) as error:
                first_error = first_error or CheckpointError(one_line(error, with_type=False))
                print(f"warning: skipping checkpoint {path}: {one_line(error, with_type=False)}", file=sys.stderr)
                continue
            return path
        if first_error is None:
            return None
        raise CheckpointError(
            f"none of the {len(files)} kept checkpoints in {self.folder} loads (the newest: {first_error}); "
            f"delete {self.folder} to start over, or pick another name"
        )


class CheckpointSaver(Callback):
    """Saves at ``save_interval`` (epochs or batches) and at the end of fit, on rank 0 only."""

    def __init__(self, folder: str | Path, save_interval: str | Time = "1ep", num_checkpoints_to_keep: int = -1):
        self.folder = Path(folder)
        self.interval = Time.from_input(save_interval)
        if self.interval.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH):
            raise ValueError(f"save_interval must be in epochs or batches, got {self.interval}")
        self.num_checkpoints_to_keep = num_checkpoints_to_keep
        self.saved: list[Path] = []
        self._last_saved_batch = -1

    def batch_checkpoint(self, state: State, logger: Logger) -> None:
        if self.interval.unit is TimeUnit.BATCH and self.interval.value and state.step % self.interval.value == 0:
            self._save(state)

    def epoch_checkpoint(self, state: State, logger: Logger) -> None:
        if self.interval.unit is TimeUnit.EPOCH and self.interval.value and state.epoch % self.interval.value == 0:
            self._save(state)

    def fit_end(self, state: State, logger: Logger) -> None:
        self._save(state)

    def _save(self, state: State) -> None:
        if state.rank != 0 or self._last_saved_batch == state.step:
            return
        self.saved.append(save_checkpoint(state, self.folder))
        self._last_saved_batch = state.step
        while 0 < self.num_checkpoints_to_keep < len(self.saved):
            self.saved.pop(0).unlink(missing_ok=True)
