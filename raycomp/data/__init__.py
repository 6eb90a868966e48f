"""Datasets (synthetic, CIFAR-10 from disk, byte-level text, an image folder, the user's own) and the seeded,
distributed-ready DataLoader."""

from __future__ import annotations

from raycomp.data.cifar10 import CIFAR10
from raycomp.data.loaders import DATASET_NAMES, FILE_DATASETS, TEXT_DATASETS, build_dataloader, build_datasets
from raycomp.data.synthetic import SyntheticCIFAR
from raycomp.data.text import VOCAB_SIZE, TokenSequences

__all__ = [
    "CIFAR10",
    "DATASET_NAMES",
    "FILE_DATASETS",
    "TEXT_DATASETS",
    "VOCAB_SIZE",
    "SyntheticCIFAR",
    "TokenSequences",
    "build_dataloader",
    "build_datasets",
]
