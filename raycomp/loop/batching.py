"""What the Trainer does to a batch besides training on it: move it, count it, split it, show progress.

A batch is a tensor, a list or tuple of them (``(input, target)``), or a dict; its first tensor decides
the sample count, which is the first dimension of every tensor in it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import torch
from torch.utils.data import DataLoader

from raycomp.core.state import State
from raycomp.core.time import TimeUnit


def to_device(batch: Any, device: torch.device) -> Any:
    """The batch with every tensor on ``device``, its containers rebuilt; anything else left as it is."""
    if isinstance(batch, torch.Tensor):
        return batch.to(device, non_blocking=True)
    if isinstance(batch, list | tuple):
        return type(batch)(to_device(item, device) for item in batch)
    if isinstance(batch, dict):
        return {key: to_device(value, device) for key, value in batch.items()}
    return batch


def num_samples(batch: Any) -> int:
    return _first_tensor(batch).shape[0]


def num_tokens(batch: Any) -> int:
    """Token ids are integer inputs; image batches count no tokens."""
    inputs = _first_tensor(batch)
    return inputs.numel() if not inputs.is_floating_point() and inputs.dim() > 1 else 0


def split_microbatches(batch: Any, parts: int) -> list[Any]:
    """Microbatches along the first dimension (fewer than ``parts`` if the batch is smaller)."""
    if parts == 1:
        return [batch]
    if isinstance(batch, torch.Tensor):
        return list(batch.chunk(parts))
    if isinstance(batch, dict):
        chunks = {key: split_microbatches(value, parts) for key, value in batch.items()}
        return [dict(zip(chunks, values, strict=True)) for values in zip(*chunks.values(), strict=True)]
    columns = [split_microbatches(item, parts) for item in batch]
    return [type(batch)(values) for values in zip(*columns, strict=True)]


def _first_tensor(batch: Any) -> torch.Tensor:
    if isinstance(batch, torch.Tensor):
        return batch
    items = batch.values() if isinstance(batch, dict) else batch
    return next(t for t in items if isinstance(t, torch.Tensor))


class ProgressBar(Protocol):
    def update(self, n: int) -> None: ...
    def set_postfix(self, **kwargs: Any) -> None: ...


@contextlib.contextmanager
def show_progress(enabled: bool, state: State) -> Iterator[ProgressBar]:
    """A tqdm bar over the run's batches, started at the resumed step; a bar that does nothing if disabled.

    tqdm is imported only when a bar is shown, so a run without one never loads it.
    """
    if not enabled:
        yield _NoBar()
        return
    from tqdm.auto import tqdm

    total = None
    with contextlib.suppress(TypeError, ValueError):  # no len() on the loader, or a duration in samples/tokens
        total = state.max_epochs * state.steps_per_epoch
    if state.max_duration.unit is TimeUnit.BATCH:
        total = int(state.max_duration.value)
    with tqdm(total=total, initial=state.timestamp.batch, unit="ba", dynamic_ncols=True) as bar:
        yield bar


class _NoBar:
    def update(self, n: int) -> None: ...
    def set_postfix(self, **kwargs: Any) -> None: ...


def stop_workers(loaders: Iterable[object]) -> None:
    """Ends the worker processes of ``loaders`` now, when the run that used them ends (``Trainer.fit`` does).

    ``persistent_workers`` keeps them alive between epochs, and otherwise only garbage collection ends
    them. A Tune actor reused for the next trial then still held them: that trial's own DataLoader fork
    copied them, and their teardown (joins that time out in the copy) landed inside its timed training,
    nearly all of it in a 3-trial local-mode sweep with ``data.num_workers: 2``. torch has no public call
    for this; ``_shutdown_workers`` is what the iterator's own ``__del__`` runs. In a plain process, a second
    Trainer's forked workers copied the first one's uncollected iterators and ran their ``__del__`` there:
    "AssertionError: can only test a child process" tracebacks (issue 24).
    """
    for loader in loaders:
        iterator = getattr(loader, "_iterator", None)
        if iterator is not None and hasattr(iterator, "_shutdown_workers"):
            iterator._shutdown_workers()
        if isinstance(loader, DataLoader):
            loader._iterator = None
