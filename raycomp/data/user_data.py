"""``data: {class_path: ..., init_args: ...}``: the user's own data, as Datasets or as a LightningDataModule.

The callable returns either ``(train, eval)`` Datasets, which raycomp turns into its seeded loaders
sharded across DDP workers (``build_dataloader``), or an object with ``train_dataloader()`` and
``val_dataloader()``: the LightningDataModule protocol, used without importing Lightning. Its
``prepare_data()`` and ``setup("fit")`` run first when it has them, on every worker (Lightning runs
``prepare_data`` on one rank per node: keep it a no-op when the data is already on disk). Its loaders are
used as they are on one worker; under DDP a loader whose sampler is not a ``DistributedSampler`` is rebuilt
over the same dataset with one (as Lightning's ``use_distributed_sampler``), keeping its batch size, workers
and collate function, so each worker trains on its own shard.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from torch.utils.data import DataLoader, Dataset, DistributedSampler

from raycomp.base.import_path import import_callable


@dataclasses.dataclass(frozen=True)
class UserData:
    """What a data callable gave: two datasets, or a data module (``datasets`` None)."""

    datasets: tuple[Any, Any] | None = None
    module: Any = None


def is_dataset(value: Any) -> bool:
    """A map-style dataset: a torch ``Dataset`` or anything sized and indexable (a Hugging Face ``Dataset``)."""
    return isinstance(value, Dataset) or (hasattr(value, "__getitem__") and hasattr(value, "__len__"))


def is_data_module(value: Any) -> bool:
    return callable(getattr(value, "train_dataloader", None)) and callable(getattr(value, "val_dataloader", None))


def as_user_data(value: Any, class_path: str) -> UserData:
    """``value`` as ``UserData``; a ``TypeError`` saying what ``class_path`` returned instead."""
    if is_data_module(value):
        return UserData(module=value)
    if isinstance(value, tuple | list) and len(value) == 2 and all(is_dataset(part) for part in value):
        return UserData(datasets=(value[0], value[1]))
    shown = type(value).__name__ + (f" of {len(value)}" if isinstance(value, tuple | list) else "")
    raise TypeError(
        f"{class_path} returned a {shown}; it must return (train, eval) Datasets or an object with "
        "train_dataloader() and val_dataloader()"
    )


def call_user_data(class_path: str, init_args: Mapping[str, Any]) -> UserData:
    """Calls the data callable ``class_path`` names with ``init_args``; its result checked (``as_user_data``)."""
    return as_user_data(import_callable(class_path)(**init_args), class_path)


def prepare_module(module: Any) -> None:
    """Runs a data module's ``prepare_data()`` and ``setup("fit")``, those it has, as Lightning does before fitting."""
    for hook, args in (("prepare_data", ()), ("setup", ("fit",))):
        if callable(getattr(module, hook, None)):
            getattr(module, hook)(*args)


def module_loaders(module: Any, world: int, rank: int, seed: int) -> tuple[DataLoader, DataLoader]:
    """A data module's ``(train, val)`` loaders after its ``prepare_data``/``setup``, sharded when ``world > 1``."""
    prepare_module(module)
    train, val = module.train_dataloader(), module.val_dataloader()
    if isinstance(val, list | tuple):  # Lightning allows several; raycomp evaluates on the first
        val = val[0]
    if world > 1:
        train, val = (_sharded(loader, world, rank, seed, shuffle) for loader, shuffle in ((train, True), (val, False)))
    return train, val


def _sharded(loader: DataLoader, world: int, rank: int, seed: int, shuffle: bool) -> DataLoader:
    """``loader`` over this rank's shard of its dataset, unless its sampler shards already."""
    if not isinstance(loader, DataLoader) or isinstance(loader.sampler, DistributedSampler):
        return loader
    if loader.batch_size is None:  # a batch_sampler of the user's: only they know how to shard it
        raise ValueError("a data module's loader with a batch_sampler cannot be sharded across DDP workers")
    sampler = DistributedSampler(loader.dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed)
    return DataLoader(
        loader.dataset,
        batch_size=loader.batch_size,
        sampler=sampler,
        num_workers=loader.num_workers,
        collate_fn=loader.collate_fn,
        pin_memory=loader.pin_memory,
        drop_last=loader.drop_last,
        persistent_workers=loader.persistent_workers,
    )
