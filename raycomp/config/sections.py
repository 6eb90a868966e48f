"""The sections of an experiment config, one strict, frozen class per concern, and the field types they share.

``ExperimentConfig`` (``schema.py``) composes them with the sweep section (``sweep.py``), which builds on
``Section`` too. Nothing heavy is imported: the model and dataset registries only inside the validators.
"""

from __future__ import annotations

import contextlib
import os
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationInfo,
    field_validator,
    model_validator,
)

from raycomp.config.messages import Invalid, one_of, show
from raycomp.config.user_code import class_path_problems
from raycomp.core.time import Time, TimeUnit


class Section(BaseModel):
    """One concern of the config. Strict: YAML already typed the values, so `true` is never taken for 1.
    Numbers are finite: YAML's ``.inf`` passes ``gt=0`` and ``.nan`` every bound."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


MAX_SEED = 2**32 - 1  # NumPy's RandomState (the sweep's draws, seed_all) takes no more
MAX_SAMPLES = 1_000_000  # the synthetic set is made in memory: about 12 KB a sample


def _parse_train_time(value: Any) -> Time:
    """Epochs or batches only: trial schedules need a step count known before training starts."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # reported below, in this config's terms
            value = Time.from_timestring(value)
    if not isinstance(value, Time) or value.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH):
        raise ValueError(f"must be a number of epochs or batches such as '10ep' or '500ba', got {show(value)}")
    if value.value <= 0:
        raise ValueError(f"must be more than zero, got {show(value)}")
    return value


TrainTime = Annotated[Time, PlainValidator(_parse_train_time), PlainSerializer(str, return_type=str)]
Fraction = Annotated[float, Field(gt=0, le=1)]  # (0, 1]
ProperFraction = Annotated[float, Field(ge=0, lt=1)]  # [0, 1)
# A user callable's arguments; ``init_args:`` left empty in YAML means none.
InitArgs = Annotated[dict[str, Any], BeforeValidator(lambda data: {} if data is None else data)]


def _check_user_code(section: str, config: ModelConfig | DataConfig, default_name: str) -> None:
    """``class_path`` instead of ``name`` (the default, which ``to_dict`` writes), and a callable it names
    that takes ``init_args``."""
    if config.class_path is not None and config.name != default_name:
        raise Invalid([(("name",), f"give {section}.name or {section}.class_path, not both")])
    problems = class_path_problems(config.class_path, config.init_args, section)
    if problems:
        raise Invalid(problems)


# ---- sections --------------------------------------------------------------------------------------------


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
    def _folders_exist(self) -> DataConfig:
        if self.name == "image_folder" and self.class_path is None:
            from raycomp.data.image_folder import folder_problems

            problems = folder_problems(self.root)
            if problems:
                raise Invalid([(("root",), problem) for problem in problems])
        if self.name == "hf_dataset" and self.class_path is None:
            from raycomp.data.hf_dataset import hf_problems

            found = hf_problems(self.root, (self.train_split, self.eval_split), (self.input_column, self.label_column))
            if found:
                raise Invalid([((key,), problem) for key, problem in found])
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
        """Samples in the training set: what a step count per epoch is computed from (text: reads the corpus)."""
        from raycomp.data import TEXT_DATASETS

        if self.class_path is not None or self.name in ("image_folder", "hf_dataset"):
            from raycomp.data.loaders import user_train_size

            return user_train_size(self.name, self.root, self.train_split, self.class_path, self.init_args)
        if self.name in TEXT_DATASETS:
            from raycomp.data.loaders import text_train_size

            return text_train_size(self.name, self.root, self.seq_len, self.max_bytes)
        return CIFAR10_TRAIN_SIZE if self.name == "cifar10" else self.num_train


class EvalConfig(Section):
    """When to evaluate, and the torchmetrics computed beside ``eval/loss`` and ``eval/accuracy``.

    ``metrics`` maps a name, logged as ``eval/<name>`` and usable as ``sweep.metric``, to the arguments of a
    torchmetrics class: the one the name names (``MulticlassF1Score: {average: macro}``), or the one ``class``
    names (``top5: {class: MulticlassAccuracy, top_k: 5}``). ``num_classes`` defaults to ``model.num_classes``.
    ``recompute_batchnorm``: BatchNorm statistics are recomputed from this many of the last training batches
    before each evaluation, for every arm alike (0: the running averages, which lag the weights; Composer's).
    """

    interval: TrainTime = Time(1, TimeUnit.EPOCH)
    metrics: dict[str, dict[str, Any]] = Field(default_factory=dict)
    recompute_batchnorm: int = Field(2, ge=0, le=64)

    @field_validator("metrics", mode="before")
    @classmethod
    def _empty_arguments(cls, data: Any) -> Any:
        """``metrics:`` and ``F1Score:`` left empty in YAML mean none and the defaults."""
        if data is None:
            return {}
        return {name: {} if args is None else args for name, args in data.items()} if isinstance(data, dict) else data

    def metric_classes(self) -> dict[str, tuple[str, dict[str, Any]]]:
        """``{name: (torchmetrics class name, its arguments)}``."""
        return {
            name: (args.get("class", name), {k: v for k, v in args.items() if k != "class"})
            for name, args in self.metrics.items()
        }


class ScalingConfig(Section):
    """Ray Train workers. ``num_workers: 0`` is local mode: the train function runs in the trial's own process.

    ``use_gpu: true`` with ``gpus_per_worker: 0`` means one GPU per worker: read ``worker_gpus``, not
    ``gpus_per_worker``, when asking Ray for resources.
    """

    num_workers: int = Field(1, ge=0)
    cpus_per_worker: float = Field(1.0, gt=0)
    gpus_per_worker: float = Field(0.0, ge=0)
    use_gpu: bool = False

    @model_validator(mode="after")
    def _gpus_need_use_gpu(self) -> ScalingConfig:
        if self.gpus_per_worker > 0 and not self.use_gpu:
            message = f"is {self.gpus_per_worker} but use_gpu is false (set scaling.use_gpu: true, or 0 GPUs)"
            raise Invalid([(("gpus_per_worker",), message)])
        return self

    @property
    def worker_gpus(self) -> float:
        return self.gpus_per_worker or (1.0 if self.use_gpu else 0.0)

    @property
    def resources_per_worker(self) -> dict[str, float]:
        return {"CPU": self.cpus_per_worker, "GPU": self.worker_gpus}


class CheckpointConfig(Section):
    """How often a checkpoint is reported to Ray, and how many Ray keeps (null: all)."""

    interval: TrainTime = Time(1, TimeUnit.EPOCH)
    num_to_keep: int | None = Field(2, ge=1)


class ProfileConfig(Section):
    """A ``torch.profiler`` trace of ``active`` training batches after ``wait`` skipped and ``warmup`` dropped
    ones, saved beside the checkpoints (``profile/``) and attached to the MLflow run (``raycomp/loop/profiling.py``)."""

    wait: int = Field(1, ge=0)
    warmup: int = Field(1, ge=0)
    active: int = Field(3, ge=1, le=100)


class FailureConfig(Section):
    max_failures: int = Field(0, ge=-1)  # -1 retries forever, as in Ray


class TrackingConfig(Section):
    """MLflow: ``experiment_name`` null uses the experiment's ``name``; ``tracking_uri`` null, MLflow's default."""

    enabled: bool = True
    tracking_uri: str | None = None
    experiment_name: str | None = None
