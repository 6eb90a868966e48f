"""``raycomp.api.sweep`` from a script: callables defined in ``__main__`` (no import path) reach every trial,
and the sweep leaves what the CLI's does (results.json's configuration rows, MLflow runs naming them); run again it
raises ``RunConflict`` in the API's words, and ``extend=True`` adds seeds as ``--extend`` does (issue 32 item 7)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from mlflow import MlflowClient

from raycomp.config import ConfigError

SCRIPT = """\
    import sys

    import torch
    from torch import nn
    from torch.utils.data import TensorDataset

    from raycomp.api import sweep


    def make_net(num_classes=3):
        return nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                             nn.Linear(8, num_classes))


    def make_data(n=64):
        generator = torch.Generator().manual_seed(0)
        labels = torch.randint(0, 3, (n,), generator=generator)
        images = torch.randn(n, 3, 8, 8, generator=generator) + labels.view(-1, 1, 1, 1)
        return TensorDataset(images, labels), TensorDataset(images[:32], labels[:32])


    experiment = {
        "name": "api", "max_duration": "1ep", "scaling": {"num_workers": 0}, "storage_path": sys.argv[1],
        "data": {"batch_size": 16}, "algorithms": {"selective_backprop": {"keep": 0.5}},
        "sweep": {"space": {"algorithms.selective_backprop.keep": {"choice": [0.5]}}, "repeats": 2,
                  "scheduler": {"name": "fifo"}, "max_concurrent_trials": 1},  # one trial process, not two
    }
    result = sweep(experiment, model=make_net, model_args={"num_classes": 3}, data=make_data, report=False)
    print("results:", result.exit_code, result.results_json)

    from raycomp.base.errors import RunConflict

    try:  # a notebook cell run again
        sweep(experiment, model=make_net, model_args={"num_classes": 3}, data=make_data, report=False)
    except RunConflict as conflict:
        print("conflict:", conflict)
    experiment["sweep"]["repeats"] = 3
    more = sweep(experiment, model=make_net, model_args={"num_classes": 3}, data=make_data, report=False, extend=True)
    print("extended:", more.exit_code)
"""


@pytest.mark.subprocess_cli
def test_a_script_sweeps_its_own_callables(tmp_path):
    script = tmp_path / "notebook.py"
    script.write_text(textwrap.dedent(SCRIPT))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "runs")], cwd=tmp_path, capture_output=True, text=True,
        timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = tmp_path / "runs" / "api" / "results.json"
    assert f"results: 0 {results}" in done.stdout
    conflict = next(line for line in done.stdout.splitlines() if line.startswith("conflict:"))
    assert "resume=True" in conflict and "extend=True" in conflict and "overrides=['name=...']" in conflict
    assert "--resume" not in conflict and "--set" not in conflict
    assert "extended: 0" in done.stdout
    configs = {row["config_id"]: row for row in json.loads(results.read_text())["configs"]}
    assert sorted(configs) == ["baseline", "method-1"] and all(len(row["seeds"]) == 3 for row in configs.values())
    client = MlflowClient(f"sqlite:///{tmp_path / 'runs' / 'mlflow.db'}")
    experiment = client.get_experiment_by_name("api")
    trials = [run for run in client.search_runs([experiment.experiment_id]) if run.data.params]
    assert len(trials) == 6  # 2 seeds x (baseline, method), then a third seed of each from extend=True
    assert {run.data.params["model.class_path"] for run in trials} == {"raycomp.shipped.make_net"}
    assert {run.data.params["data.class_path"] for run in trials} == {"raycomp.shipped.make_data"}
    assert {run.data.params["model.init_args.num_classes"] for run in trials} == {"3"}


def test_a_bad_callable_is_a_config_error_before_ray(tmp_path, monkeypatch):
    from raycomp.api import sweep

    monkeypatch.delenv("RAYCOMP_SHIPPED", raising=False)
    monkeypatch.setenv("PYTHONPATH", os.environ.get("PYTHONPATH", ""))
    monkeypatch.setattr(sys, "path", list(sys.path))

    def not_a_model():
        return 42

    with pytest.raises(ConfigError, match=r"model\.class_path: raycomp\.shipped\.not_a_model returned a int"):
        sweep({"name": "bad", "storage_path": str(tmp_path)}, model=not_a_model)
    assert not (tmp_path / "bad").exists()
