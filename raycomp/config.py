"""Experiment YAML -> validated, frozen config objects, with errors that name the file, line, key and fix.

``ExperimentConfig.from_dict`` is the one way a config is built (CLIs, Tune trials and tests all use it);
``load_experiment`` adds YAML reading, line numbers and ``--set key.path=value`` overrides on top.
Every problem found is gathered into one ``ConfigError``, so a bad file is fixed in one pass.

Nothing heavy is imported here: the model, dataset and algorithm registries are imported inside the
validators that need them; Ray is not imported at all (``raycomp.launch.sweep`` turns a sweep into Tune
search-space objects).
"""

from __future__ import annotations

import contextlib
import copy
import difflib
import importlib
import inspect
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    PlainValidator,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from raycomp.core.time import Time, TimeUnit

if TYPE_CHECKING:
    from raycomp.core.algorithm import Algorithm

# Algorithm name in YAML -> class path, imported only when a config names it. Add an algorithm with one line.
ALGORITHMS: dict[str, str] = {
    "selective_backprop": "raycomp.algorithms.SelectiveBackprop",
    "label_smoothing": "raycomp.algorithms.LabelSmoothing",
    "mixup": "raycomp.algorithms.MixUp",
    "cutmix": "raycomp.algorithms.CutMix",
    "progressive_resizing": "raycomp.algorithms.ProgressiveResizing",
    "channels_last": "raycomp.algorithms.ChannelsLast",
    "blurpool": "raycomp.algorithms.BlurPool",
    "layer_freezing": "raycomp.algorithms.LayerFreezing",
    "gradient_clipping": "raycomp.algorithms.GradientClipping",
    "ema": "raycomp.algorithms.EMA",
}
DOMAIN_KINDS: tuple[str, ...] = ("grid", "choice", "uniform", "loguniform", "randint")

KeyPath = tuple[str | int, ...]
Problem = tuple[KeyPath, str]  # (key path, what is wrong and the fix)
_SPACE: KeyPath = ("sweep", "space")


class ConfigError(ValueError):
    """An invalid experiment config; ``problems`` holds one ``source: key.path: message`` line per problem."""

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:  # keeps `problems` across Ray's process boundaries
        return type(self), (self.problems,)


class _Invalid(ValueError):
    """Raised inside validators to report problems at key paths relative to the object being validated."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("; ".join(message for _, message in problems))


def _show(value: Any) -> str:
    """A value as the user wrote it in YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Time):
        return repr(str(value))
    return repr(value)


def _suggest(word: Any, valid: Iterable[str], what: str) -> str:
    """``(did you mean 'x'?; valid <what>: a, b, c)``."""
    valid = list(valid)
    close = difflib.get_close_matches(str(word), valid, n=1, cutoff=0.6)
    guess = f"did you mean {close[0]!r}?; " if close else ""
    return f"({guess}valid {what}: {', '.join(valid)})" if valid else f"(it takes no {what})"


def _one_of(value: str, names: Sequence[str], what: str) -> str:
    if value not in names:
        raise ValueError(f"unknown {what} {value!r} {_suggest(value, names, what + 's')}")
    return value


# ---- field types -----------------------------------------------------------------------------------------


def _interval(low: float, high: float, *, low_open: bool = False, high_open: bool = False) -> AfterValidator:
    """A range check whose message shows the whole interval, e.g. ``must be in [0, 1), got 1.2``."""

    def check(value: float) -> float:
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (above and below):
            bounds = f"{'(' if low_open else '['}{low}, {high}{')' if high_open else ']'}"
            raise ValueError(f"must be in {bounds}, got {_show(value)}")
        return value

    return AfterValidator(check)


def _parse_train_time(value: Any) -> Time:
    """Epochs or batches only: trial schedules need a step count known before training starts."""
    if isinstance(value, str):
        with contextlib.suppress(ValueError):  # reported below, in this config's terms
            value = Time.from_timestring(value)
    if not isinstance(value, Time) or value.unit not in (TimeUnit.EPOCH, TimeUnit.BATCH):
        raise ValueError(f"must be a number of epochs or batches such as '10ep' or '500ba', got {_show(value)}")
    if value.value <= 0:
        raise ValueError(f"must be more than zero, got {_show(value)}")
    return value


TrainTime = Annotated[Time, PlainValidator(_parse_train_time), PlainSerializer(str, return_type=str)]
Fraction = Annotated[float, _interval(0, 1, low_open=True)]  # (0, 1]
ProperFraction = Annotated[float, _interval(0, 1, high_open=True)]  # [0, 1)


class _Section(BaseModel):
    """One concern of the config. Strict: YAML already typed the values, so `true` is never taken for 1."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


# ---- sections --------------------------------------------------------------------------------------------


class ModelConfig(_Section):
    """The network, by name in ``raycomp.models.MODEL_NAMES``."""

    name: str = "cnn"
    num_classes: int = Field(10, ge=2)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from raycomp.models import MODEL_NAMES

        return _one_of(name, MODEL_NAMES, "model")


class DataConfig(_Section):
    """The dataset and its loaders. ``batch_size`` is per Ray Train worker: the global batch is it times workers.

    ``num_workers`` counts DataLoader worker processes (not Ray workers); ``num_train``/``num_test`` size the
    synthetic set only. ``root`` is the folder holding ``cifar-10-batches-py``, required for cifar10.
    """

    name: str = "synthetic"
    root: str | None = None
    num_train: int = Field(5000, ge=1)
    num_test: int = Field(1000, ge=1)
    batch_size: int = Field(128, ge=1)
    eval_batch_size: int = Field(500, ge=1)
    num_workers: int = Field(0, ge=0)

    @field_validator("name")
    @classmethod
    def _known(cls, name: str) -> str:
        from raycomp.data import DATASET_NAMES

        return _one_of(name, DATASET_NAMES, "dataset")

    @model_validator(mode="after")
    def _root_for_cifar(self) -> DataConfig:
        if self.name == "cifar10" and self.root is None:
            message = "required when data.name is 'cifar10' (set it to the folder holding cifar-10-batches-py)"
            raise _Invalid([(("root",), message)])
        return self


class OptimizerConfig(_Section):
    """SGD or AdamW; ``momentum`` and ``nesterov`` apply to SGD only."""

    name: Literal["sgd", "adamw"] = "sgd"
    lr: float = Field(0.05, gt=0)
    momentum: ProperFraction = 0.9
    weight_decay: float = Field(5e-4, ge=0)
    nesterov: bool = False

    @model_validator(mode="after")
    def _nesterov_needs_momentum(self) -> OptimizerConfig:
        if self.name == "sgd" and self.nesterov and self.momentum == 0:
            raise _Invalid([(("nesterov",), "needs momentum > 0 (set optimizer.momentum, or nesterov: false)")])
        return self


class ScheduleConfig(_Section):
    """The learning-rate schedule, stepped per batch. ``warmup_fraction`` is for cosine; ``step_size``,
    ``gamma`` for step (``step_size`` null lets the trial choose)."""

    name: Literal["constant", "cosine", "onecycle", "step"] = "onecycle"
    warmup_fraction: ProperFraction = 0.0
    step_size: TrainTime | None = None
    gamma: Fraction = 0.1


class EvalConfig(_Section):
    interval: TrainTime = Time(1, TimeUnit.EPOCH)


class ScalingConfig(_Section):
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
            raise _Invalid([(("gpus_per_worker",), message)])
        return self

    @property
    def worker_gpus(self) -> float:
        return self.gpus_per_worker or (1.0 if self.use_gpu else 0.0)

    @property
    def resources_per_worker(self) -> dict[str, float]:
        return {"CPU": self.cpus_per_worker, "GPU": self.worker_gpus}


class CheckpointConfig(_Section):
    """How often a checkpoint is reported to Ray, and how many Ray keeps (null: all)."""

    interval: TrainTime = Time(1, TimeUnit.EPOCH)
    num_to_keep: int | None = Field(2, ge=1)


class FailureConfig(_Section):
    max_failures: int = Field(0, ge=-1)  # -1 retries forever, as in Ray


class TrackingConfig(_Section):
    """MLflow: ``experiment_name`` null uses the experiment's ``name``; ``tracking_uri`` null, MLflow's default."""

    enabled: bool = True
    tracking_uri: str | None = None
    experiment_name: str | None = None


# ---- sweep -----------------------------------------------------------------------------------------------


class SearchDomain(_Section):
    """One swept value, written ``{grid: [...]}``, ``{choice: [...]}``, ``{uniform: [low, high]}``,
    ``{loguniform: [low, high]}`` or ``{randint: [low, high]}`` (high exclusive, as in Ray)."""

    kind: Literal["grid", "choice", "uniform", "loguniform", "randint"]
    values: list[Any]

    @model_validator(mode="before")
    @classmethod
    def _from_yaml(cls, data: Any) -> Any:
        if isinstance(data, SearchDomain):
            return data
        if not isinstance(data, Mapping) or len(data) != 1 or next(iter(data)) not in DOMAIN_KINDS:
            forms = "{grid: [...]}, {choice: [...]}, {uniform: [low, high]}, {loguniform: [low, high]}, {randint: ...}"
            raise _Invalid([((), f"must be exactly one of {forms}, got {_show(data)}")])
        kind, values = next(iter(data.items()))
        problem = _domain_problem(kind, values)
        if problem:
            raise _Invalid([((kind,), problem)])
        return {"kind": kind, "values": list(values)}

    @model_serializer
    def _to_yaml(self) -> dict[str, list[Any]]:
        return {self.kind: list(self.values)}

    def candidates(self) -> list[Any]:
        """The values whose validity stands for the whole domain: every listed value, or both bounds."""
        if self.kind == "randint":
            return [self.values[0], self.values[1] - 1]
        return list(self.values)


def _domain_problem(kind: str, values: Any) -> str | None:
    if not isinstance(values, list) or not values:
        return f"must be a non-empty list, got {_show(values)}"
    if kind in ("grid", "choice"):
        return None
    number = int if kind == "randint" else (int, float)
    example = "[1, 10]" if kind == "randint" else "[0.001, 0.1]"
    if len(values) != 2 or not all(isinstance(v, number) and not isinstance(v, bool) for v in values):
        what = "integers" if kind == "randint" else "numbers"
        return f"must be two {what} [low, high] such as {example}, got {_show(values)}"
    low, high = values
    if not low < high:
        return f"needs low < high, got {_show(values)} (swap them?)"
    if kind == "loguniform" and low <= 0:
        return f"needs low > 0, got {_show(values)}"
    return None


class TrialSchedulerConfig(_Section):
    """A Tune trial scheduler; ``grace_period``/``max_t`` count reported training iterations (ASHA only)."""

    name: Literal["asha", "fifo"] = "asha"
    grace_period: int = Field(1, ge=1)
    reduction_factor: float = Field(2.0, gt=1)
    max_t: int | None = Field(None, ge=1)

    @model_validator(mode="before")
    @classmethod
    def _from_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data  # `scheduler: asha` is shorthand

    @model_validator(mode="after")
    def _asha_options(self) -> TrialSchedulerConfig:
        stray = sorted(self.model_fields_set - {"name"})
        if self.name == "fifo" and stray:
            raise _Invalid([((key,), "is an ASHA option; remove it or set name: asha") for key in stray])
        return self


class SweepConfig(_Section):
    """A Ray Tune sweep: ``space`` maps dotted config key paths to search domains.

    ``max_concurrent_trials`` null runs as many trials as fit; ``baseline`` adds a trial without the swept
    algorithm(s), to measure what they buy.
    """

    space: dict[str, SearchDomain] = Field(default_factory=dict)
    num_samples: int = Field(1, ge=1)
    metric: str = "eval/accuracy"
    mode: Literal["max", "min"] = "max"
    scheduler: TrialSchedulerConfig | None = None
    max_concurrent_trials: int | None = Field(None, ge=1)
    search_alg: Literal["random", "optuna"] | None = None  # optuna needs `pip install raycomp[optuna]`
    baseline: bool = True

    @model_validator(mode="after")
    def _grid_needs_basic_search(self) -> SweepConfig:
        if self.search_alg == "optuna":
            grids = [path for path, domain in self.space.items() if domain.kind == "grid"]
            message = f"{self.search_alg} cannot search a grid (use choice, or search_alg: random)"
            if grids:
                raise _Invalid([(("space", path, "grid"), message) for path in grids])
        return self

    def swept_algorithms(self) -> list[str]:
        """Names of the algorithms whose arguments are swept, in space order."""
        names = [_swept_algorithm(path) for path in self.space]
        return list(dict.fromkeys(name for name in names if name))


# ---- algorithms ------------------------------------------------------------------------------------------


def algorithm_class(name: str) -> type:
    """The Algorithm class registered as ``name`` in ``ALGORITHMS``, imported on first use."""
    module, _, attribute = ALGORITHMS[name].rpartition(".")
    return getattr(importlib.import_module(module), attribute)


def _parameters(cls: type) -> dict[str, inspect.Parameter]:
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return {p.name: p for p in parameters if p.kind in kinds}


def _type_problem(value: Any, parameter: inspect.Parameter) -> str | None:
    """Checks a value against the type of its default, since constructors compare before they type-check.

    ``null`` is accepted where the annotation allows None (``half_life: str | None = "1000ba"``).
    """
    default = parameter.default
    if default is inspect.Parameter.empty or default is None:
        return None
    if value is None and re.search(r"\bNone\b|Optional", str(parameter.annotation)):
        return None
    if isinstance(default, bool):
        ok, what = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, what = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif isinstance(default, float):
        ok, what = isinstance(value, int | float) and not isinstance(value, bool), "a number"
    elif isinstance(default, str):
        ok, what = isinstance(value, str), "a string"
    else:
        return None
    return None if ok else f"must be {what}, got {_show(value)} (default: {_show(default)})"


def _algorithm_problems(name: str, args: Mapping[str, Any]) -> list[Problem]:
    """Problems with one algorithm's arguments, found by building it (its constructor knows its ranges)."""
    cls = algorithm_class(name)
    parameters = _parameters(cls)
    problems: list[Problem] = []
    usable: dict[str, Any] = {}
    for arg, value in args.items():
        if arg not in parameters:
            problem = f"unknown argument of {cls.__name__} {_suggest(arg, parameters, 'arguments')}"
        else:
            problem = _type_problem(value, parameters[arg])
        if problem:
            problems.append(((arg,), problem))
        else:
            usable[arg] = value
    missing = [p for p, param in parameters.items() if param.default is inspect.Parameter.empty and p not in args]
    if missing:
        return [*problems, ((), f"missing argument(s) {', '.join(missing)} (add them under algorithms.{name})")]
    return problems + _constructor_problems(cls, usable, parameters)


def _constructor_problems(cls: type, args: dict[str, Any], parameters: dict[str, inspect.Parameter]) -> list[Problem]:
    """Builds the algorithm, blaming each error on the arguments its message names, then retries without them.

    An error naming one argument is reported at that argument's key; one naming several (``start < end``)
    at the algorithm's key.
    """
    problems: list[Problem] = []
    remaining = dict(args)
    while True:
        try:
            cls(**remaining)
            return problems
        except (TypeError, ValueError) as exc:
            message = str(exc)
        named = [arg for arg in remaining if re.search(rf"\b{re.escape(arg)}\b", message)]
        defaults = {k: parameters[k].default for k in named or remaining}
        if any(default is inspect.Parameter.empty for default in defaults.values()):
            return [*problems, ((), message)]
        if len(named) == 1:
            (arg,) = named
            message = message.removeprefix(f"{cls.__name__} ").removeprefix(f"{arg} ")
            problems.append(((arg,), f"{message} (default: {_show(defaults[arg])})"))
        else:
            shown = ", ".join(f"{k}={_show(v)}" for k, v in defaults.items())
            problems.append(((), f"{message} (defaults: {shown})" if shown else message))
        if not named:
            return problems
        for arg in named:
            del remaining[arg]


# ---- the experiment --------------------------------------------------------------------------------------


class ExperimentConfig(_Section):
    """A whole experiment. Build it with ``from_dict`` or ``load_experiment``; change it with ``with_overrides``.

    ``algorithms`` maps a name in ``ALGORITHMS`` to its constructor arguments (empty or null: the defaults).
    ``storage_path`` is where Ray stores results, kept as written; see ``resolved_storage_path``.
    """

    name: str = Field("raycomp", min_length=1)
    seed: int = Field(0, ge=0)
    model: ModelConfig = Field(default_factory=ModelConfig)
    data: DataConfig = Field(default_factory=DataConfig)
    optimizer: OptimizerConfig = Field(default_factory=OptimizerConfig)
    schedule: ScheduleConfig = Field(default_factory=ScheduleConfig)
    max_duration: TrainTime = Time(10, TimeUnit.EPOCH)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    precision: Literal["fp32", "amp_bf16", "amp_fp16"] = "fp32"
    grad_accum: int = Field(1, ge=1)
    algorithms: dict[str, dict[str, Any]] = Field(default_factory=dict)
    scaling: ScalingConfig = Field(default_factory=ScalingConfig)
    checkpoint: CheckpointConfig = Field(default_factory=CheckpointConfig)
    failure: FailureConfig = Field(default_factory=FailureConfig)
    storage_path: str = Field("./runs", min_length=1)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    sweep: SweepConfig | None = None

    @field_validator("algorithms", mode="before")
    @classmethod
    def _check_algorithms(cls, data: Any) -> Any:
        if data is None:
            return {}
        if not isinstance(data, Mapping):
            raise _Invalid([((), f"must map algorithm names to their arguments, got {_show(data)}")])
        problems: list[Problem] = []
        checked: dict[Any, Any] = {}
        for name, args in data.items():
            args = {} if args is None else args
            if name not in ALGORITHMS:
                problems.append(((name,), f"unknown algorithm {_suggest(name, ALGORITHMS, 'algorithms')}"))
            elif not isinstance(args, Mapping):
                problems.append(((name,), f"must map argument names to values (or be empty), got {_show(args)}"))
            else:
                problems += [((name, *path), message) for path, message in _algorithm_problems(name, args)]
            checked[name] = dict(args) if isinstance(args, Mapping) else args
        if problems:
            raise _Invalid(problems)
        return checked

    @model_validator(mode="after")
    def _check_sweep(self) -> ExperimentConfig:
        """Each swept path must exist, and each listed value and bound must make a valid config on its own."""
        if self.sweep is None:
            return self
        base = self.model_dump(mode="json")
        base["sweep"] = None
        leaves = _leaf_paths()
        problems: list[Problem] = []
        for path, domain in self.sweep.space.items():
            where = (*_SPACE, path)
            problem = self._swept_path_problem(path, leaves)
            if problem:
                problems.append((where, problem))
                continue
            for index, value in enumerate(domain.candidates()):
                trial = copy.deepcopy(base)
                _assign(trial, path, value)
                try:
                    ExperimentConfig.model_validate(trial)
                except ValidationError as exc:
                    for inner, message in _problems(exc):
                        key = "" if _dotted(inner) == path else f"{_dotted(inner)}: "
                        problems.append(((*where, domain.kind, index), f"{_show(value)} is invalid: {key}{message}"))
        if problems:
            raise _Invalid(problems)
        return self

    def _swept_path_problem(self, path: str, leaves: set[str]) -> str | None:
        parts = path.split(".")
        if parts[0] != "algorithms":
            if path in leaves:
                return None
            close = difflib.get_close_matches(path, leaves, n=1, cutoff=0.6)
            guess = f"did you mean {close[0]!r}?; " if close else ""
            return f"not a config key ({guess}sweep a leaf such as optimizer.lr or algorithms.<name>.<argument>)"
        if len(parts) != 3:
            return "name an algorithm argument as algorithms.<name>.<argument>, e.g. algorithms.selective_backprop.keep"
        name, arg = parts[1:]
        if name not in ALGORITHMS:
            return f"unknown algorithm {name!r} {_suggest(name, ALGORITHMS, 'algorithms')}"
        if name not in self.algorithms:
            return f"algorithm {name!r} is swept but not configured (add `{name}: {{}}` under algorithms)"
        parameters = _parameters(algorithm_class(name))
        if arg not in parameters:
            return f"{arg!r} is not an argument of {name} {_suggest(arg, parameters, 'arguments')}"
        return None

    # -- building and changing configs --

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], source: str = "<config>", *, locations: Mapping[KeyPath, str] | None = None
    ) -> ExperimentConfig:
        """Validates ``data``; ``source`` names it in errors, ``locations`` maps key paths to ``file:line``."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"{source}: the experiment must be a mapping of keys to values, got {_show(data)}")
        try:
            return cls.model_validate(dict(data))
        except ValidationError as exc:
            raise ConfigError(_format(_problems(exc), source, locations or {})) from None

    def with_overrides(self, flat: Mapping[str, Any]) -> ExperimentConfig:
        """This config with dotted-path values substituted (a Tune trial's sample), validated again."""
        data = self.to_dict()
        locations: dict[KeyPath, str] = {}
        problems: list[str] = []
        for path, value in flat.items():
            value = _plain(value)
            try:
                locations[_assign(data, path, value)] = f"override {path}={_show(value)}"
            except ValueError as exc:
                problems.append(f"override {path}={_show(value)}: {exc}")
        if problems:
            raise ConfigError(problems)
        return ExperimentConfig.from_dict(data, source="<with_overrides>", locations=locations)

    def without_algorithms(self, names: Iterable[str]) -> ExperimentConfig:
        """This config without the named algorithms, nor sweeps of their arguments (a baseline trial)."""
        names = set(names)
        data = self.to_dict()
        data["algorithms"] = {k: v for k, v in data["algorithms"].items() if k not in names}
        if data["sweep"] is not None:
            space = data["sweep"]["space"]
            data["sweep"]["space"] = {p: d for p, d in space.items() if _swept_algorithm(p) not in names}
        return ExperimentConfig.from_dict(data, source="<without_algorithms>")

    def build_algorithms(self) -> list[Algorithm]:
        """Fresh ``Algorithm`` instances, in config order."""
        return [algorithm_class(name)(**args) for name, args in self.algorithms.items()]

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON/YAML data that ``from_dict`` turns back into an equal config."""
        return self.model_dump(mode="json")

    def flatten(self) -> dict[str, Any]:
        """Dotted key -> scalar, for logging params; algorithms show every argument, defaults included."""
        data = self.to_dict()
        data["algorithms"] = {name: _effective_args(name, args) for name, args in self.algorithms.items()}
        flat: dict[str, Any] = {}
        _flatten_into(flat, "", data)
        return flat

    def resolved_storage_path(self) -> str:
        """``storage_path`` made absolute against the current working directory (URIs are kept as they are)."""
        if "://" in self.storage_path:
            return self.storage_path
        return os.path.abspath(os.path.expanduser(self.storage_path))


def _swept_algorithm(path: str) -> str | None:
    parts = path.split(".")
    return parts[1] if parts[0] == "algorithms" and len(parts) > 1 else None


def _effective_args(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    defaults = {k: p.default for k, p in _parameters(algorithm_class(name)).items() if p.default is not p.empty}
    return {**defaults, **args}


def _flatten_into(flat: dict[str, Any], prefix: str, value: Any) -> None:
    if isinstance(value, dict) and value:
        for key, child in value.items():
            _flatten_into(flat, f"{prefix}.{key}" if prefix else str(key), child)
    elif isinstance(value, dict | list):
        flat[prefix] = json.dumps(value)
    else:
        flat[prefix] = value


def _plain(value: Any) -> Any:
    """NumPy scalars (as some Tune searchers sample) as Python ones, without importing NumPy."""
    return value.item() if type(value).__module__ == "numpy" and hasattr(value, "item") else value


def _leaf_paths(model: type[BaseModel] = ExperimentConfig, prefix: str = "") -> set[str]:
    """Every dotted path to a sweepable schema leaf (not sweep.* nor algorithms, which are checked apart)."""
    leaves: set[str] = set()
    for name, field in model.model_fields.items():
        path = f"{prefix}{name}"
        if path in ("sweep", "algorithms"):
            continue
        submodel = _submodel(field)
        leaves |= _leaf_paths(submodel, f"{path}.") if submodel else {path}
    return leaves


def _submodel(field: FieldInfo) -> type[BaseModel] | None:
    for candidate in (field.annotation, *get_args(field.annotation)):
        if isinstance(candidate, type) and issubclass(candidate, BaseModel):
            return candidate
    return None


def _field_at(path: KeyPath) -> FieldInfo | None:
    """The schema field at a key path, if the path runs through schema sections only."""
    model: type[BaseModel] | None = ExperimentConfig
    field = None
    for part in path:
        if model is None or not isinstance(part, str) or part not in model.model_fields:
            return None
        field = model.model_fields[part]
        model = _submodel(field)
    return field


def _valid_keys(path: KeyPath) -> list[str] | None:
    if not path:
        return list(ExperimentConfig.model_fields)
    field = _field_at(path)
    submodel = _submodel(field) if field else None
    return list(submodel.model_fields) if submodel else None


# ---- errors ----------------------------------------------------------------------------------------------

_TYPES = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "true or false",
    "bool_parsing": "true or false",
    "string_type": "a string",
    "model_type": "a mapping of keys to values",
    "model_attributes_type": "a mapping of keys to values",
    "dict_type": "a mapping of keys to values",
    "list_type": "a list",
}
_BOUNDS = {"gt": ">", "ge": ">=", "lt": "<", "le": "<="}
_HINTS = {
    "scaling.num_workers": "the number of Ray Train workers; 0 runs training in the trial's own process",
}


def _problems(error: ValidationError) -> list[Problem]:
    """Pydantic's errors as (key path, human message), expanding the problems our validators raised."""
    problems: list[Problem] = []
    for entry in error.errors(include_url=False):
        loc = tuple(entry["loc"])
        raised = entry.get("ctx", {}).get("error")
        if isinstance(raised, _Invalid):
            problems += [((*loc, *path), message) for path, message in raised.problems]
        else:
            problems.append((loc, _message(entry, loc)))
    return problems


def _message(entry: Mapping[str, Any], loc: KeyPath) -> str:
    kind, value, ctx = entry["type"], entry.get("input"), entry.get("ctx", {})
    if kind == "extra_forbidden":
        valid = _valid_keys(loc[:-1]) or []
        return f"unknown key {_suggest(loc[-1], valid, 'keys')}"
    if kind in _TYPES:
        message = f"must be {_TYPES[kind]}, got {_show(value)}"
    elif kind == "literal_error":
        message = f"must be {ctx.get('expected')}, got {_show(value)}"
    elif kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        bound = next(b for b in _BOUNDS if b in ctx)
        limit = ctx[bound]
        limit = int(limit) if isinstance(limit, float) and limit.is_integer() else limit
        message = f"must be {_BOUNDS[bound]} {limit}, got {_show(value)}"
    elif kind == "string_too_short":
        message = "must not be empty"
    elif kind == "missing":
        return "is required (add it)"
    elif kind == "value_error":
        message = str(ctx.get("error", entry["msg"]))
    else:
        message = entry["msg"]
    hint = _HINTS.get(_dotted(loc))
    field = _field_at(loc)
    if hint is None and field is not None:
        default = field.get_default(call_default_factory=False)
        if default is not PydanticUndefined and field.default_factory is None:
            hint = f"default: {_show(default)}"
    return f"{message} ({hint})" if hint and not message.endswith(")") else message


def _dotted(path: KeyPath) -> str:
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _format(problems: list[Problem], source: str, locations: Mapping[KeyPath, str]) -> list[str]:
    """``where: key.path: message`` lines; ``where`` is the longest located prefix of the path, or the source."""
    order = {path: index for index, path in enumerate(locations)}  # document order, then --set order
    located = []
    for path, message in problems:
        prefix = next((path[:n] for n in range(len(path), 0, -1) if path[:n] in locations), None)
        where = source if prefix is None else locations[prefix]
        key = _dotted(path)
        located.append((order.get(prefix, len(order)), f"{where}: {key}: {message}" if key else f"{where}: {message}"))
    return [line for _, line in sorted(located, key=lambda pair: pair[0])]


# ---- YAML and --set --------------------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``1e-3`` as a float (YAML 1.2), not as the string YAML 1.1 makes of it."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _parse_yaml(text: str, source: str) -> tuple[Any, dict[KeyPath, int]]:
    """The loaded document and the line of every mapping key and list item, by key path."""
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{source}:{mark.line + 1}" if mark else source
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(f"{where}: not valid YAML: {problem}") from None
    lines: dict[KeyPath, int] = {}
    duplicates: list[str] = []
    _record_lines(node, (), lines, duplicates, source)
    if duplicates:
        raise ConfigError(duplicates)
    return data, lines


def _record_lines(node: Any, path: KeyPath, lines: dict[KeyPath, int], duplicates: list[str], source: str) -> None:
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            child = (*path, key_node.value)
            line = key_node.start_mark.line + 1
            if child in lines:
                first = lines[child]
                duplicates.append(f"{source}:{line}: {_dotted(child)}: duplicate key (first set on line {first})")
            lines.setdefault(child, line)
            _record_lines(value_node, child, lines, duplicates, source)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            lines[(*path, index)] = item.start_mark.line + 1
            _record_lines(item, (*path, index), lines, duplicates, source)


def _assign(data: dict[str, Any], dotted: str, value: Any) -> KeyPath:
    """Sets ``data[a][b][c] = value`` for ``a.b.c``, creating mappings on the way; returns the key path.

    Keys under ``sweep.space`` are dotted config paths themselves, so there the rest of the path is one key
    (or one key and a domain kind: ``sweep.space.optimizer.lr.choice``).
    """
    parts = dotted.split(".")
    if not all(parts):
        raise ValueError(f"{dotted!r} is not a dotted key path such as optimizer.lr")
    keys: list[str] = []
    for index, part in enumerate(parts):
        if tuple(keys) == _SPACE:
            rest = parts[index:]
            tail = [rest.pop()] if len(rest) > 1 and rest[-1] in DOMAIN_KINDS else []
            keys += [".".join(rest), *tail]
            break
        keys.append(part)
    node = data
    for depth, key in enumerate(keys[:-1]):
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        elif not isinstance(child, dict):
            raise ValueError(f"{'.'.join(keys[: depth + 1])} is {_show(child)}, not a mapping with keys")
        node = child
    node[keys[-1]] = value
    return tuple(keys)


def _apply_override(data: dict[str, Any], item: str, locations: dict[KeyPath, str]) -> None:
    """Applies one ``key.path=value`` (value read as YAML) and makes ``--set`` the source of that key."""
    label = f"--set {item}"
    key, equals, text = item.partition("=")
    if not equals or not key.strip():
        raise ValueError(f"{label}: expected key.path=value, e.g. --set optimizer.lr=0.1")
    try:
        value = yaml.load(text, Loader=_Loader)  # a SafeLoader subclass: safe
    except yaml.YAMLError as exc:
        raise ValueError(f"{label}: the value is not valid YAML ({getattr(exc, 'problem', None) or exc})") from None
    try:
        path = _assign(data, key.strip(), value)
    except ValueError as exc:
        raise ValueError(f"{label}: {exc}") from None
    for located in [p for p in locations if p[: len(path)] == path]:
        del locations[located]
    for depth in range(1, len(path) + 1):  # mappings this override created are its doing too
        locations.setdefault(path[:depth], label)


def load_experiment(path: str | os.PathLike[str], overrides: Sequence[str] = ()) -> ExperimentConfig:
    """Reads an experiment YAML, applies ``--set key.path=value`` overrides in order, and validates it."""
    source = os.fspath(path)
    try:
        text = Path(source).read_text()
    except OSError as exc:
        raise ConfigError(f"{source}: cannot read the experiment file ({exc.strerror or exc})") from None
    data, lines = _parse_yaml(text, source)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError(f"{source}:1: the experiment must be a mapping of keys to values, got {_show(data)}")
    locations: dict[KeyPath, str] = {p: f"{source}:{line}" for p, line in lines.items()}
    problems = []
    for item in overrides:
        try:
            _apply_override(data, item, locations)
        except ValueError as exc:
            problems.append(str(exc))
    if problems:
        raise ConfigError(problems)
    return ExperimentConfig.from_dict(data, source=source, locations=locations)


__all__ = [
    "ALGORITHMS",
    "DOMAIN_KINDS",
    "CheckpointConfig",
    "ConfigError",
    "DataConfig",
    "EvalConfig",
    "ExperimentConfig",
    "FailureConfig",
    "ModelConfig",
    "OptimizerConfig",
    "ScalingConfig",
    "ScheduleConfig",
    "SearchDomain",
    "SweepConfig",
    "TrackingConfig",
    "TrialSchedulerConfig",
    "algorithm_class",
    "load_experiment",
]
