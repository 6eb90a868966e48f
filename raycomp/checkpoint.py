"""Checkpoints: written atomically, read with ``weights_only=True``, honouring ``required_on_load``.

A checkpoint is plain data and tensors: the State's ``state_dict()`` (model, optimizers, schedulers,
scaler, timestamp, and each algorithm's class path, constructor arguments, state and
``required_on_load`` flag), the RNG states, and the seed. Nothing read from it is evaluated or
imported: algorithms are re-created only from classes already defined in this process.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from raycomp.core.algorithm import Algorithm, class_path, registered_algorithm
from raycomp.core.callback import Callback
from raycomp.core.event import Event
from raycomp.core.logger import Logger
from raycomp.core.state import State
from raycomp.core.time import Time, TimeUnit
from raycomp.rng import get_rng_state

if TYPE_CHECKING:
    from raycomp.core.engine import Engine

FORMAT_VERSION = 1
LATEST = "latest.pt"


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be loaded into this run, with the reason and the fix."""


def checkpoint_payload(state: State) -> dict[str, Any]:
    state_dict = state.state_dict()
    for entry in state_dict["algorithms"]:
        if not _is_plain(entry["init_args"]):
            entry["init_args"] = None  # kept out rather than pickled: such an algorithm cannot be re-created
    return {"format_version": FORMAT_VERSION, "seed": state.seed, "state": state_dict, "rng": get_rng_state()}


def atomic_save(obj: Any, path: Path) -> None:
    """Write to a temporary file beside ``path``, fsync, then rename: a crash leaves the old file whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as file:
            torch.save(obj, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


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
    if not isinstance(payload, Mapping) or payload.get("format_version") != FORMAT_VERSION:
        raise CheckpointError(f"{path} is not a raycomp checkpoint of format version {FORMAT_VERSION}")
    return dict(payload)


def restore_required_algorithms(
    payload: Mapping[str, Any], state: State, engine: Engine, recreate: bool
) -> list[Algorithm]:
    """Make the run hold every ``required_on_load`` algorithm the checkpoint was trained with.

    Missing ones are refused with an error naming them, or, when ``recreate`` is set, built again from
    their stored constructor arguments and their INIT (model surgery) replayed, before weights load.
    """
    present = {class_path(type(algorithm)) for algorithm in state.algorithms}
    missing = [
        entry
        for entry in payload["state"]["algorithms"]
        if entry["required_on_load"] and entry["class_path"] not in present
    ]
    if missing and not recreate:
        names = ", ".join(entry["class_path"] for entry in missing)
        raise CheckpointError(
            f"The checkpoint was trained with {names}, which must be present to load it (required_on_load); "
            "add it to the algorithms, or pass load_recreate_required_algorithms=True to re-create it"
        )
    added = []
    for entry in missing:
        cls = registered_algorithm(entry["class_path"])
        if cls is None or entry["init_args"] is None:
            why = "its class is not defined in this process" if cls is None else "its arguments were not saved"
            raise CheckpointError(f"Cannot re-create {entry['class_path']} from the checkpoint: {why}")
        algorithm = cls(**entry["init_args"])
        state.algorithms.append(algorithm)
        if algorithm.match(Event.INIT, state):
            engine.run_algorithms(Event.INIT, [algorithm])
        added.append(algorithm)
    return added


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


def _is_plain(value: Any) -> bool:
    if value is None or isinstance(value, bool | int | float | str | torch.Tensor):
        return True
    if isinstance(value, list | tuple):
        return all(_is_plain(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_plain(v) for k, v in value.items())
    return False


def _fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every filesystem lets a directory be opened
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
