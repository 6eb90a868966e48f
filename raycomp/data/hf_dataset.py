"""``data: {name: hf_dataset, root: PATH}``: a local Hugging Face dataset, with an image or a text column.

``root`` is a folder written by ``Dataset(Dict).save_to_disk`` (read with ``load_from_disk``), or a file or
folder of parquet, JSON lines or CSV files (read with ``load_dataset`` on those files; a folder's files are
split by their names, ``train-*.parquet``, ``validation-*.parquet``, as Hugging Face does). Nothing is
downloaded. ``train_split``/``eval_split`` name the splits; ``input_column`` holds images (decoded by
``datasets``, or file paths) or text, ``label_column`` the class index. Images take the ``image_folder``
transforms at ``image_size``; text is cut into ``seq_len`` bytes (tokens 0-255, padded with 0), the byte
vocabulary of raycomp's language models. Needs the ``hf`` extra (``pip install -e ".[hf]"``).
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import torch
from torch.utils.data import Dataset

_FORMATS = {".parquet": "parquet", ".json": "json", ".jsonl": "json", ".csv": "csv"}


@functools.lru_cache(maxsize=4)
def load_splits(root: str) -> Any:
    """The ``DatasetDict`` at ``root`` (a ``ValueError`` saying what ``root`` lacks)."""
    try:
        import datasets
    except ImportError:
        raise ValueError("data.name hf_dataset needs the datasets package: pip install -e '.[hf]'") from None
    path = Path(root)
    if not path.exists():
        raise ValueError(f"{root} does not exist (a save_to_disk folder, or parquet/json/csv files)")
    if path.is_dir() and ((path / "dataset_dict.json").exists() or (path / "state.json").exists()):
        loaded = datasets.load_from_disk(root)
        return loaded if isinstance(loaded, datasets.DatasetDict) else datasets.DatasetDict({"train": loaded})
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.suffix in _FORMATS)
    kinds = {_FORMATS.get(p.suffix) for p in files}
    if not files or None in kinds or len(kinds) != 1:
        raise ValueError(f"{root} holds no dataset: neither a save_to_disk folder nor parquet, json or csv files")
    builder = kinds.pop()
    from raycomp.data.text import default_cache_dir  # Arrow copies of the files: raycomp's cache, not ~/.cache

    cache = str(default_cache_dir() / "hf")
    if path.is_file():
        return datasets.load_dataset(builder, data_files={"train": str(path)}, cache_dir=cache)
    return datasets.load_dataset(builder, data_dir=root, cache_dir=cache)


def hf_problems(root: str | None, splits: tuple[str, str], columns: tuple[str | None, str]) -> list[tuple[str, str]]:
    """``(key, problem)`` for ``data.root``, the splits and the columns; none when the dataset reads."""
    if root is None:
        return [("root", "required when data.name is 'hf_dataset' (a save_to_disk folder or data files)")]
    try:
        loaded = load_splits(root)
    except ValueError as exc:
        return [("root", str(exc))]
    except Exception as exc:  # datasets' own errors: a damaged file, mixed columns
        return [("root", f"{root} does not read as a Hugging Face dataset: {type(exc).__name__}: {exc}"[:300])]
    problems = []
    for key, split in zip(("train_split", "eval_split"), splits, strict=True):
        if split not in loaded:
            problems.append((key, f"{root} has no split {split!r} (its splits: {', '.join(loaded)})"))
    if problems:
        return problems
    names = loaded[splits[0]].column_names
    input_column, label_column = columns
    if input_column is not None and input_column not in names:
        problems.append(("input_column", f"{root} has no column {input_column!r} (its columns: {', '.join(names)})"))
    if input_column is None and not {"image", "text"} & set(names):
        problems.append(("input_column", f"required: {root} has no 'image' or 'text' column ({', '.join(names)})"))
    if label_column not in names:
        problems.append(("label_column", f"{root} has no column {label_column!r} (its columns: {', '.join(names)})"))
    return problems


class HFExamples(Dataset):
    """``(input tensor, label)`` examples of one split: images transformed, text as ``seq_len`` byte tokens."""

    def __init__(self, split: Any, input_column: str, label_column: str, transform: Any, seq_len: int) -> None:
        self.split, self.input_column, self.label_column = split, input_column, label_column
        self.transform, self.seq_len = transform, seq_len

    def __len__(self) -> int:
        return len(self.split)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, int]:
        row = self.split[int(index)]
        value, label = row[self.input_column], int(row[self.label_column])
        if isinstance(value, str) and self.transform is None:
            tokens = list(value.encode("utf-8")[: self.seq_len])
            return torch.tensor(tokens + [0] * (self.seq_len - len(tokens)), dtype=torch.long), label
        if isinstance(value, str):  # an image's file path
            from PIL import Image

            value = Image.open(value)
        return self.transform(value), label


def hf_datasets(
    root: str, train_split: str, eval_split: str, input_column: str | None, label_column: str, image_size: int,
    seq_len: int,
) -> tuple[Dataset, Dataset]:  # fmt: skip
    """``(train, eval)`` of the local dataset at ``root``."""
    from raycomp.data.image_folder import transforms

    loaded = load_splits(root)
    column = input_column or ("image" if "image" in loaded[train_split].column_names else "text")
    first = loaded[train_split][0][column]
    is_text = isinstance(first, str) and not os.path.isfile(first)
    return tuple(  # type: ignore[return-value]
        HFExamples(loaded[split], column, label_column, None if is_text else transforms(image_size, train), seq_len)
        for split, train in ((train_split, True), (eval_split, False))
    )
