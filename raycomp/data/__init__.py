"""Datasets (synthetic, CIFAR-10 from disk, byte-level text, an image folder, the user's own) and the seeded,
distributed-ready DataLoader.

The names a config may give (``data.name``) are here, and the rest is imported when first asked for: validating a
config reads the names, and loading it imports no dataset code (issue 56).
"""

from __future__ import annotations

from raycomp.base.lazy import lazy_attributes

TEXT_DATASETS: tuple[str, ...] = ("stdlib_text", "text_files")  # token sequences, for language models
FILE_DATASETS: tuple[str, ...] = ("image_folder", "hf_dataset")  # the user's files, read where data.root points
DATASET_NAMES: tuple[str, ...] = ("synthetic", "cifar10", *TEXT_DATASETS, *FILE_DATASETS)
VOCAB_SIZE = 256  # the text datasets' byte-level vocabulary

_WHERE = {
    "CIFAR10": "raycomp.data.cifar10",
    "SyntheticCIFAR": "raycomp.data.synthetic",
    "TokenSequences": "raycomp.data.text",
    "build_dataloader": "raycomp.data.loaders",
    "build_datasets": "raycomp.data.loaders",
}


__getattr__ = lazy_attributes(__name__, _WHERE)


__all__ = ["DATASET_NAMES", "FILE_DATASETS", "TEXT_DATASETS", "VOCAB_SIZE", *_WHERE]
