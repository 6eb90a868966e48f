"""Datasets by name, and the one way raycomp turns a dataset into a DataLoader.

Every loader shuffles through a ``DistributedSampler``, even on a single
process, so the order of an epoch depends only on ``(seed, epoch)`` (set with
``sampler.set_epoch``, which the Trainer calls each epoch). That is what makes a
mid-epoch resume replay exactly the batches it would have seen.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

import torch
import torch.distributed as dist
from torch.utils.data import DataLoader, Dataset, DistributedSampler, Subset

from raycomp.data import DATASET_NAMES, TEXT_DATASETS
from raycomp.data.cifar10 import CIFAR10
from raycomp.data.synthetic import SyntheticCIFAR
from raycomp.data.text import DEFAULT_MAX_BYTES, TokenSequences, load_streams


def world_and_rank() -> tuple[int, int]:
    if dist.is_available() and dist.is_initialized():
        return dist.get_world_size(), dist.get_rank()
    return 1, 0


def build_dataloader(
    dataset: Dataset,
    batch_size: int,
    *,
    shuffle: bool = True,
    seed: int = 0,
    drop_last: bool = False,
    num_workers: int = 0,
    pin_memory: bool = False,
) -> DataLoader:
    """A DataLoader over this rank's shard of ``dataset``, ordered by ``(seed, epoch)`` alone.

    ``pin_memory`` for a CUDA run: a batch in page-locked memory is copied to the GPU while the host goes on
    (the Trainer's ``non_blocking`` copy); from pageable memory that copy first waits for the GPU's queued work,
    a host synchronisation every step.
    """
    world, rank = world_and_rank()
    sampler = DistributedSampler(
        dataset, num_replicas=world, rank=rank, shuffle=shuffle, seed=seed, drop_last=drop_last
    )
    return DataLoader(
        dataset,
        batch_size=batch_size,
        sampler=sampler,
        drop_last=drop_last,
        num_workers=num_workers,
        persistent_workers=num_workers > 0,
        pin_memory=pin_memory,
    )


def build_datasets(
    name: str,
    *,
    root: str | None = None,
    num_train: int = 5000,
    num_test: int = 1000,
    seed: int = 0,
    seq_len: int = 128,
    max_bytes: int = DEFAULT_MAX_BYTES,
    cache_dir: str | None = None,
    image_size: int = 224,
) -> tuple[Dataset, Dataset]:
    """``(train, test)`` for a dataset name; ``num_train``/``num_test``/``seed`` size the synthetic set only.

    CIFAR-10 is always its full 50,000/10,000 split, read from ``root``. The text sets (``raycomp.data.text``)
    are ``seq_len``-byte ``TokenSequences`` of the stdlib's sources (at most ``max_bytes``) or of the text
    file or folder ``root``, tokenised once and cached in ``cache_dir`` (None: ``default_cache_dir()``).
    ``image_folder`` is ``root``'s ``train/`` and ``val/`` at ``image_size`` (``raycomp.data.image_folder``).
    """
    if name == "synthetic":
        return _synthetic(num_train, num_test, seed)
    if name == "cifar10":
        if root is None:
            raise ValueError("dataset 'cifar10' needs root: the folder holding cifar-10-batches-py")
        return CIFAR10(root, train=True), CIFAR10(root, train=False)
    if name in TEXT_DATASETS:
        return _text(name, root, seq_len, max_bytes, cache_dir)
    if name == "image_folder":
        from raycomp.data.image_folder import image_folder_datasets

        if root is None:
            raise ValueError("dataset 'image_folder' needs root: a folder holding train/ and val/")
        return image_folder_datasets(root, image_size)
    raise ValueError(f"unknown dataset {name!r}; valid names are {', '.join(DATASET_NAMES)}")


@functools.lru_cache(maxsize=2)
def _synthetic(num_train: int, num_test: int, seed: int) -> tuple[Dataset, Dataset]:
    """Generated once per process and shared (the sets are read-only): Tune reuses a trial's process
    for the next trial, which then starts training without regenerating the same data."""
    return SyntheticCIFAR(num_train, "train", seed=seed), SyntheticCIFAR(num_test, "test", seed=seed)


@functools.lru_cache(maxsize=2)
def _text(name: str, root: str | None, seq_len: int, max_bytes: int, cache_dir: str | None) -> tuple[Dataset, Dataset]:
    """Read once per process, as ``_synthetic``; a changed corpus is seen by the next process (its cache key)."""
    train, validation = load_streams(name, root=root, max_bytes=max_bytes, cache_dir=cache_dir)
    for split, stream in (("train", train), ("validation", validation)):
        if len(stream) <= seq_len:
            raise ValueError(
                f"dataset {name!r}: its {split} split has {len(stream)} bytes, too few for one sequence of "
                f"seq_len {seq_len} (raise data.max_bytes, add text, or lower data.seq_len)"
            )
    return TokenSequences(train, seq_len), TokenSequences(validation, seq_len)


def text_train_size(name: str, root: str | None, seq_len: int, max_bytes: int) -> int:
    """Training sequences of a text dataset: what a step count per epoch is computed from (reads the cache)."""
    return len(_text(name, root, seq_len, max_bytes, None)[0])


def user_train_size(
    name: str, root: str | None, train_split: str, class_path: str | None, init_args: Mapping[str, Any]
) -> int:
    """Training samples of an image folder, a Hugging Face dataset (its ``train_split``) or of the user's data
    (``class_path`` with ``init_args``); called once per process: datasets are built."""
    if class_path is None and name == "hf_dataset":
        from raycomp.data.hf_dataset import load_splits

        return len(load_splits(str(root))[train_split])
    if class_path is None:
        from raycomp.data.image_folder import train_size

        return train_size(str(root))
    from raycomp.data.user_data import call_user_data

    user = call_user_data(class_path, init_args)
    if user.datasets is not None:
        return len(user.datasets[0])
    from raycomp.data.user_data import module_loaders

    train, _ = module_loaders(user.module, 1, 0, 0)  # after its prepare_data and setup, as in training
    return len(train.dataset)


def train_share(dataset: Dataset, fraction: float, seed: int) -> Dataset:
    """``fraction`` of ``dataset``'s examples, drawn once by ``seed``: the same share at every trial of a sweep or
    find (``data.train_fraction``, a find's proxy)."""
    generator = torch.Generator().manual_seed(seed)
    count = max(1, math.ceil(len(dataset) * fraction))  # type: ignore[arg-type]
    return Subset(dataset, torch.randperm(len(dataset), generator=generator)[:count].tolist())  # type: ignore[arg-type]
