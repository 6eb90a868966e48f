"""The preflight at the real CLIs, in their own processes: a model and data that cannot train together, or a method
that cannot run on them, is one line at its key and exit code 2 before Ray starts, for train and for tune."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from user_code import CASES_MODULE

CASES = "name: probe\nmodel: {class_path: my_project.cases.mlp}\ndata: {class_path: my_project.cases.tabular}\n"


@pytest.mark.parametrize(
    ("command", "extra", "problem"),
    [
        ("train", "model: {class_path: my_project.cases.mlp, init_args: {num_classes: 1}}\n",
         "bad.yaml:3: model.init_args.num_classes: my_project.cases.mlp on a batch of my_project.cases.tabular's train "
         "set: the model outputs 1 logits per sample but the data has labels up to 1: it needs at least 2 classes"),
        ("tune", "algorithms: {selective_backprop: {}}\nsweep:\n  space:\n"
         "    algorithms.selective_backprop.keep: {choice: [0.5, 0.7]}\n",
         "bad.yaml:4: algorithms.selective_backprop.scale_factor: the input is a 2-D float32 tensor of shape (2, 2); "
         "downsampling needs images (3-, 4- or 5-D float tensors): set it to 1"),
    ],
    ids=["train", "tune"],
)  # fmt: skip
def test_the_cli_exits_2_with_one_line_before_ray(user_project, command, extra, problem):
    (user_project / "my_project" / "cases.py").write_text(CASES_MODULE)
    text = CASES.replace("model: {class_path: my_project.cases.mlp}\n", "") if extra.startswith("model") else CASES
    (user_project / "bad.yaml").write_text(text + extra)
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}  # only the working directory
    done = subprocess.run(
        [sys.executable, "-m", f"raycomp.{command}", "bad.yaml"],
        cwd=user_project, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == ["error: invalid experiment bad.yaml:", f"  {problem}"]
    assert not (user_project / "runs").exists()
