"""ExperimentConfig: valid files build frozen configs; algorithm arguments are checked at their keys; changes."""

import json
import pickle
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from config_files import FULL, only_problem, write

from raycomp.algorithms import SelectiveBackprop
from raycomp.algorithms.registry import ALGORITHMS
from raycomp.base import keys
from raycomp.base.layout import RunLayout
from raycomp.config import ConfigError, ExperimentConfig, load_experiment
from raycomp.config.recipe import build_algorithms
from raycomp.core.time import Time, TimeUnit

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
    assert config.layout.storage == str(Path.cwd() / "runs" / "sb")
    (algorithm,) = build_algorithms(config)
    assert isinstance(algorithm, SelectiveBackprop)
    assert (algorithm.start, algorithm.keep, algorithm.end) == (0.3, 0.5, 0.9)
    assert build_algorithms(config)[0] is not algorithm
    with pytest.raises(ValueError, match="frozen"):
        config.seed = 3


def test_defaults_from_a_one_key_file_and_an_empty_dict(tmp_path):
    config = load_experiment(write(tmp_path, "seed: 0\n"))  # an empty file is refused (test_l8_...)
    assert config == ExperimentConfig.from_dict({})
    assert (config.name, config.seed, config.model.name, config.data.name) == ("raycomp", 0, "cnn", "synthetic")
    assert (config.data.batch_size, config.data.eval_batch_size, config.data.num_workers) == (128, 500, 0)
    assert (config.optimizer.name, config.optimizer.lr, config.optimizer.momentum) == ("sgd", 0.05, 0.9)
    assert config.schedule.name == "onecycle" and config.max_duration == Time(10, TimeUnit.EPOCH)
    assert config.precision == "fp32" and config.algorithms == {} and config.sweep is None
    assert (config.scaling.num_workers, config.scaling.worker_gpus) == (1, 0)
    assert config.checkpoint.num_to_keep == 2 and config.tracking.enabled and config.storage_path == "./runs"
    assert build_algorithms(config) == []


def test_algorithm_with_null_arguments_takes_the_defaults(tmp_path):
    config = load_experiment(write(tmp_path, "algorithms:\n  selective_backprop:\n"))
    assert config.algorithms["selective_backprop"].given() == {}
    assert build_algorithms(config)[0].keep == 0.5


@pytest.mark.parametrize(
    ("args", "line", "key", "message"),
    [
        ("keep: 1.5", 4, "keep", "must be in (0, 1], got 1.5 (default: 0.5)"),
        ("keep: true", 4, "keep", "must be a number, got true (default: 0.5)"),
        ("keep: '0.5'", 4, "keep", "must be a number, got '0.5' (default: 0.5)"),
        ("start: -0.1", 4, "start", "must be in [0, 1], got -0.1 (default: 0.5)"),
        ("scale_factor: 1.5", 4, "scale_factor", "must be in (0, 1], got 1.5 (default: 0.5)"),
        ("interrupt: -1", 4, "interrupt", "must be >= 0, got -1 (default: 2)"),
        ("interrupt: 1.5", 4, "interrupt", "must be an integer, got 1.5 (default: 2)"),
        (
            "{start: 0.9, end: 0.5}",
            3,
            "",
            "SelectiveBackprop needs 0 <= start < end <= 1, got start=0.9, end=0.5",
        ),
    ],
)
def test_algorithm_arguments_are_checked_at_their_keys(tmp_path, args, line, key, message):
    """Each argument against its declaration in the signature; a rule across arguments at the algorithm's key."""
    body = f"  selective_backprop: {args}" if args.startswith("{") else f"  selective_backprop:\n    {args}"
    path = write(tmp_path, f"seed: 1\nalgorithms:\n{body}\n")
    dotted = "algorithms.selective_backprop" + (f".{key}" if key else "")
    assert only_problem(path) == f"{path}:{line}: {dotted}: {message}"


def test_a_rule_across_arguments_waits_until_each_argument_is_valid(tmp_path):
    path = write(tmp_path, "algorithms:\n  selective_backprop: {start: 0.9, end: 1.5}\n")
    assert (
        only_problem(path) == f"{path}:2: algorithms.selective_backprop.end: must be in [0, 1], got 1.5 (default: 0.9)"
    )


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
        f"(did you mean 'selective_backprop'?; valid algorithms: {', '.join(ALGORITHMS)})"
    )
    assert list(ALGORITHMS)[:2] == ["selective_backprop", "label_smoothing"]


# ---- changing configs ----------------------------------------------------------------------------------------


def test_with_overrides_revalidates(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    trial = config.with_overrides({"algorithms.selective_backprop.keep": 0.7, "optimizer.lr": 0.01})
    assert trial.algorithms["selective_backprop"].keep == 0.7 and trial.optimizer.lr == 0.01
    assert config.algorithms["selective_backprop"].keep == 0.5  # the original is untouched
    with pytest.raises(ConfigError) as info:
        config.with_overrides({"optimizer.lr": -1.0})
    assert info.value.problems == ["override optimizer.lr=-1.0: optimizer.lr: must be > 0, got -1.0 (default: 0.05)"]


def test_without_algorithms_drops_them_and_their_sweeps(tmp_path):
    config = load_experiment(write(tmp_path, FULL))
    baseline = config.without_algorithms(config.sweep.swept_algorithms())
    assert baseline.algorithms == {} and build_algorithms(baseline) == []
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


@pytest.mark.spawns
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
    assert load_experiment(path).algorithms["ema"].given() == {"half_life": None, "smoothing": 0.99}
    bad = write(tmp_path, "algorithms:\n  ema:\n    ema_start: null\n")
    assert "must be a string, got null" in only_problem(bad)


def test_an_algorithm_without_arguments_says_so(tmp_path):
    path = write(tmp_path, "algorithms:\n  channels_last:\n    foo: 1\n")
    assert only_problem(path).endswith("unknown argument of ChannelsLast (it takes no arguments)")


def test_objective_comes_from_the_sweep_or_the_default(tmp_path):
    assert ExperimentConfig.from_dict({}).objective == (keys.DEFAULT_METRIC, keys.DEFAULT_MODE)
    sweep = {"metric": "eval/loss", "mode": "min", "space": {"optimizer.lr": {"grid": [0.1]}}}
    assert ExperimentConfig.from_dict({"sweep": sweep}).objective == ("eval/loss", "min")


def test_layout_and_storage_path(tmp_path):
    config = ExperimentConfig.from_dict({"name": "sb", "storage_path": "runs/x"})
    assert config.layout == RunLayout.of("runs/x", "sb") and config.layout.run_dir == str(Path.cwd() / "runs/x/sb")
    assert config.layout.storage == str(Path.cwd() / "runs" / "x")
    assert ExperimentConfig.from_dict({"storage_path": "s3://bucket/runs"}).layout.storage == "s3://bucket/runs"


def test_a_trials_values_are_a_typed_update_of_the_sections_they_touch(tmp_path):
    """Issue 56 item 3: a trial's values went config -> dict -> config, every section validated again. Now only the
    sections they touch are rebuilt and validated; the others are the same objects, and the rules across sections
    still run."""
    config = load_experiment(write(tmp_path, FULL)).with_overrides({"sweep": None})
    trial = config.with_overrides({"optimizer.lr": 0.2, "algorithms.selective_backprop.keep": 0.3, "seed": 9})
    assert trial.optimizer.lr == 0.2 and trial.algorithms["selective_backprop"].keep == 0.3 and trial.seed == 9
    assert trial.model is config.model and trial.data is config.data and trial.schedule is config.schedule
    assert trial.optimizer.nesterov and trial.algorithms["selective_backprop"].start == 0.3  # the rest kept
    with pytest.raises(ConfigError, match=r"override algorithms\.selective_backprop\.keep=2\.0: .*keep"):
        config.with_overrides({"algorithms.selective_backprop.keep": 2.0})
    with pytest.raises(ConfigError, match=r"scaling\.num_workers"):
        config.with_overrides({"scaling.num_workers": -1})
    baseline = config.without_algorithms(["selective_backprop"])
    assert baseline.algorithms == {} and baseline.optimizer is config.optimizer
