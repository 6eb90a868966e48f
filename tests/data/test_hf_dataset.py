"""``data.name: hf_dataset``: a local Hugging Face dataset (parquet written here, or save_to_disk) trains a
few steps; a missing folder, split or column is one line at its key. Nothing is downloaded."""

from __future__ import annotations

import io

import numpy as np
import pytest

from raycomp.config import ConfigError, ExperimentConfig, load_experiment
from raycomp.config.recipe import build_trainer
from raycomp.preflight.experiment import load_checked_experiment

datasets = pytest.importorskip("datasets")


def write(tmp_path, text: str, name: str = "exp.yaml") -> str:
    (tmp_path / name).write_text(text)
    return str(tmp_path / name)


def only_problem(path: str) -> str:
    with pytest.raises(ConfigError) as info:
        load_checked_experiment(path)
    assert len(info.value.problems) == 1, info.value.problems
    return info.value.problems[0]


def _png(label: int, rng: np.random.Generator) -> bytes:
    from PIL import Image

    pixels = np.clip(rng.normal(60 + 60 * label, 30, (12, 12, 3)), 0, 255).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def _image_parquet(folder) -> None:
    """train-*.parquet and validation-*.parquet with an ``image`` column of PNGs and a ``label``."""
    rng = np.random.default_rng(0)
    folder.mkdir()
    features = datasets.Features({"image": datasets.Image(), "label": datasets.Value("int64")})
    for split, count in (("train", 24), ("validation", 9)):
        labels = [index % 3 for index in range(count)]
        rows = {"image": [{"bytes": _png(label, rng), "path": None} for label in labels], "label": labels}
        datasets.Dataset.from_dict(rows, features=features).to_parquet(str(folder / f"{split}-00000.parquet"))


def test_a_local_parquet_image_dataset_trains_a_few_steps(tmp_path):
    _image_parquet(tmp_path / "shapes")
    config = ExperimentConfig.from_dict({
        "model": {"class_path": "torchvision.models.resnet18", "init_args": {"num_classes": 3}},
        "data": {"name": "hf_dataset", "root": str(tmp_path / "shapes"), "image_size": 16, "batch_size": 8},
        "max_duration": "2ba", "eval": {"interval": "2ba"}, "scaling": {"num_workers": 0},
    })  # fmt: skip
    assert config.data.train_size == 24
    trainer = build_trainer(config, device="cpu")
    trainer.fit()
    assert trainer.state.timestamp.batch == 2 and "eval/accuracy" in trainer.state.eval_metrics


def test_a_saved_text_dataset_trains_a_byte_level_classifier(tmp_path):
    texts = ["good film", "bad plot", "great cast", "awful end"] * 4
    saved = datasets.DatasetDict({
        "train": datasets.Dataset.from_dict({"text": texts, "label": [0, 1, 0, 1] * 4}),
        "test": datasets.Dataset.from_dict({"text": texts[:4], "label": [0, 1, 0, 1]}),
    })  # fmt: skip
    saved.save_to_disk(str(tmp_path / "reviews"))
    config = ExperimentConfig.from_dict({
        "data": {"name": "hf_dataset", "root": str(tmp_path / "reviews"), "eval_split": "test", "seq_len": 16,
                 "batch_size": 4},
        "max_duration": "2ba", "eval": {"interval": "2ba"}, "scaling": {"num_workers": 0},
    })  # fmt: skip
    from raycomp.config.recipe import build_loaders

    train, _ = build_loaders(config)
    tokens, labels = next(iter(train))
    assert tokens.shape == (4, 16) and tokens.dtype.is_floating_point is False and labels.shape == (4,)


def test_missing_folder_split_and_column_are_one_line_at_their_key(tmp_path):
    _image_parquet(tmp_path / "shapes")
    base = f"data:\n  name: hf_dataset\n  root: {tmp_path / 'shapes'}\n"
    split = write(tmp_path, base + "  eval_split: test\n", "split.yaml")
    assert only_problem(split) == (
        f"{split}:4: data.eval_split: {tmp_path / 'shapes'} has no split 'test' (its splits: train, validation)"
    )
    column = write(tmp_path, base + "  label_column: class\n", "column.yaml")
    assert only_problem(column) == (
        f"{column}:4: data.label_column: {tmp_path / 'shapes'} has no column 'class' (its columns: image, label)"
    )
    missing = write(tmp_path, f"data: {{name: hf_dataset, root: {tmp_path / 'none'}}}\n", "missing.yaml")
    assert only_problem(missing).startswith(f"{missing}:1: data.root: {tmp_path / 'none'} does not exist")
    assert load_experiment(write(tmp_path, base)).data.train_size == 24
