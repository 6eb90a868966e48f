"""Byte-level text data: the stdlib corpus and users' files, split by file, cached, cut into shifted sequences."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from raycomp.base.errors import ConfigError
from raycomp.config import ExperimentConfig
from raycomp.data import TEXT_DATASETS, TokenSequences, build_dataloader, build_datasets
from raycomp.data.text import (
    MIN_FILES_TO_SPLIT,
    VAL_FRACTION,
    is_validation,
    load_streams,
    stdlib_files,
    stdlib_root,
    text_files,
)

SMALL = 200_000  # bytes of stdlib source: a few hundred sequences per split


def write_corpus(folder: Path, count: int = 20) -> dict[str, bytes]:
    folder.mkdir(parents=True, exist_ok=True)
    contents = {}
    for index in range(count):
        relative = f"part{index % 3}/doc{index:02d}.txt"
        data = (f"document {index}: " + "the quick brown fox jumps over the lazy dog. " * (5 + index)).encode()
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_bytes(data)
        contents[relative] = data
    return contents


def test_sequences_are_windows_with_targets_shifted_by_one() -> None:
    tokens = torch.arange(23, dtype=torch.uint8)
    sequences = TokenSequences(tokens, seq_len=5)
    assert len(sequences) == 4  # (23 - 1) // 5: the last byte is only ever a target
    inputs, targets = sequences[1]
    assert inputs.dtype == targets.dtype == torch.int64
    assert inputs.tolist() == [5, 6, 7, 8, 9]
    assert targets.tolist() == [6, 7, 8, 9, 10]
    with pytest.raises(IndexError):
        sequences[4]


def test_split_by_file_is_a_fixed_function_of_the_relative_path() -> None:
    names = [f"pkg{i}/module{i}.py" for i in range(2000)]
    chosen = [name for name in names if is_validation(name)]
    assert [name for name in names if is_validation(name)] == chosen  # no randomness
    assert abs(len(chosen) / len(names) - VAL_FRACTION) < 0.03


def test_folder_split_puts_each_whole_file_on_one_side(tmp_path: Path) -> None:
    contents = write_corpus(tmp_path / "corpus", count=40)
    train, validation = load_streams("text_files", root=tmp_path / "corpus", cache_dir=tmp_path / "cache")
    expected_val = b"".join(data for name, data in sorted(contents.items()) if is_validation(name))
    expected_train = b"".join(data for name, data in sorted(contents.items()) if not is_validation(name))
    assert expected_val and expected_train  # 40 files: both sides hold some
    assert bytes(validation.tolist()) == expected_val
    assert bytes(train.tolist()) == expected_train


def test_few_files_split_each_file_by_position(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_bytes(bytes(range(256)) * 10)
    train, validation = load_streams("text_files", root=path, cache_dir=tmp_path / "cache")
    assert len(validation) == int(2560 * VAL_FRACTION) and len(train) + len(validation) == 2560
    assert bytes(train.tolist()) + bytes(validation.tolist()) == path.read_bytes()
    assert MIN_FILES_TO_SPLIT > 1


def test_text_files_skip_hidden_and_binary_files(tmp_path: Path) -> None:
    write_corpus(tmp_path, count=2)
    (tmp_path / ".hidden.txt").write_text("secret")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "config").write_text("[core]")
    (tmp_path / "image.bin").write_bytes(b"\x89PNG\0\0\0")
    assert [name for name, _ in text_files(tmp_path)] == ["part0/doc00.txt", "part1/doc01.txt"]
    with pytest.raises(FileNotFoundError, match=r"data\.root"):
        text_files(tmp_path / "missing")


def test_stdlib_corpus_is_capped_real_source_without_tests(tmp_path: Path) -> None:
    files = stdlib_files(SMALL)
    assert files == stdlib_files(SMALL)
    assert 0 < sum(path.stat().st_size for _, path in files) <= SMALL
    for relative, path in files:
        assert relative.endswith(".py") and path.is_relative_to(stdlib_root())
        parts = relative.split("/")[:-1]
        assert not {"test", "tests", "site-packages"} & set(parts), relative
    train, validation = load_streams("stdlib_text", max_bytes=SMALL, cache_dir=tmp_path)
    assert len(train) > 5 * len(validation) > 0
    assert b"def " in bytes(train.tolist())


def test_cache_is_reused_and_invalidated_by_a_changed_file(tmp_path: Path) -> None:
    corpus, cache = tmp_path / "corpus", tmp_path / "cache"
    write_corpus(corpus)
    first = load_streams("text_files", root=corpus, cache_dir=cache)
    [cached] = list(cache.iterdir())  # one file, no temporary left behind
    assert cached.suffix == ".pt"
    # The second load reads the cache, not the corpus: a planted cache entry is what comes back.
    planted = torch.tensor([1, 2, 3], dtype=torch.uint8)
    torch.save({"train": planted, "validation": planted}, cached)
    assert load_streams("text_files", root=corpus, cache_dir=cache)[0].tolist() == [1, 2, 3]
    # Editing a file changes the key: the corpus is read again, into a second entry.
    (corpus / "part0" / "doc00.txt").write_bytes(b"changed " * 100)
    again = load_streams("text_files", root=corpus, cache_dir=cache)
    assert len(list(cache.iterdir())) == 2
    assert not torch.equal(again[0], first[0]) or not torch.equal(again[1], first[1])


def test_build_datasets_and_loader_give_id_batches(tmp_path: Path) -> None:
    train, validation = build_datasets("stdlib_text", seq_len=64, max_bytes=SMALL, cache_dir=str(tmp_path))
    assert isinstance(train, TokenSequences) and len(train) > len(validation) > 0
    inputs, targets = next(iter(build_dataloader(train, 8, seed=0)))
    assert inputs.shape == targets.shape == (8, 64) and inputs.dtype == torch.int64
    assert torch.equal(inputs[:, 1:], targets[:, :-1])


def test_text_files_need_root_and_enough_text(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"data\.root"):
        build_datasets("text_files", cache_dir=str(tmp_path))
    (tmp_path / "tiny.txt").write_text("too short")
    with pytest.raises(ValueError, match="seq_len 128"):
        build_datasets("text_files", root=str(tmp_path / "tiny.txt"), cache_dir=str(tmp_path))


def test_config_text_files_without_root_names_data_root() -> None:
    assert TEXT_DATASETS == ("stdlib_text", "text_files")
    with pytest.raises(ConfigError, match=r"data\.root: required when data\.name is 'text_files'"):
        ExperimentConfig.from_dict({"model": {"name": "gpt"}, "data": {"name": "text_files"}})


def test_config_train_size_counts_text_sequences(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAYCOMP_CACHE_DIR", str(tmp_path / "cache"))
    write_corpus(tmp_path / "corpus", count=20)
    data = {"name": "text_files", "root": str(tmp_path / "corpus"), "seq_len": 32}
    config = ExperimentConfig.from_dict({"model": {"name": "gpt"}, "data": data})
    train, _ = build_datasets("text_files", root=data["root"], seq_len=32)
    assert config.data.train_size == len(train) > 0
