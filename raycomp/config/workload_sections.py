"""The workload's sections: the model (``ModelConfig``) and its data (``DataConfig``), built-in by name or the
user's own by ``class_path`` and ``init_args``, checked at their keys before anything runs."""

from __future__ import annotations

import math
import os

from pydantic import Field, ValidationInfo, field_validator, model_validator

from raycomp.config.messages import Invalid, one_of
from raycomp.config.sections import MAX_SAMPLES, MAX_SEED, InitArgs, ProperFraction, Section
from raycomp.config.user_code import class_path_problems


def _check_user_code(section: str, config: ModelConfig | DataConfig, default_name: str) -> None:
    """``class_path`` instead of ``name`` (the default, which ``to_dict`` writes), and a callable it names
    that takes ``init_args``."""
    if config.class_path is not None and config.name != default_name:
        raise Invalid([(("name",), f"give {section}.name or {section}.class_path, not both")])
    problems = class_path_problems(config.class_path, config.init_args, section)
    if problems:
        raise Invalid(problems)


class ModelConfig(Section):
    """The network, by name in ``raycomp.models.MODEL_NAMES``, or the user's own by ``class_path``.

    ``num_classes`` sizes a classifier; ``d_model``, ``n_layers``, ``n_heads`` and ``dropout`` size a language
    model (``gpt``, ``gpt2_hf``), whose sequence length is ``data.seq_len`` and vocabulary the 256 bytes.
    ``class_path`` names any importable class or function returning an ``nn.Module``, called with
    ``init_args`` (LightningCLI's convention): a ``RaycompModel`` brings its own loss and metrics, any other
    module maps inputs to logits and is trained as a classifier (cross-entropy). Then ``name`` and the sizes
    are not read; ``init_args.num_classes``, when given, is what eval metrics count classes by.
    """

    name: str = "cnn"
    class_path: str | None = Field(None, min_length=1)
    init_args: InitArgs = Field(default_factory=dict)
    num_classes: int = Field(10, ge=2)
    d_model: int = Field(128, ge=1)
    n_layers: int = Field(4, ge=1)
    n_heads: int = Field(4, ge=1)
    dropout: ProperFraction = 0.0

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from raycomp.models import MODEL_NAMES

        return one_of(name, MODEL_NAMES, "model")

    @model_validator(mode="after")
    def _user_code_imports(self) -> ModelConfig:
        _check_user_code("model", self, "cnn")
        return self

    @property
    def num_classes_for_metrics(self) -> int:
        """The classes a classifier's eval metrics count: ``init_args.num_classes`` of a user model if set."""
        given = self.init_args.get("num_classes") if self.class_path else None
        return given if isinstance(given, int) and not isinstance(given, bool) and given >= 2 else self.num_classes

    @model_validator(mode="after")
    def _heads_divide_width(self) -> ModelConfig:
        if self.d_model % self.n_heads:
            message = f"{self.n_heads} heads do not divide d_model {self.d_model} (make d_model a multiple of it)"
            raise Invalid([(("n_heads",), message)])
        return self


CIFAR10_TRAIN_SIZE = 50_000


class DataConfig(Section):
    """The dataset and its loaders. ``batch_size`` is per Ray Train worker: the global batch is it times workers.

    ``num_workers`` counts DataLoader worker processes (not Ray workers); ``num_train``/``num_test`` size the
    synthetic set only. ``root`` is the folder holding ``cifar-10-batches-py``, required for cifar10, or the
    text file or folder of text files, required for text_files. ``seed`` generates the synthetic set (null:
    the experiment's ``seed``); a sweep's repeats change the experiment's seed (initialisation, data order,
    sampling) but keep the data. The text sets (``stdlib_text``, ``text_files``) are cut into ``seq_len``-byte
    sequences; ``max_bytes`` caps how much of the standard library's source ``stdlib_text`` reads.

    ``image_folder`` reads ``root/train/<class>/*`` and ``root/val/<class>/*`` (torchvision's ``ImageFolder``),
    resized and cropped to ``image_size`` (random crops and flips for training). ``class_path`` names the
    user's own data instead: a callable, called with ``init_args``, returning ``(train, eval)`` Datasets
    (raycomp builds and shards the loaders) or an object with ``train_dataloader()`` and ``val_dataloader()``
    (a LightningDataModule; its loaders are used as they are). A relative ``root`` of the file readers is
    made absolute against the directory the config is read in, as the trials run elsewhere. ``hf_dataset``
    reads a local Hugging Face dataset at ``root`` (``raycomp.data.hf_dataset``): its ``train_split`` and
    ``eval_split``, ``input_column`` (images or text; null: ``image`` or ``text``) and ``label_column``.
    """

    name: str = "synthetic"
    class_path: str | None = Field(None, min_length=1)
    init_args: InitArgs = Field(default_factory=dict)
    root: str | None = None
    image_size: int = Field(224, ge=8)
    train_split: str = "train"
    eval_split: str = "validation"
    input_column: str | None = None
    label_column: str = "label"
    seed: int | None = Field(None, ge=0, le=MAX_SEED)
    num_train: int = Field(5000, ge=1, le=MAX_SAMPLES)
    num_test: int = Field(1000, ge=1, le=MAX_SAMPLES)
    batch_size: int = Field(128, ge=1)
    eval_batch_size: int = Field(500, ge=1)
    num_workers: int = Field(0, ge=0)
    seq_len: int = Field(128, ge=1)
    max_bytes: int = Field(2_000_000, ge=1)
    # train on this share of the training set (a seeded subset: a find's proxy, ``find.proxy.data_fraction``)
    train_fraction: float = Field(1.0, gt=0, le=1)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from raycomp.data import DATASET_NAMES

        return one_of(name, DATASET_NAMES, "dataset")

    @field_validator("root")
    @classmethod
    def _absolute_root(cls, root: str | None, info: ValidationInfo) -> str | None:
        from raycomp.data import FILE_DATASETS

        return os.path.abspath(root) if root and info.data.get("name") in FILE_DATASETS else root

    @model_validator(mode="after")
    def _user_code_imports(self) -> DataConfig:
        _check_user_code("data", self, "synthetic")
        return self

    @model_validator(mode="after")
    def _root_for_cifar(self) -> DataConfig:
        if self.name == "cifar10" and self.root is None:
            message = "required when data.name is 'cifar10' (set it to the folder holding cifar-10-batches-py)"
            raise Invalid([(("root",), message)])
        if self.name == "text_files" and self.root is None:
            message = "required when data.name is 'text_files' (set it to a text file or a folder of text files)"
            raise Invalid([(("root",), message)])
        return self

    @property
    def train_size(self) -> int:
        """Samples in the training set as trained: ``train_fraction`` of ``full_train_size``."""
        full = self.full_train_size
        return full if self.train_fraction == 1 else max(1, math.ceil(full * self.train_fraction))

    @property
    def full_train_size(self) -> int:
        """Samples in the training set: what a step count per epoch is computed from (text: reads the corpus)."""
        from raycomp.data import TEXT_DATASETS

        if self.class_path is not None or self.name in ("image_folder", "hf_dataset"):
            from raycomp.data.loaders import user_train_size

            return user_train_size(self.name, self.root, self.train_split, self.class_path, self.init_args)
        if self.name in TEXT_DATASETS:
            from raycomp.data.loaders import text_train_size

            return text_train_size(self.name, self.root, self.seq_len, self.max_bytes)
        return CIFAR10_TRAIN_SIZE if self.name == "cifar10" else self.num_train
