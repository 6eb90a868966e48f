"""Byte-level language-modelling data that needs no download: the standard library's own sources, or your text.

Tokens are bytes (vocabulary 256), so no tokenizer has to be trained, shipped or agreed on. A corpus is a set
of files; each is assigned to train or validation by a hash of its relative path (so adding a file never
moves another), the files of each split are concatenated in path order, and the two byte streams are cached
in one ``.pt`` file keyed by everything they depend on. ``TokenSequences`` cuts a stream into consecutive
``seq_len`` windows, each ``(input, target)`` with the target shifted by one byte.

* ``stdlib_text``: the ``.py`` files under ``sysconfig.get_paths()["stdlib"]``, without test packages and
  site-packages. Files are taken in a fixed pseudo-random order (by path hash) until ``max_bytes``, so a cap
  samples the whole library rather than its alphabetically first packages. Keyed by the Python version.
* ``text_files``: a file, or every non-hidden, non-binary file under a folder (binary: a NUL byte in its
  first 8 KiB). Fewer than ``MIN_FILES_TO_SPLIT`` files cannot be split by file, so then the last
  ``VAL_FRACTION`` of each file is its validation part. Keyed by the files' paths, sizes and mtimes.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import sysconfig
from collections.abc import Iterable
from pathlib import Path

import torch
from torch.utils.data import Dataset

from raycomp.base.atomic_files import atomic_writer
from raycomp.base.cache import cache_root
from raycomp.data import VOCAB_SIZE

VAL_FRACTION = 0.1
MIN_FILES_TO_SPLIT = 10
DEFAULT_MAX_BYTES = 2_000_000
_SKIPPED_DIRS = frozenset({"test", "tests", "idle_test", "site-packages", "dist-packages", "__pycache__"})
_CACHE_FORMAT = 1


class TokenSequences(Dataset):
    """``(input int64 [seq_len], target int64 [seq_len])`` windows of a uint8 token stream, target = input + 1.

    Windows do not overlap: window ``i`` starts at byte ``i * seq_len`` and the last byte of the stream only
    ever appears as a target.
    """

    def __init__(self, tokens: torch.Tensor, seq_len: int) -> None:
        if seq_len < 1:
            raise ValueError(f"seq_len must be at least 1, got {seq_len}")
        if tokens.dim() != 1:
            raise ValueError(f"tokens must be a 1-D stream, got shape {tuple(tokens.shape)}")
        self.tokens = tokens
        self.seq_len = seq_len
        self.vocab_size = VOCAB_SIZE

    def __len__(self) -> int:
        return max(0, (len(self.tokens) - 1) // self.seq_len)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for {len(self)} sequences")
        start = index * self.seq_len
        window = self.tokens[start : start + self.seq_len + 1].long()
        return window[:-1], window[1:]


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def stdlib_files(max_bytes: int = DEFAULT_MAX_BYTES) -> list[tuple[str, Path]]:
    """``(relative posix path, path)`` of the stdlib ``.py`` files taken, in path-hash order, up to ``max_bytes``."""
    root = stdlib_root()
    candidates = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS and not d.startswith("."))
        for name in filenames:
            if name.endswith(".py"):
                path = Path(dirpath) / name
                candidates.append((path.relative_to(root).as_posix(), path))
    candidates.sort(key=lambda item: _path_hash(item[0], salt="order"))
    taken, total = [], 0
    for relative, path in candidates:
        size = path.stat().st_size
        if total + size > max_bytes:
            continue  # a smaller file later may still fit
        taken.append((relative, path))
        total += size
    return sorted(taken)


def text_files(root: str | Path) -> list[tuple[str, Path]]:
    """``(relative posix path, path)`` of a file, or of every non-hidden text file under a folder, sorted."""
    root = Path(root)
    if root.is_file():
        return [(root.name, root)]
    if not root.is_dir():
        raise FileNotFoundError(f"data.root {str(root)!r} is neither a file nor a folder")
    found = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            if not name.startswith(".") and path.is_file() and not _is_binary(path):
                found.append((path.relative_to(root).as_posix(), path))
    if not found:
        raise FileNotFoundError(f"data.root {str(root)!r} holds no text files (hidden and binary files are skipped)")
    return sorted(found)


def split_streams(files: Iterable[tuple[str, Path]], by_file: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """``(train, validation)`` uint8 byte streams of ``files`` (in the given order).

    ``by_file``: a file is validation when its path hash falls in the first ``VAL_FRACTION`` of the hash
    range; otherwise the last ``VAL_FRACTION`` of every file is validation.
    """
    train, val = bytearray(), bytearray()
    for relative, path in files:
        data = path.read_bytes()
        if by_file:
            (val if is_validation(relative) else train).extend(data)
        else:
            cut = len(data) - int(len(data) * VAL_FRACTION)
            train.extend(data[:cut])
            val.extend(data[cut:])
    return _as_tensor(train), _as_tensor(val)


def is_validation(relative_path: str) -> bool:
    """Whether a file of this relative path belongs to the validation split (stable across machines)."""
    return _path_hash(relative_path, salt="split") / 2**64 < VAL_FRACTION


def load_streams(
    name: str,
    *,
    root: str | Path | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    cache_dir: str | Path | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The cached ``(train, validation)`` byte streams of ``stdlib_text`` or ``text_files`` (read on a miss)."""
    if name == "stdlib_text":
        files = stdlib_files(max_bytes)
        by_file = True
        key = {"python": sys.version, "stdlib": str(stdlib_root())}
    elif name == "text_files":
        if root is None:
            raise ValueError("dataset 'text_files' needs data.root: a text file or a folder of text files")
        files = text_files(root)
        by_file = len(files) >= MIN_FILES_TO_SPLIT
        key = {"root": str(Path(root).resolve())}
    else:
        raise ValueError(f"not a text dataset: {name!r}")
    stats = [(relative, path.stat().st_size, path.stat().st_mtime_ns) for relative, path in files]
    key.update(format=_CACHE_FORMAT, name=name, max_bytes=max_bytes, val_fraction=VAL_FRACTION, files=stats)
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    path = Path(cache_dir or default_cache_dir()) / f"{name}-{digest}.pt"
    if path.is_file():
        cached = torch.load(path, weights_only=True)
        return cached["train"], cached["validation"]
    train, val = split_streams(files, by_file)
    _save_atomically({"train": train, "validation": val}, path)
    return train, val


def default_cache_dir() -> Path:
    """``$RAYCOMP_CACHE_DIR``, else ``$XDG_CACHE_HOME/raycomp/text``, else ``~/.cache/raycomp/text``."""
    if os.environ.get("RAYCOMP_CACHE_DIR"):
        return Path(os.environ["RAYCOMP_CACHE_DIR"])
    return cache_root() / "text"


def _save_atomically(payload: dict[str, torch.Tensor], path: Path) -> None:
    """Written whole (``atomic_files``), so a concurrent reader never sees half a file."""
    with atomic_writer(path) as file:
        torch.save(payload, file)


def _path_hash(relative_path: str, salt: str) -> int:
    """Independent salts keep the order files are taken in from deciding their split."""
    return int.from_bytes(hashlib.sha256(f"{salt}:{relative_path}".encode()).digest()[:8], "big")


def _is_binary(path: Path) -> bool:
    with open(path, "rb") as f:
        return b"\0" in f.read(8192)


def _as_tensor(data: bytearray) -> torch.Tensor:
    return torch.frombuffer(data, dtype=torch.uint8).clone() if data else torch.zeros(0, dtype=torch.uint8)
