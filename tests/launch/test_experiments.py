"""Every YAML in experiments/ runs as a real sweep, shrunk to a few steps (CIFAR-10 from small files made here)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from helpers import write_cifar10_batch

from raycomp.cli.tune import main
from raycomp.config import load_experiment

EXPERIMENTS = Path(__file__).parents[2] / "experiments"


def shrunk(tmp_path: Path, *changes: str) -> list[str]:
    """Overrides that shrink an experiment to a few steps per trial, run one trial at a time: a second trial
    process costs more CPU (its imports) than these trials save side by side, and the suite is short of CPU."""
    return [
        *("--set", f"storage_path={tmp_path / 'runs'}"),
        *("--set", "sweep.max_concurrent_trials=1"),
        *("--set", "max_duration=2ba"),
        *("--set", "eval.interval=1ba"),
        *("--set", "checkpoint.interval=1ba"),
        *[arg for change in changes for arg in ("--set", change)],
    ]


def finished_trials(tmp_path: Path, name: str) -> list[dict]:
    return json.loads((tmp_path / "runs" / name / "results.json").read_text())["trials"]


def test_sb_yaml_runs_shrunk(tmp_path, local_ray):
    one_seed = ("sweep.repeats=1", "sweep.max_repeats=1")  # no adaptive seeds
    # 4 batches: budgets 0.5, 0.75, 1.0, 1.5 train 2, 3, 4, 6 steps (at 2, 0.75 and 1.0 both trained 2: no frontier)
    args = shrunk(
        tmp_path, "data.num_train=256", "data.num_test=64", "sweep.num_samples=1", *one_seed, "max_duration=4ba"
    )
    assert main([str(EXPERIMENTS / "sb.yaml"), *args]) == 0
    trials = finished_trials(tmp_path, "sb")
    assert sorted(t["config_id"] for t in trials) == [
        "baseline",
        "control",
        "frontier-0.5",
        "frontier-0.75",
        "frontier-1.5",
        "method-1",
    ]
    assert all(t["status"] == "TERMINATED" for t in trials)
    configs = json.loads((tmp_path / "runs" / "sb" / "results.json").read_text())["configs"]
    assert {c["config_id"]: c["verdict"] for c in configs if c["variant"] in ("control", "method")} == {
        "control": "no evidence",  # one seed: no interval, so no claim either way
        "method-1": "no evidence",
    }


def test_sb_cifar10_yaml_runs_shrunk_on_local_cifar_files(tmp_path, local_ray):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    rng = np.random.default_rng(0)
    for index in range(1, 6):
        write_cifar10_batch(folder / f"data_batch_{index}", rng.integers(0, 255, (8, 3072)), list(range(8)))
    write_cifar10_batch(folder / "test_batch", rng.integers(0, 255, (8, 3072)), list(range(8)))
    config = load_experiment(EXPERIMENTS / "sb_cifar10.yaml")
    assert (config.model.name, config.data.name, config.scaling.use_gpu) == ("resnet56", "cifar10", True)
    args = shrunk(
        tmp_path,
        f"data.root={tmp_path}",
        "data.batch_size=8",
        "data.eval_batch_size=8",
        "data.num_workers=0",
        "scaling.num_workers=0",  # no GPU here: each trial trains in its own process on the CPU
        "scaling.cpus_per_worker=1",
        "scaling.use_gpu=false",
        "precision=fp32",
        # FIFO: the seven trials train one after another in one trial process. Under the YAML's ASHA each gets a
        # process of its own (``reuses_actors``), ~7 CPU-s of imports apiece, and at 2 batches ASHA stops nothing;
        # ASHA sweeps are test_sweep_schedulers.py's.
        'sweep.scheduler={"name": "fifo"}',
    )
    assert main([str(EXPERIMENTS / "sb_cifar10.yaml"), *args]) == 0
    trials = finished_trials(tmp_path, "sb-cifar10-resnet56")
    assert len(trials) == 1 + 2 * 3  # baseline + start grid x keep grid
    assert all(t["status"] == "TERMINATED" for t in trials)


def test_recipe_yaml_composes_four_algorithms_against_a_bare_baseline(tmp_path, local_ray):
    config = load_experiment(EXPERIMENTS / "recipe.yaml")
    assert set(config.algorithms) == {"selective_backprop", "label_smoothing", "progressive_resizing", "blurpool"}
    assert set(config.sweep.swept_algorithms()) == set(config.algorithms)  # so the baseline drops all four
    args = shrunk(tmp_path, "data.num_train=256", "data.num_test=64")
    assert main([str(EXPERIMENTS / "recipe.yaml"), *args]) == 0
    trials = finished_trials(tmp_path, "recipe")
    assert [t["variant"] for t in trials] == ["baseline", *["method"] * 4]
    assert all(t["status"] == "TERMINATED" for t in trials)
    keeps = sorted(
        (t["algorithms.selective_backprop.keep"], t["algorithms.label_smoothing.smoothing"]) for t in trials[1:]
    )
    assert keeps == [(0.5, 0.05), (0.5, 0.1), (0.75, 0.05), (0.75, 0.1)]
