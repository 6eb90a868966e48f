"""A config is data (issue 56 item 1): loading one builds, calls and reads nothing of the user's model and data, and
imports no model or dataset code; the workload check builds the model once per command, a find's start included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from raycomp.config import ConfigError, load_experiment
from raycomp.launch.find.command import find_problems
from raycomp.preflight.experiment import check_experiment, load_checked_experiment

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
COUNTED = '''
"""A model and data that note each call in calls.txt beside this file."""
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import TensorDataset

CALLS = Path(__file__).with_name("calls.txt")


def _noted(what):
    with CALLS.open("a") as calls:
        calls.write(what + "\\n")


class Net(nn.Module):
    def __init__(self, features: int = 6, classes: int = 3):
        super().__init__()
        _noted("model")
        self.layer = nn.Linear(features, classes)

    def forward(self, inputs):
        return self.layer(inputs)


def rows(features: int = 6, classes: int = 3):
    _noted("data")
    generator = torch.Generator().manual_seed(0)
    inputs = torch.randn(64, features, generator=generator)
    labels = torch.randint(0, classes, (64,), generator=generator)
    return TensorDataset(inputs, labels), TensorDataset(inputs[:16], labels[:16])
'''


@pytest.fixture
def counted_project(tmp_path, monkeypatch):
    (tmp_path / "counted_project.py").write_text(COUNTED)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    sys.modules.pop("counted_project", None)
    return tmp_path


def experiment(folder: Path, name: str, **extra: object) -> Path:
    config = {
        "name": name,
        "model": {"class_path": "counted_project.Net"},
        "data": {"class_path": "counted_project.rows", "batch_size": 16},
        "max_duration": "1ep",
        "tracking": {"enabled": False},
        "storage_path": str(folder / "runs"),
        **extra,
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def calls(folder: Path) -> list[str]:
    path = folder / "calls.txt"
    return path.read_text().split() if path.exists() else []


@pytest.mark.spawns
def test_loading_builds_calls_and_reads_nothing_and_imports_no_model_or_dataset_code(counted_project):
    folder = counted_project
    paths = [
        experiment(folder, "user"),
        experiment(folder, "folder", data={"name": "image_folder", "root": str(folder / "not-there")}),
        *(EXPERIMENTS / name for name in ("sb.yaml", "find_cnn.yaml", "lm.yaml")),
    ]
    check = (
        "import json, sys\n"
        "from raycomp.config import load_experiment\n"
        "for path in sys.argv[1:]:\n"
        "    load_experiment(path)\n"
        "heavy = ('raycomp.models.', 'raycomp.data.', 'raycomp.preflight', 'raycomp.launch', 'raycomp.loop.trainer')\n"
        "print(json.dumps(sorted(name for name in sys.modules if name.startswith(heavy))))\n"
    )
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(folder), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(
        [sys.executable, "-c", check, *map(str, paths)], capture_output=True, text=True, timeout=240, env=environment
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert json.loads(done.stdout.splitlines()[-1]) == []
    assert calls(folder) == []  # the model and data were imported (their signatures checked), never called

    folder_config = load_experiment(paths[1])  # an image folder that is not there: data, not yet a problem
    with pytest.raises(ConfigError, match=r"folder\.yaml:\d+: data\.root: "):
        check_experiment(folder_config, str(paths[1]), {("data", "root"): f"{paths[1]}:4"})


def test_the_check_builds_the_model_once_and_a_find_starts_on_that_one(counted_project):
    folder = counted_project
    config, facts = load_checked_experiment(experiment(folder, "checked"))
    assert calls(folder) == ["data", "model"] and facts.has_accuracy
    assert config.objective == ("eval/accuracy", "max")  # read from the check, not built again
    assert facts.applicable(["label_smoothing"]) == {"label_smoothing": None}
    assert calls(folder) == ["data", "model"]

    find = {"methods": ["label_smoothing", "gradient_clipping"], "budget": "5m"}
    config, facts = load_checked_experiment(experiment(folder, "find", find=find))
    plan, _, problems = find_problems(config, facts)  # each candidate trains 4 steps, on copies
    assert plan is not None and not problems and [c.name for c in plan.candidates] == find["methods"]
    assert calls(folder) == ["data", "model"] * 2  # one build per command: the check's
