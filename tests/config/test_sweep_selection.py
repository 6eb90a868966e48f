"""sweep.space.algorithms: each configuration runs the algorithms its list names (each method alone, then
together), against one baseline without any of them."""

from __future__ import annotations

import pytest
from config_files import only_problem, problems, write

from raycomp.base import keys
from raycomp.config import load_experiment, trial_config
from raycomp.config.arm import Arm
from raycomp.launch.sweep.space import check_arms, sweep_arms
from raycomp.report.analysis import format_args

EXPERIMENT = """\
algorithms:
  label_smoothing: {smoothing: 0.1}
  selective_backprop: {keep: 0.5}
  mixup: {}
sweep:
  space:
    algorithms: {grid: [[selective_backprop], [mixup], [selective_backprop, mixup]]}
"""
SB_KEEP = "algorithms.selective_backprop.keep"


def method(base, overrides):
    return trial_config(base, Arm(keys.METHOD, overrides=overrides))


def test_each_configuration_runs_its_list_and_the_algorithms_no_list_names(tmp_path):
    base = load_experiment(write(tmp_path, EXPERIMENT))
    assert base.sweep.swept_algorithms() == ["selective_backprop", "mixup"]
    assert list(method(base, {"algorithms": ["mixup"]}).algorithms) == ["label_smoothing", "mixup"]
    both = method(base, {"algorithms": ["selective_backprop", "mixup"]})
    assert list(both.algorithms) == ["label_smoothing", "selective_backprop", "mixup"] and both.sweep is None
    baseline = trial_config(base, Arm(keys.BASELINE, overrides={"algorithms": None}))
    assert baseline.to_dict()["algorithms"] == {
        "label_smoothing": {"smoothing": 0.1}
    }  # label smoothing is in every arm


def test_arms_blank_the_arguments_of_algorithms_they_leave_out(tmp_path):
    text = EXPERIMENT + f"    {SB_KEEP}: {{grid: [0.3, 0.7]}}\n"
    base = load_experiment(write(tmp_path, text))
    configs = {arm.config_id: arm.overrides for arm in sweep_arms(base)}
    assert configs["baseline"] == {"algorithms": None, SB_KEEP: None}
    methods = sorted((str(o["algorithms"]), o[SB_KEEP]) for c, o in configs.items() if c.startswith("method"))
    # Mixup alone once: its two grid combinations differed only in SB's keep, which it does not run.
    assert methods == [
        ("['mixup']", None),
        ("['selective_backprop', 'mixup']", 0.3),
        ("['selective_backprop', 'mixup']", 0.7),
        ("['selective_backprop']", 0.3),
        ("['selective_backprop']", 0.7),
    ]
    check_arms(base)  # every configuration builds
    sb_only = method(base, {"algorithms": ["selective_backprop"], SB_KEEP: 0.3})
    assert sb_only.algorithms["selective_backprop"].keep == 0.3 and "mixup" not in sb_only.algorithms
    assert format_args({"algorithms": ["selective_backprop", "mixup"], SB_KEEP: 0.3}) == (
        "algorithms=selective_backprop+mixup, keep=0.3"
    )


@pytest.mark.parametrize(
    ("domain", "expected"),
    [
        ("{grid: [[selective_backprop], [cutmix]]}", "sweep.space.algorithms: lists 'cutmix' but not under algorithms"),
        ("{grid: [[]]}", "sweep.space.algorithms.grid[0]: must be a non-empty list of algorithm names"),
        ("{grid: [mixup]}", "sweep.space.algorithms.grid[0]: must be a non-empty list of algorithm names"),
        ("{choice: [[mixup, mixup]]}", "sweep.space.algorithms.choice[0]: must be a non-empty list"),
        ("{uniform: [0, 1]}", "sweep.space.algorithms.uniform: lists the algorithms each configuration runs"),
    ],
)
def test_bad_selections_name_the_key(tmp_path, domain, expected):
    text = EXPERIMENT.replace("{grid: [[selective_backprop], [mixup], [selective_backprop, mixup]]}", domain)
    assert f"exp.yaml:7: {expected}" in only_problem(write(tmp_path, text))


def test_a_selection_is_checked_as_the_configs_it_makes(tmp_path):
    """SB's start 0.7 with end 0.6 clashes only where SB runs: those grid combinations are refused, not Mixup's."""
    text = EXPERIMENT.replace("{keep: 0.5}", "{keep: 0.5, end: 0.9}") + (
        "    algorithms.selective_backprop.start: {grid: [0.1, 0.7]}\n"
        "    algorithms.selective_backprop.end: {grid: [0.6, 0.9]}\n"
    )
    found = problems(write(tmp_path, text))
    assert len(found) == 2 and all("start=0.7" in p and "end=0.6" in p for p in found), found
    assert "algorithms=['selective_backprop']" in found[0] and "'mixup']" in found[1]


def test_optuna_cannot_sample_lists(tmp_path):
    text = EXPERIMENT.replace("grid:", "choice:") + "  search_alg: optuna\n"
    assert "optuna cannot sample lists" in only_problem(write(tmp_path, text))
