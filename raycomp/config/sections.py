"""The sections of an experiment config, one strict, frozen class per concern, and the field types they share;
the workload's two (the model and its data) are ``workload_sections.py``.

``ExperimentConfig`` (``schema.py``) composes them with the sweep section (``sweep.py``), which builds on
``Section`` too. Nothing heavy is imported: the model and dataset registries only inside the validators.
"""

from __future__ import annotations

import contextlib
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    field_validator,
    model_validator,
)

from raycomp.config.messages import Invalid, show
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


# ---- sections --------------------------------------------------------------------------------------------


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
