"""``ExperimentConfig``: a whole experiment, validated and frozen, built from plain data and changed by path.

``ExperimentConfig.from_dict`` is the one way a config is built (CLIs, Tune trials and tests all use it);
``load_experiment`` (``source.py``) adds YAML reading, line numbers and ``--set`` overrides on top. Every
problem found is gathered into one ``ConfigError``, so a bad file is fixed in one pass.

An algorithm's arguments are checked against the declaration in its constructor's signature
(``raycomp.algorithms.arguments``, through ``algorithm_arguments.py``), each at its own key, and the rules that
tie them together (``start < end``) at the algorithm's name; the config keeps the validated ``Arguments``. No
algorithm is built here: the recipe builds each once (``config/recipe.py``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field, FieldSerializationInfo, ValidationError, field_serializer, field_validator, model_validator

from raycomp.algorithms.arguments import Arguments
from raycomp.algorithms.registry import algorithm_class
from raycomp.base import keys
from raycomp.base.errors import ConfigError
from raycomp.base.layout import RunLayout
from raycomp.config.algorithm_arguments import checked_algorithms
from raycomp.config.evaluated import recorded_accuracy
from raycomp.config.find import FindConfig
from raycomp.config.flat import flattened, plain
from raycomp.config.messages import Invalid, KeyPath, format_problems, problems_of, show
from raycomp.config.optimization import OptimizerConfig, ScheduleConfig
from raycomp.config.sections import (
    MAX_SEED,
    CheckpointConfig,
    EvalConfig,
    FailureConfig,
    ProfileConfig,
    ScalingConfig,
    Section,
    TrackingConfig,
    TrainTime,
)
from raycomp.config.sweep import SweepConfig, assign, swept_algorithm
from raycomp.config.sweep_checks import sweep_problems
from raycomp.config.workload import eval_metric_problems, metric_num_classes, model_data_problems
from raycomp.config.workload_sections import DataConfig, ModelConfig
from raycomp.core.evaluator import build_metric
from raycomp.core.time import Time, TimeUnit

if TYPE_CHECKING:
    from torchmetrics import Metric


_FOLDER_NAME = re.compile(r"[A-Za-z0-9._-]{1,200}")


class ExperimentConfig(Section):
    """A whole experiment. Build it with ``from_dict`` or ``load_experiment``; change it with ``with_overrides``.

    ``algorithms`` maps a name in ``ALGORITHMS`` to its validated constructor arguments (written as a mapping;
    empty or null: the defaults).
    ``storage_path`` is where Ray stores results, kept as written; see ``layout``.
    """

    name: str = Field("raycomp", min_length=1)
    seed: int = Field(0, ge=0, le=MAX_SEED)
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    max_duration: TrainTime = Time(10, TimeUnit.EPOCH)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    precision: Literal["fp32", "amp", "amp_bf16", "amp_fp16"] = "fp32"
    grad_accum: int = Field(1, ge=1)
    # torch.compile for the training step (and SelectiveBackprop's selection pass): a mode, or true for "default"
    compile: bool | Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"] = False
    algorithms: dict[str, Arguments] = Field(default_factory=dict)
    scaling: ScalingConfig = Field(default_factory=ScalingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    failure: FailureConfig = Field(default_factory=FailureConfig)
    profile: ProfileConfig | None = None
    storage_path: str = Field("./runs", min_length=1)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    sweep: SweepConfig | None = None
    find: FindConfig | None = None  # a recipe search: what python -m raycomp.find runs (docs/find.md)

    @field_validator("name")
    @classmethod
    def _one_folder_name(cls, name: str) -> str:
        """``name`` is the run's folder under ``storage_path``: ``../x`` or ``..`` would write beside it."""
        if not _FOLDER_NAME.fullmatch(name) or name in (".", ".."):
            raise ValueError(
                f"must be one folder name of letters, digits, '.', '_' and '-' (at most 200, not '.' or '..'), "
                f"got {show(name)}"
            )
        return name

    @field_validator("algorithms", mode="before")
    @classmethod
    def _check_algorithms(cls, data: Any) -> dict[str, Arguments]:
        return checked_algorithms(data)

    @field_serializer("algorithms")
    def _algorithms_as_written(self, algorithms: dict[str, Arguments], info: FieldSerializationInfo) -> dict[str, Any]:
        """Each algorithm's given arguments only: written back, a config says what its author wrote."""
        return {name: args.model_dump(mode=info.mode, exclude_unset=True) for name, args in algorithms.items()}

    @model_validator(mode="after")
    def _check_workload(self) -> ExperimentConfig:
        """The model fits the data, and each eval metric builds (reported at its key, not mid-run)."""
        problems = []
        if self.model.class_path is None and self.data.class_path is None:  # user code: its fit shows when built
            problems += model_data_problems(self.model.name, self.data.name)
        problems += eval_metric_problems(self.eval.metric_classes(), self.metric_num_classes)
        if problems:
            raise Invalid(problems)
        return self

    @model_validator(mode="after")
    def _check_compile(self) -> ExperimentConfig:
        """Algorithms that change the batch's shape every few steps would recompile the step each time."""
        if self.compile is False:
            return self
        refused = [
            name for name, args in self.algorithms.items() if not algorithm_class(name).compiles_with(dict(args))
        ]
        if refused:
            message = (
                f"cannot be used with {', '.join(refused)}, which changes the batch's shape as it trains "
                "(each shape a recompilation): remove compile or the algorithm"
            )
            raise Invalid([(("compile",), message)])
        return self

    @model_validator(mode="after")
    def _check_sweep(self) -> ExperimentConfig:
        problems = sweep_problems(self)
        if problems:
            raise Invalid(problems)
        return self

    # -- derived --

    @property
    def objective(self) -> tuple[str, str]:
        """``(metric, mode)`` the sweep optimises; without a sweep section, what a run ranks its checkpoints by:
        ``eval/accuracy`` (max), or ``eval/loss`` (min) for a user's model without accuracy (a regression)."""
        if self.sweep is not None:
            return self.sweep.metric, self.sweep.mode
        if self.model.class_path is not None:
            has_accuracy = recorded_accuracy(self)
            if has_accuracy is None:
                raise RuntimeError(
                    f"what a run of {self.model.class_path} ranks by depends on whether it computes an accuracy: "
                    "check the experiment first (raycomp.preflight.check_experiment)"
                )
            if not has_accuracy:
                return f"{keys.EVAL_LABEL}/{keys.LOSS}", "min"
        return keys.DEFAULT_METRIC, keys.DEFAULT_MODE

    @property
    def sweep_or_default(self) -> SweepConfig:
        """The sweep section, or its defaults when there is none: what a sweep of a config without one runs."""
        return self.sweep if self.sweep is not None else SweepConfig()

    @property
    def layout(self) -> RunLayout:
        """Where this experiment's runs, results and report go."""
        return RunLayout.of(self.storage_path, self.name)

    # -- building and changing configs --

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "<config>", *, locations: Mapping[KeyPath, str] | None = None
    ) -> ExperimentConfig:
        """Validates ``data``; ``source`` names it in errors, ``locations`` maps key paths to ``file:line``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the experiment must be a mapping of keys to values, got {show(data)}")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(format_problems(problems_of(exc, cls), source, locations or {})) from None

    def with_overrides(self, flat: Mapping[str, Any]) -> ExperimentConfig:
        """This config with dotted-path values substituted (a Tune trial's sample): a typed update, in which only
        the sections the values touch are rebuilt from data and validated; the others are kept as they are."""
        touched: dict[str, Any] = {}
        locations: dict[KeyPath, str] = {}
        problems: list[str] = []
        for path, value in flat.items():
            value, top = plain(value), path.split(".", 1)[0]
            if top not in touched:
                touched[top] = self.model_dump(mode="json", include={top}).get(top)
            holder = {top: touched[top]}
            try:
                locations[assign(holder, path, value)] = f"override {path}={show(value)}"
            except ValueError as exc:
                problems.append(f"override {path}={show(value)}: {exc}")
            touched[top] = holder[top]
        if problems:
            raise ConfigError(problems)
        return self._updated(touched, "<with_overrides>", locations)

    def _updated(self, changed: Mapping[str, Any], source: str, locations: Mapping[KeyPath, str]) -> ExperimentConfig:
        """This config with the ``changed`` sections (as data) validated in; the rest pass as the objects they are
        (pydantic does not validate a model instance again), then every rule across sections runs."""
        kept = {name: getattr(self, name) for name in type(self).model_fields if name not in changed}
        try:
            return type(self).model_validate({**kept, **changed})
        except ValidationError as exc:
            raise ConfigError(format_problems(problems_of(exc, type(self)), source, locations)) from None

    @property
    def metric_num_classes(self) -> int:
        """The classes an eval metric's ``num_classes`` defaults to: the model's, or a language model's vocabulary."""
        return metric_num_classes(self.data.name, self.model.num_classes_for_metrics)

    def without_algorithms(self, names: Iterable[str]) -> ExperimentConfig:
        """This config without the named algorithms, nor sweeps of their arguments (a baseline trial)."""
        names = set(names)
        changed: dict[str, Any] = {"algorithms": {k: v for k, v in self.algorithms.items() if k not in names}}
        if self.sweep is not None:
            sweep = self.sweep.model_dump(mode="json")
            sweep["space"] = {p: d for p, d in sweep["space"].items() if swept_algorithm(p) not in names}
            changed["sweep"] = sweep
        return self._updated(changed, "<without_algorithms>", {})

    def build_eval_metrics(self) -> dict[str, Metric]:
        """Fresh torchmetrics for ``eval.metrics``, by name (an ``Evaluator``'s ``metrics``)."""
        classes = self.eval.metric_classes().items()
        return {name: build_metric(cls, args, self.metric_num_classes) for name, (cls, args) in classes}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML data that ``from_dict`` turns back into an equal config."""
        return self.model_dump(mode="json")

    def flatten(self) -> dict[str, Any]:
        """Dotted key -> scalar, for logging params and the training config's digest (``config/flat.py``)."""
        return flattened(self)
