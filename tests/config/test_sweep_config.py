"""The sweep section: domains checked once as whole configs, and the config each trial trains."""

import pytest
from config_files import SWEEP_BASE, only_problem, problems, write

from raycomp.base import keys
from raycomp.config import ConfigError, ExperimentConfig, load_experiment, trial_config
from raycomp.config.arm import Arm

# ---- sweeps -----------------------------------------------------------------------------------------------


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


# ---- the config one trial trains ---------------------------------------------------------------------------

OVERLAPPING = """\
algorithms:
  selective_backprop: {start: 0.1, end: 0.9}
sweep:
  space:
    algorithms.selective_backprop.start: {uniform: [0, 0.6]}
    algorithms.selective_backprop.end: {uniform: [0.4, 1]}
"""
SB = "algorithms.selective_backprop"


def test_a_trial_is_not_held_to_the_other_trials_bounds(tmp_path):
    """start=0.6 (a bound) with this trial's end=0.55 is invalid, but no trial trains it: only this one counts."""
    base = load_experiment(write(tmp_path, OVERLAPPING))
    arm = Arm(keys.METHOD, overrides={f"{SB}.start": 0.5, f"{SB}.end": 0.55})
    trial = trial_config(base, arm)
    assert trial.sweep is None and trial.algorithms["selective_backprop"].given() == {"start": 0.5, "end": 0.55}
    assert base.sweep is not None  # the driver's config keeps its sweep
    with pytest.raises(ConfigError, match="start < end"):  # a trial's own values are still checked
        trial_config(base, Arm(keys.METHOD, overrides={f"{SB}.start": 0.5, f"{SB}.end": 0.45}))


def test_a_fifo_sweep_trains_its_trials(tmp_path):
    base = load_experiment(write(tmp_path, SWEEP_BASE + "    optimizer.lr: {grid: [0.1, 0.2]}\n  scheduler: fifo\n"))
    assert base.sweep.scheduler.name == "fifo"
    trial = trial_config(base, Arm(keys.METHOD, overrides={"optimizer.lr": 0.2}))
    assert trial.optimizer.lr == 0.2 and trial.sweep is None
    assert trial_config(base, Arm(keys.BASELINE, overrides={})).sweep is None
    assert ExperimentConfig.from_dict(base.to_dict()) == base  # and a fifo sweep survives a round trip


def test_an_asha_sweep_trains_its_trials(tmp_path):
    path = write(tmp_path, SWEEP_BASE + "    optimizer.lr: {grid: [0.1]}\n  scheduler: {name: asha, grace_period: 2}\n")
    base = load_experiment(path)
    trial = trial_config(base, Arm(keys.METHOD, overrides={"optimizer.lr": 0.1}))
    assert trial.optimizer.lr == 0.1 and trial.sweep is None
    assert ExperimentConfig.from_dict(base.to_dict()) == base


def test_the_baseline_drops_the_swept_algorithms_and_ignores_overrides(tmp_path):
    text = "algorithms:\n  selective_backprop: {}\n  label_smoothing: {}\nsweep:\n  space:\n"
    base = load_experiment(write(tmp_path, text + f"    {SB}.keep: {{grid: [0.3, 0.7]}}\n"))
    baseline = trial_config(base, Arm(keys.BASELINE, overrides={f"{SB}.keep": None}))
    assert baseline.to_dict()["algorithms"] == {"label_smoothing": {}} and baseline.sweep is None
    method = trial_config(base, Arm(keys.METHOD, overrides={f"{SB}.keep": 0.7}))
    assert method.to_dict()["algorithms"] == {"selective_backprop": {"keep": 0.7}, "label_smoothing": {}}


def test_without_a_swept_algorithm_the_baseline_drops_them_all(tmp_path):
    base = load_experiment(write(tmp_path, SWEEP_BASE + "    optimizer.lr: {grid: [0.1, 0.2]}\n"))
    assert trial_config(base, Arm(keys.BASELINE, overrides={})).algorithms == {}
    with pytest.raises(ValueError, match="variant"):
        trial_config(base, Arm("other", overrides={}))


# ---- verdicts that resolve (issue 23) ----------------------------------------------------------------------


ADAPTIVE = SWEEP_BASE + "    algorithms.selective_backprop.keep: {uniform: [0.25, 0.75]}\n"


def test_budgets_above_one_train_longer_and_max_repeats_makes_the_sweep_adaptive(tmp_path):
    path = write(tmp_path, ADAPTIVE, "ok.yaml")
    sets = ("sweep.baseline_budgets=[0.5,1.0,1.5]", "sweep.repeats=3", "sweep.max_repeats=8", "max_duration=4ep")
    config = load_experiment(path, overrides=list(sets))
    assert config.sweep.frontier_budgets == [0.5, 1.5]
    assert config.sweep.adaptive and (config.sweep.equivalence, config.sweep.max_sweep_s) == (0.05, None)
    assert config.sweep.timing == "steps"
    arm = Arm(keys.FRONTIER, overrides={}, budget=1.5)
    assert str(trial_config(config, arm).max_duration) == "6ep"
    assert not load_experiment(path, overrides=["sweep.repeats=3", "sweep.max_repeats=3"]).sweep.adaptive


@pytest.mark.parametrize(
    ("override", "expected"),
    [
        ("sweep.max_repeats=2", "sweep.max_repeats: must be at least repeats (3), got 2"),
        ("sweep.baseline_budgets=[0.5,5.0]", "sweep.baseline_budgets[1]: must be in (0, 4], got 5.0"),
        ("sweep.equivalence=0", "sweep.equivalence"),
    ],
)
def test_bad_adaptive_settings_are_one_line_each(tmp_path, override, expected):
    path = write(tmp_path, ADAPTIVE)
    assert expected in only_problem(path, "sweep.repeats=3", override)
