"""CIFAR-10 read from a local copy of its "python version"; raycomp never downloads it.

The batch files are pickles, and unpickling can run arbitrary code, so they are
read with an unpickler that resolves only the few numpy globals a uint8 array
pickles to and refuses every other global.
"""

from __future__ import annotations

import codecs
import importlib
import pickle
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch.utils.data import Dataset

FOLDER = "cifar-10-batches-py"
TRAIN_FILES = tuple(f"data_batch_{i}" for i in range(1, 6))
TEST_FILES = ("test_batch",)
# Per-channel mean/std of the CIFAR-10 training set, on the [0, 1] scale.
MEAN = (0.4914, 0.4822, 0.4465)
STD = (0.2470, 0.2435, 0.2616)


def _numpy_core(submodule: str) -> Any:
    # numpy 2 renamed numpy.core to numpy._core and deprecated the old name.
    try:
        return importlib.import_module(f"numpy._core.{submodule}")
    except ImportError:
        return importlib.import_module(f"numpy.core.{submodule}")


def _latin1_encode(text: str, encoding: str = "utf-8") -> bytes:
    # Protocol <= 2 pickles of bytes call _codecs.encode(text, "latin1"); allow that and nothing else.
    if encoding != "latin1":
        raise pickle.UnpicklingError(f"refusing _codecs.encode with encoding {encoding!r}")
    return codecs.encode(text, "latin1")


_RECONSTRUCT = _numpy_core("multiarray")._reconstruct
_FROMBUFFER = _numpy_core("numeric")._frombuffer  # what protocol-5 pickles of arrays call
# Both module spellings: the official files were pickled by numpy 1 ("numpy.core"), numpy 2 writes "numpy._core".
_ALLOWED: dict[tuple[str, str], Any] = {
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
    ("numpy.core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy._core.multiarray", "_reconstruct"): _RECONSTRUCT,
    ("numpy.core.numeric", "_frombuffer"): _FROMBUFFER,
    ("numpy._core.numeric", "_frombuffer"): _FROMBUFFER,
    ("_codecs", "encode"): _latin1_encode,
}


class _RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        try:
            return _ALLOWED[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"refusing to load global {module}.{name} from a CIFAR-10 batch file"
            ) from None


def load_batch(path: Path) -> tuple[np.ndarray, list[int]]:
    """The ``(uint8 [N, 3072] data, labels)`` of one batch file, unpickled without running code."""
    with open(path, "rb") as f:
        batch = _RestrictedUnpickler(f, encoding="bytes").load()
    if not isinstance(batch, dict) or b"data" not in batch or b"labels" not in batch:
        raise ValueError(f"{path} is not a CIFAR-10 batch: expected a dict with b'data' and b'labels'")
    data = np.asarray(batch[b"data"], dtype=np.uint8)
    labels = [int(y) for y in batch[b"labels"]]
    if data.ndim != 2 or data.shape[1] != 3072 or len(data) != len(labels):
        raise ValueError(f"{path}: expected data of shape [N, 3072] and N labels, got {data.shape}, {len(labels)}")
    return data, labels


def resolve_folder(root: str | Path) -> Path:
    """``root/cifar-10-batches-py`` if it exists, else ``root`` itself if it holds the batch files."""
    root = Path(root)
    if not (root / FOLDER).is_dir() and any((root / name).is_file() for name in TRAIN_FILES + TEST_FILES):
        return root
    return root / FOLDER


class CIFAR10(Dataset):
    """``(float32 [3, 32, 32] normalized image, int label)``; ``transform`` applies to the normalized image."""

    def __init__(
        self,
        root: str | Path,
        train: bool = True,
        transform: Callable[[torch.Tensor], torch.Tensor] | None = None,
    ) -> None:
        folder = resolve_folder(root)
        paths = [folder / name for name in (TRAIN_FILES if train else TEST_FILES)]
        for path in paths:
            if not path.is_file():
                raise FileNotFoundError(
                    f"CIFAR-10 batch file not found: {path}. raycomp never downloads data; put the "
                    f"extracted '{FOLDER}' folder (from cifar-10-python.tar.gz) under {Path(root)}"
                )
        batches = [load_batch(p) for p in paths]
        data = np.concatenate([d for d, _ in batches])
        # Stored as uint8 (150 MB for the full train set rather than 600 MB) and normalized per item.
        self.data = torch.from_numpy(data).view(-1, 3, 32, 32)
        self.targets = torch.tensor([y for _, labels in batches for y in labels], dtype=torch.int64)
        self.transform = transform
        self._mean = torch.tensor(MEAN).view(3, 1, 1)
        self._std = torch.tensor(STD).view(3, 1, 1)

    def __len__(self) -> int:
        return len(self.targets)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        image = (self.data[index].float().div_(255) - self._mean) / self._std
        if self.transform is not None:
            image = self.transform(image)
        return image, int(self.targets[index])
