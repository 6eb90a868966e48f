"""Experiment configs: real YAML files in, frozen configs or one error naming file:line, key path and fix out."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from raycomp.algorithms import SelectiveBackprop
from raycomp.config import ConfigError, ExperimentConfig, load_experiment
from raycomp.core.time import Time, TimeUnit

FULL = """\
name: sb-cifar
seed: 7
model:
  name: resnet20
  num_classes: 10
data:
  name: cifar10
  root: /data/cifar
  batch_size: 64
  num_workers: 2
optimizer:
  name: sgd
  lr: 1e-1
  nesterov: true
schedule:
  name: cosine
  warmup_fraction: 0.1
max_duration: 20ep
eval:
  interval: 500ba
precision: amp_bf16
grad_accum: 2
algorithms:
  selective_backprop:
    start: 0.3
    keep: 0.5
scaling:
  num_workers: 2
  use_gpu: true
checkpoint:
  interval: 2ep
  num_to_keep: null
failure:
  max_failures: -1
storage_path: runs/sb
tracking:
  tracking_uri: file:./mlruns
sweep:
  space:
    algorithms.selective_backprop.keep: {grid: [0.3, 0.5, 0.7]}
    optimizer.lr: {loguniform: [1e-3, 1e-1]}
    data.batch_size: {randint: [32, 129]}
  num_samples: 2
  scheduler: {name: asha, grace_period: 2, max_t: 20}
  max_concurrent_trials: 4
"""


def write(tmp_path: Path, text: str, name: str = "exp.yaml") -> str:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


def problems(path: str, *overrides: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_experiment(path, overrides=list(overrides))
    assert str(info.value) == "\n".join(info.value.problems)
    return info.value.problems


def only_problem(path: str, *overrides: str) -> str:
    found = problems(path, *overrides)
    assert len(found) == 1, found
    return found[0]


# ---- valid configs ----------------------------------------------------------------------------------------


def test_full_yaml(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    assert (config.name, config.seed, config.model.name, config.data.root) == ("sb-cifar", 7, "resnet20", "/data/cifar")
    assert config.optimizer.lr == 0.1  # YAML 1.1 would have read 1e-1 as a string
    assert config.max_duration == Time(20, TimeUnit.EPOCH)
    assert config.eval.interval == Time(500, TimeUnit.BATCH)
    assert (config.precision, config.grad_accum, config.failure.max_failures) == ("amp_bf16", 2, -1)
    assert config.checkpoint.num_to_keep is None
    assert config.scaling.gpus_per_worker == 0 and config.scaling.worker_gpus == 1  # use_gpu means one each
    assert config.scaling.resources_per_worker == {"CPU": 1.0, "GPU": 1.0}
    assert config.sweep.scheduler.grace_period == 2 and config.sweep.swept_algorithms() == ["selective_backprop"]
    assert config.resolved_storage_path() == str(Path.cwd() / "runs" / "sb")
    (algorithm,) = config.build_algorithms()
    assert isinstance(algorithm, SelectiveBackprop)
    assert (algorithm.start, algorithm.keep, algorithm.end) == (0.3, 0.5, 0.9)
    assert config.build_algorithms()[0] is not algorithm
    with pytest.raises(ValueError, match="frozen"):
        config.seed = 3


def test_defaults_from_an_empty_file_and_an_empty_dict(tmp_path):
    config = load_experiment(write(tmp_path, ""))
    assert config == ExperimentConfig.from_dict({})
    assert (config.name, config.seed, config.model.name, config.data.name) == ("raycomp", 0, "cnn", "synthetic")
    assert (config.data.batch_size, config.data.eval_batch_size, config.data.num_workers) == (128, 500, 0)
    assert (config.optimizer.name, config.optimizer.lr, config.optimizer.momentum) == ("sgd", 0.05, 0.9)
    assert config.schedule.name == "onecycle" and config.max_duration == Time(10, TimeUnit.EPOCH)
    assert config.precision == "fp32" and config.algorithms == {} and config.sweep is None
    assert (config.scaling.num_workers, config.scaling.worker_gpus) == (1, 0)
    assert config.checkpoint.num_to_keep == 2 and config.tracking.enabled and config.storage_path == "./runs"
    assert config.build_algorithms() == []


def test_algorithm_with_null_arguments_takes_the_defaults(tmp_path):
    config = load_experiment(write(tmp_path, "algorithms:\n  selective_backprop:\n"))
    assert config.algorithms == {"selective_backprop": {}}
    assert config.build_algorithms()[0].keep == 0.5


# ---- one error per mistake, at file:line and key path -----------------------------------------------------


def test_unknown_top_level_key_suggests_the_right_one(tmp_path):
    path = write(tmp_path, "name: x\nseed: 1\nmodle:\n  name: cnn\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:3: modle: unknown key (did you mean 'model'?; valid keys: name, seed, model, ")


def test_unknown_nested_key(tmp_path):
    path = write(tmp_path, "optimizer:\n  lr: 0.1\n  momentun: 0.9\n")
    assert only_problem(path) == (
        f"{path}:3: optimizer.momentun: unknown key (did you mean 'momentum'?; "
        "valid keys: name, lr, momentum, weight_decay, nesterov)"
    )


def test_wrong_type(tmp_path):
    path = write(tmp_path, "name: x\nseed: abc\n")
    assert only_problem(path) == f"{path}:2: seed: must be an integer, got 'abc' (default: 0)"


def test_bool_is_not_taken_for_a_number(tmp_path):
    path = write(tmp_path, "grad_accum: true\n")
    assert only_problem(path) == f"{path}:1: grad_accum: must be an integer, got true (default: 1)"


@pytest.mark.parametrize(
    ("args", "line", "key", "message"),
    [
        ("keep: 1.5", 4, "keep", "must be in (0, 1], got 1.5 (default: 0.5)"),
        ("scale_factor: 1.5", 4, "scale_factor", "must be in (0, 1], got 1.5 (default: 0.5)"),
        ("interrupt: -1", 4, "interrupt", "must be an integer >= 0, got -1 (default: 2)"),
        ("interrupt: 1.5", 4, "interrupt", "must be an integer, got 1.5 (default: 2)"),
        (
            "{start: 0.9, end: 0.5}",
            3,
            "",
            "SelectiveBackprop needs 0 <= start < end <= 1, got start=0.9, end=0.5 (defaults: start=0.5, end=0.9)",
        ),
    ],
)
def test_algorithm_arguments_are_checked_by_its_constructor(tmp_path, args, line, key, message):
    body = f"  selective_backprop: {args}" if args.startswith("{") else f"  selective_backprop:\n    {args}"
    path = write(tmp_path, f"seed: 1\nalgorithms:\n{body}\n")
    dotted = "algorithms.selective_backprop" + (f".{key}" if key else "")
    assert only_problem(path) == f"{path}:{line}: {dotted}: {message}"


def test_unknown_algorithm_argument_lists_the_valid_ones(tmp_path):
    path = write(tmp_path, "algorithms:\n  selective_backprop:\n    keeep: 0.3\n")
    assert only_problem(path) == (
        f"{path}:3: algorithms.selective_backprop.keeep: unknown argument of SelectiveBackprop "
        "(did you mean 'keep'?; valid arguments: start, end, keep, scale_factor, interrupt)"
    )


def test_unknown_algorithm(tmp_path):
    path = write(tmp_path, "algorithms:\n  selective_backprob: {}\n")
    assert only_problem(path) == (
        f"{path}:2: algorithms.selective_backprob: unknown algorithm "
        "(did you mean 'selective_backprop'?; valid algorithms: selective_backprop, label_smoothing, mixup, cutmix, "
        "progressive_resizing, channels_last, blurpool, layer_freezing, gradient_clipping, ema)"
    )


def test_negative_workers(tmp_path):
    path = write(tmp_path, "scaling:\n  num_workers: -1\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: scaling.num_workers: must be >= 0, got -1 (the number of Ray Train workers")


def test_unknown_model_lists_valid_names(tmp_path):
    path = write(tmp_path, "model:\n  name: resnet18\n")
    assert only_problem(path) == (
        f"{path}:2: model.name: unknown model 'resnet18' "
        "(did you mean 'resnet56'?; valid models: cnn, cnn_plain, resnet20, resnet56)"
    )


def test_cifar10_needs_root(tmp_path):
    path = write(tmp_path, "seed: 0\ndata:\n  name: cifar10\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: data.root: required when data.name is 'cifar10'")
    assert "cifar-10-batches-py" in message


@pytest.mark.parametrize("value", ["10 epochs", "0.5dur", "100sp", "0ep", "10"])
def test_bad_time_strings(tmp_path, value):
    path = write(tmp_path, f"name: x\nmax_duration: {value}\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:2: max_duration: must be ")
    assert "'10ep' or '500ba'" in message or "more than zero" in message


def test_gpus_without_use_gpu(tmp_path):
    path = write(tmp_path, "scaling:\n  gpus_per_worker: 1\n")
    assert "set scaling.use_gpu: true" in only_problem(path)


def test_several_problems_are_reported_together_in_file_order(tmp_path):
    path = write(
        tmp_path,
        """\
        modle: {}
        seed: abc
        optimizer:
          lr: -1
        algorithms:
          selective_backprop: {keep: 1.5, scale_factor: 2}
        scaling:
          num_workers: -1
        """,
    )
    found = problems(path)
    assert [line.split(": ")[0:2] for line in found] == [
        [f"{path}:1", "modle"],
        [f"{path}:2", "seed"],
        [f"{path}:4", "optimizer.lr"],
        [f"{path}:6", "algorithms.selective_backprop.keep"],
        [f"{path}:6", "algorithms.selective_backprop.scale_factor"],
        [f"{path}:8", "scaling.num_workers"],
    ]


def test_invalid_yaml_and_duplicate_keys(tmp_path):
    path = write(tmp_path, "seed: 1\nmodel: [cnn\n", "a.yaml")
    assert only_problem(path).startswith(f"{path}:3: not valid YAML")
    path = write(tmp_path, "seed: 1\nseed: 2\n", "b.yaml")
    assert only_problem(path) == f"{path}:2: seed: duplicate key (first set on line 1)"
    assert only_problem(write(tmp_path, "- 1\n", "c.yaml")).endswith("must be a mapping of keys to values, got [1]")


# ---- sweeps -----------------------------------------------------------------------------------------------

SWEEP_BASE = """\
algorithms:
  selective_backprop: {}
sweep:
  space:
"""


def test_sweep_bounds_must_be_ordered(tmp_path):
    path = write(tmp_path, SWEEP_BASE + "    optimizer.lr: {uniform: [0.9, 0.1]}\n")
    assert (
        only_problem(path)
        == f"{path}:5: sweep.space.optimizer.lr.uniform: needs low < high, got [0.9, 0.1] (swap them?)"
    )


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("{loguniform: [0, 1]}", "loguniform: needs low > 0"),
        ("{choice: []}", "choice: must be a non-empty list, got []"),
        ("{randint: [1.5, 4]}", "randint: must be two integers"),
        ("{grid: [1], choice: [2]}", "lr: must be exactly one of {grid: [...]}"),
        ("0.1", "lr: must be exactly one of"),
    ],
)
def test_bad_sweep_domains(tmp_path, domain, expected):
    path = write(tmp_path, SWEEP_BASE + f"    optimizer.lr: {domain}\n")
    message = only_problem(path)
    assert message.startswith(f"{path}:5: sweep.space.optimizer.") and expected in message


def test_every_grid_value_must_make_a_valid_config(tmp_path):
    path = write(tmp_path, SWEEP_BASE + "    algorithms.selective_backprop.keep:\n      grid: [0.5, 1.5]\n")
    assert only_problem(path) == (
        f"{path}:6: sweep.space.algorithms.selective_backprop.keep.grid[1]: 1.5 is invalid: "
        "must be in (0, 1], got 1.5 (default: 0.5)"
    )


def test_randint_high_is_exclusive(tmp_path):
    assert load_experiment(write(tmp_path, SWEEP_BASE + "    data.batch_size: {randint: [1, 2]}\n", "ok.yaml"))
    path = write(tmp_path, SWEEP_BASE + "    data.batch_size: {randint: [0, 9]}\n")
    assert "randint[0]: 0 is invalid: must be >= 1" in only_problem(path)


def test_swept_paths_must_exist(tmp_path):
    path = write(
        tmp_path,
        SWEEP_BASE
        + """\
            optimizer.lrr: {choice: [0.1]}
            algorithms.selective_backprop.kep: {choice: [0.1]}
            algorithms.label_smoothng.alpha: {choice: [0.1]}
            sweep.num_samples: {choice: [1]}
        """,
    )
    found = problems(path)
    assert found[0] == (
        f"{path}:5: sweep.space.optimizer.lrr: not a config key "
        "(did you mean 'optimizer.lr'?; sweep a leaf such as optimizer.lr or algorithms.<name>.<argument>)"
    )
    assert found[1].startswith(f"{path}:6: sweep.space.algorithms.selective_backprop.kep: 'kep' is not an argument")
    assert found[2].startswith(f"{path}:7: sweep.space.algorithms.label_smoothng.alpha: unknown algorithm")
    assert found[3].startswith(f"{path}:8: sweep.space.sweep.num_samples: not a config key")


def test_swept_algorithm_must_be_configured(tmp_path):
    path = write(tmp_path, "sweep:\n  space:\n    algorithms.selective_backprop.keep: {grid: [0.3]}\n")
    assert only_problem(path) == (
        f"{path}:3: sweep.space.algorithms.selective_backprop.keep: algorithm 'selective_backprop' is swept but not "
        "configured (add `selective_backprop: {}` under algorithms)"
    )


def test_sweep_options(tmp_path):
    path = write(tmp_path, SWEEP_BASE + "    optimizer.lr: {grid: [0.1]}\n  scheduler: {name: fifo, grace_period: 2}\n")
    assert only_problem(path).startswith(f"{path}:6: sweep.scheduler.grace_period: is an ASHA option")
    path = write(tmp_path, SWEEP_BASE + "    optimizer.lr: {grid: [0.1]}\n  search_alg: optuna\n")
    assert only_problem(path).startswith(f"{path}:5: sweep.space.optimizer.lr.grid: optuna cannot search a grid")


# ---- --set overrides ----------------------------------------------------------------------------------------


def test_set_overrides(tmp_path):
    path = write(tmp_path, FULL)
    config = load_experiment(
        path,
        overrides=[
            "algorithms.selective_backprop.keep=0.3",
            "scaling.num_workers=0",
            "sweep=null",
            "optimizer.lr=2e-2",
            "name=renamed",
        ],
    )
    assert config.algorithms["selective_backprop"] == {"start": 0.3, "keep": 0.3}
    assert (config.scaling.num_workers, config.sweep, config.optimizer.lr, config.name) == (0, None, 0.02, "renamed")


def test_set_creates_nested_values(tmp_path):
    path = write(tmp_path, "seed: 1\n")
    config = load_experiment(
        path,
        overrides=[
            "algorithms.selective_backprop.end=0.8",
            "sweep.num_samples=3",
            "sweep.space.algorithms.selective_backprop.keep={grid: [0.2, 0.4]}",
            "sweep.space.optimizer.lr.choice=[0.1, 0.2]",
        ],
    )
    assert config.algorithms == {"selective_backprop": {"end": 0.8}}
    assert config.sweep.num_samples == 3
    assert config.sweep.space["algorithms.selective_backprop.keep"].values == [0.2, 0.4]
    assert config.sweep.space["optimizer.lr"].kind == "choice"


def test_bad_set_names_the_override(tmp_path):
    path = write(tmp_path, FULL)
    assert only_problem(path, "algorithms.selective_backprop.keep=1.5") == (
        "--set algorithms.selective_backprop.keep=1.5: algorithms.selective_backprop.keep: "
        "must be in (0, 1], got 1.5 (default: 0.5)"
    )
    found = problems(path, "scaling.num_workers=-1", "seed=x")
    assert found[0].startswith("--set scaling.num_workers=-1: scaling.num_workers: must be >= 0")
    assert found[1].startswith("--set seed=x: seed: must be an integer, got 'x'")
    assert only_problem(path, "seed") == "--set seed: expected key.path=value, e.g. --set optimizer.lr=0.1"
    assert only_problem(path, "seed.x=1") == "--set seed.x=1: seed is 7, not a mapping with keys"
    assert only_problem(path, "modle.name=cnn").startswith("--set modle.name=cnn: modle: unknown key (did you mean")


# ---- changing configs ----------------------------------------------------------------------------------------


def test_with_overrides_revalidates(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    trial = config.with_overrides({"algorithms.selective_backprop.keep": 0.7, "optimizer.lr": 0.01})
    assert trial.algorithms["selective_backprop"]["keep"] == 0.7 and trial.optimizer.lr == 0.01
    assert config.algorithms["selective_backprop"]["keep"] == 0.5  # the original is untouched
    with pytest.raises(ConfigError) as info:
        config.with_overrides({"optimizer.lr": -1.0})
    assert info.value.problems == ["override optimizer.lr=-1.0: optimizer.lr: must be > 0, got -1.0 (default: 0.05)"]


def test_without_algorithms_drops_them_and_their_sweeps(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    baseline = config.without_algorithms(config.sweep.swept_algorithms())
    assert baseline.algorithms == {} and baseline.build_algorithms() == []
    assert list(baseline.sweep.space) == ["optimizer.lr", "data.batch_size"]
    assert baseline.optimizer == config.optimizer


def test_to_dict_round_trips(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    data = config.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["max_duration"] == "20ep" and data["sweep"]["space"]["optimizer.lr"] == {"loguniform": [0.001, 0.1]}
    assert ExperimentConfig.from_dict(data) == config
    assert load_experiment(write(tmp_path, yaml.safe_dump(data), "dumped.yaml")) == config
    assert pickle.loads(pickle.dumps(config)) == config


def test_flatten_gives_scalars_with_algorithm_defaults(tmp_path):
    flat = load_experiment(write(tmp_path, FULL)).flatten()
    assert flat["optimizer.lr"] == 0.1 and flat["max_duration"] == "20ep" and flat["checkpoint.num_to_keep"] is None
    assert flat["algorithms.selective_backprop.keep"] == 0.5
    assert flat["algorithms.selective_backprop.end"] == 0.9  # a default, logged too
    assert flat["sweep.space.optimizer.lr.loguniform"] == "[0.001, 0.1]"
    assert all(isinstance(v, str | int | float | bool | type(None)) for v in flat.values())


def test_config_error_pickles_with_its_problems():
    error = pickle.loads(pickle.dumps(ConfigError(["a: x: bad", "a: y: worse"])))
    assert isinstance(error, ValueError) and error.problems == ["a: x: bad", "a: y: worse"]
    assert str(error) == "a: x: bad\na: y: worse"


def test_config_imports_without_ray_or_mlflow():
    check = (
        "import sys; sys.modules['ray'] = None; sys.modules['mlflow'] = None\n"
        "from raycomp.config import ExperimentConfig\n"
        "ExperimentConfig.from_dict({'algorithms': {'selective_backprop': {}}})"
    )
    result = subprocess.run([sys.executable, "-c", check], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_null_is_accepted_where_the_algorithm_allows_none(tmp_path):
    path = write(tmp_path, "algorithms:\n  ema:\n    half_life: null\n    smoothing: 0.99\n")
    assert load_experiment(path).algorithms["ema"] == {"half_life": None, "smoothing": 0.99}
    bad = write(tmp_path, "algorithms:\n  ema:\n    ema_start: null\n")
    assert "must be a string, got null" in only_problem(bad)


def test_an_algorithm_without_arguments_says_so(tmp_path):
    path = write(tmp_path, "algorithms:\n  channels_last:\n    foo: 1\n")
    assert only_problem(path).endswith("unknown argument of ChannelsLast (it takes no arguments)")
