"""Reading configs: YAML with line numbers, duplicate keys refused, and --set overrides."""

from config_files import FULL, only_problem, problems, write

from raycomp.config import load_experiment


def test_invalid_yaml_and_duplicate_keys(tmp_path):
    path = write(tmp_path, "seed: 1\nmodel: [cnn\n", "a.yaml")
    assert only_problem(path).startswith(f"{path}:3: not valid YAML")
    path = write(tmp_path, "seed: 1\nseed: 2\n", "b.yaml")
    assert only_problem(path) == f"{path}:2: seed: duplicate key (first set on line 1)"
    assert only_problem(write(tmp_path, "- 1\n", "c.yaml")).endswith("must be a mapping of keys to values, got [1]")


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
    assert config.algorithms["selective_backprop"].given() == {"start": 0.3, "keep": 0.3}
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
    assert config.to_dict()["algorithms"] == {"selective_backprop": {"end": 0.8}}
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
