"""`python -m raycomp.find` for real, shrunk: a find on the built-in CNN on a local Ray, its answer and files, its
recipe.yaml trained by `python -m raycomp.train`, its MLflow runs tagged by stage; a bad find section exits 2 at
its file:line:key before Ray starts. The shrunk experiment: tests/find/find_experiments.py.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from find_experiments import SHRUNK_METHOD, shrunk
from mlflow import MlflowClient

from raycomp.cli import find as find_cli

EXPERIMENTS = Path(__file__).parents[2] / "experiments"


def find_runs(storage: Path, name: str) -> tuple[Any, list[Any]]:
    client = MlflowClient(f"sqlite:///{storage / 'mlflow.db'}")
    runs = client.search_runs([client.get_experiment_by_name(name).experiment_id], max_results=1000)
    (parent,) = [run for run in runs if run.data.tags.get("raycomp.kind") == "find"]
    return parent, [run for run in runs if run.data.tags.get("raycomp.kind") == "trial"]


def shrunk_find_cnn(storage: Path) -> list[str]:
    """experiments/find_cnn.yaml shrunk by --set: tiny data, one epoch, one sure method, two seeds a stage."""
    sets = {
        "name": "shrunk",
        "storage_path": str(storage),
        "tracking.tracking_uri": f"sqlite:///{storage / 'mlflow.db'}",
        "data.num_train": 512,
        "data.num_test": 128,
        "data.batch_size": 64,
        "max_duration": "1ep",
        "find.methods": json.dumps(SHRUNK_METHOD),
        "find.accuracy_tolerance": 1.0,  # the tiny set's accuracy says nothing
        "find.baseline_budgets": "[]",
        "find.max_settings": 1,
        **{f"find.{stage}": "[2, 2]" for stage in ("screen", "tune", "compose", "confirm")},
    }
    return [arg for key, value in sets.items() for arg in ("--set", f"{key}={value}")]


def test_find_cnn_yaml_shrunk_answers_and_its_recipe_trains(tmp_path, local_ray, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert find_cli.main([str(EXPERIMENTS / "find_cnn.yaml"), *shrunk_find_cnn(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "find: 1 candidate methods on the 'cnn' model: progressive_resizing" in out
    assert "recommended: progressive_resizing(delay_fraction=0.8,finetune_fraction=0.0,initial_scale=0.25)" in out
    assert "paste into your experiment:\n  algorithms:\n    progressive_resizing: {delay_fraction: 0.8" in out
    assert "candidates (the stage each reached, and how it ended there):" in out
    folder = tmp_path / "shrunk"
    answer = json.loads((folder / "find.json").read_text())
    assert answer["recommended"] == SHRUNK_METHOD and answer["verdict"]["verdict"] == "faster"
    assert min(answer["verdict"]["seeds"]) >= 2  # Confirm's own seeds, after the search's 0 and 1
    parent, trials = find_runs(tmp_path, "shrunk")
    assert (
        parent.data.tags["raycomp.find.recipe"]
        == "progressive_resizing(delay_fraction=0.8,finetune_fraction=0.0,initial_scale=0.25)"
    )
    stages = {
        (t.data.tags["raycomp.config_id"], t.data.tags["raycomp.repeat"]): t.data.tags.get("raycomp.find.stage")
        for t in trials
    }
    assert stages[("baseline", "0")] == "screen" and stages[("control", "2")] == "confirm"
    assert len(stages) == len(trials) == 4 + 6  # screen: method, baseline x 2 seeds; confirm: + control
    assert {t.info.status for t in [parent, *trials]} == {"FINISHED"}
    train = subprocess.run(
        [sys.executable, "-m", "raycomp.train", str(folder / "recipe.yaml")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert train.returncode == 0, train.stderr[-3000:]
    assert (tmp_path / "shrunk-recipe").is_dir()


def test_a_find_section_that_names_a_method_the_model_cannot_run_exits_2_at_its_line(tmp_path, capsys):
    path = shrunk(tmp_path, "refused", methods=["alibi", "label_smoothing"])
    with pytest.raises(SystemExit) as exit_:
        find_cli.main([str(path)])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and "find.methods.alibi: Alibi cannot run here: no raycomp GPT" in err
    assert not (tmp_path / "refused").exists()  # nothing claimed, nothing started


def test_raycomp_api_find_raises_the_problems_before_ray_starts(tmp_path):
    from raycomp.api import find
    from raycomp.config import ConfigError

    path = shrunk(tmp_path, "api", methods=["alibi"])
    with pytest.raises(ConfigError, match=r"find\.methods\.alibi: Alibi cannot run here"):
        find(path)
    with pytest.raises(ConfigError, match="has no find section"):
        find({"name": "nofind", "storage_path": str(tmp_path)})
