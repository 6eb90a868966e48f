"""Datasets (synthetic, CIFAR-10 from disk) and the seeded, distributed-ready DataLoader."""

from __future__ import annotations

from raycomp.data.cifar10 import CIFAR10
from raycomp.data.loaders import DATASET_NAMES, build_dataloader, build_datasets
from raycomp.data.synthetic import SyntheticCIFAR

__all__ = ["CIFAR10", "DATASET_NAMES", "SyntheticCIFAR", "build_dataloader", "build_datasets"]
