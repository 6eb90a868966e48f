"""A batch of two from each split of a data set, drawn as a run draws it: what the preflight runs the model on.

Two samples are enough to see the shapes, dtypes and labels a run's model gets, and cheap for any data. Each
failure is a ``ValueError`` saying which step failed (an empty set, a ``setup("fit")`` that raises, items that do
not batch), so the config can report it at its key instead of every trial failing on its first batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch.utils.data import default_collate

from raycomp.base.errors import one_line
from raycomp.data.user_data import UserData, prepare_module

PROBE_SIZE = 2  # samples per probe batch


def dataset_batch(dataset: Any, split: str) -> Any:
    """The first ``PROBE_SIZE`` samples of ``dataset`` collated as raycomp's loaders collate them."""
    size = len(dataset)
    if size == 0:
        raise ValueError(f"its {split} set is empty (a run needs at least one {split} sample)")
    try:
        samples = [dataset[index] for index in range(min(PROBE_SIZE, size))]
    except Exception as error:
        raise ValueError(f"reading a sample of its {split} set failed: {one_line(error)}") from error
    try:
        return default_collate(samples)
    except Exception as error:
        raise ValueError(f"its {split} samples cannot be batched: {one_line(error)}") from error


def loader_batch(loader: Any, split: str) -> Any:
    """The first ``PROBE_SIZE`` samples of ``loader``'s first batch; a ``ValueError`` if it yields none, or is no
    loader (a data module's ``train_dataloader`` that returns None)."""
    try:
        iterator = iter(loader)
    except Exception as error:
        raise ValueError(
            f"its {split} loader cannot be iterated ({type(loader).__name__}): {one_line(error)}"
        ) from None
    try:
        batch = next(iterator)
    except StopIteration:
        raise ValueError(f"its {split} loader yielded no batches (an empty {split} set)") from None
    except Exception as error:
        raise ValueError(f"drawing a batch from its {split} loader failed: {one_line(error)}") from error
    finally:
        shutdown = getattr(iterator, "_shutdown_workers", None)  # a loader's worker processes, stopped now
        if callable(shutdown):
            shutdown()
    return head(batch, PROBE_SIZE)


def head(batch: Any, size: int) -> Any:
    """``batch`` cut to its first ``size`` samples: every tensor in it along its first dimension."""
    if isinstance(batch, torch.Tensor):
        return batch[:size]
    if isinstance(batch, Mapping):
        cut = {key: head(value, size) for key, value in batch.items()}
        try:
            return type(batch)(cut)  # type: ignore[call-arg]
        except TypeError:  # a mapping type not built from a dict (defaultdict): the plain dict
            return cut
    if isinstance(batch, tuple | list):
        values = [head(value, size) for value in batch]
        return type(batch)(*values) if hasattr(batch, "_fields") else type(batch)(values)  # a namedtuple: by field
    return batch


def probe_batches(user: UserData) -> tuple[Any, Any]:
    """``(train, eval)`` batches of at most two samples from the user's data, each drawn as a run would.

    A data module runs its ``prepare_data()`` and ``setup("fit")`` first, then gives one batch from each loader.
    """
    if user.datasets is not None:
        train, evaluation = user.datasets
        return dataset_batch(train, "train"), dataset_batch(evaluation, "eval")
    module = user.module
    try:
        prepare_module(module)
    except Exception as error:
        raise ValueError(f"its prepare_data() or setup('fit') failed: {one_line(error)}") from error
    loaders = []
    for split, method in (("train", "train_dataloader"), ("eval", "val_dataloader")):
        try:
            loader = getattr(module, method)()
        except Exception as error:
            raise ValueError(f"its {method}() failed: {one_line(error)}") from error
        if split == "eval" and isinstance(loader, list | tuple):  # Lightning allows several: raycomp uses the first
            loader = loader[0]
        loaders.append(loader_batch(loader, split))
    return loaders[0], loaders[1]


def declared_classes(dataset: Any) -> int | None:
    """How many classes ``dataset`` says it has (``num_classes``, or ``classes`` as torchvision's sets), if it says."""
    count = getattr(dataset, "num_classes", None)
    if isinstance(count, int) and not isinstance(count, bool):
        return count
    classes = getattr(dataset, "classes", None)
    return len(classes) if isinstance(classes, list | tuple) and classes else None
