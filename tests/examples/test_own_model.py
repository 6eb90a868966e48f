"""examples/own_model, as a user runs it: their package and a PNG image folder in a folder of their own, a
sweep of SelectiveBackprop against the baseline with repeats and the A/A control, by ``python -m raycomp.tune``.

The package is importable only because the command runs from its folder (no PYTHONPATH entry for it): the
driver, each Tune trial and its checkpoints see it the same way.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from mlflow import MlflowClient

EXAMPLE = Path(__file__).parents[2] / "examples" / "own_model"
SHRINK = [  # a few seconds per trial on 2 cores
    "--set", "max_duration=1ep",
    "--set", "sweep.repeats=2",
    "--set", "data.image_size=16",
    "--set", "model.init_args.widths=[8, 16]",
    # One trial at a time, so one trial process: a second costs more CPU (its imports) than it saves side by side.
    "--set", "sweep.max_concurrent_trials=1",
]  # fmt: skip


@pytest.mark.subprocess_cli
def test_the_own_model_example_sweeps_a_user_package_on_an_image_folder(tmp_path):
    project = tmp_path / "own_model"
    shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("images", "runs", "__pycache__"))
    env = {key: value for key, value in os.environ.items() if key != "RAYCOMP_PLUGINS"}
    made = subprocess.run(
        [sys.executable, "-c", "from my_project.data import write_image_folder as w; w('images', 3, (12, 6), 16)"],
        cwd=project, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    done = subprocess.run(
        [sys.executable, "-m", "raycomp.tune", "sweep.yaml", "--no-report", *SHRINK],
        cwd=project, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]

    document = json.loads((project / "runs" / "own_model" / "results.json").read_text())
    configs = {row["config_id"]: row for row in document["configs"]}
    assert set(configs) == {"baseline", "control", "method-1"}
    assert all(len(row["seeds"]) == 2 for row in configs.values())
    assert "control (A/A):" in done.stdout

    client = MlflowClient(f"sqlite:///{project / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("own_model")
    trials = [run for run in client.search_runs([experiment.experiment_id]) if run.data.params]
    assert len(trials) == 6
    for run in trials:
        assert run.data.params["model.class_path"] == "my_project.nets.TinyResNet"
        assert run.data.params["model.init_args.widths"] == "[8, 16]"
        assert run.data.params["data.root"] == str(project / "images")
        assert "model.name" not in run.data.params  # not what trained
