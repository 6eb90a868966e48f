"""A real sweep judges a planted slowdown `slower` and its A/A control `no evidence`, on a loaded machine too.

The slowdown (tests/plugins) sleeps 1 s per batch without changing training, about 5x a trial's own
time; 6 paired repeats at 99.9% confidence find it whatever the noise of a shared 2-core machine, while
the control, identical to the baseline, comes out `faster` or `slower` about once in a thousand runs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

TESTS = Path(__file__).parents[1]


def test_planted_slowdown_is_slower_and_the_control_shows_no_evidence(tmp_path):
    experiment = {
        "name": "planted",
        "model": {"name": "cnn_plain"},
        "data": {"num_train": 64, "num_test": 32, "batch_size": 16},
        "max_duration": "1ep",
        "storage_path": str(tmp_path),
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "tracking": {"enabled": False},
        "algorithms": {"slowdown": {"seconds": 1.0}},
        "sweep": {
            "space": {"algorithms.slowdown.seconds": {"choice": [1.0]}},
            "repeats": 6,
            "control": True,
            "confidence": 0.999,
            "scheduler": {"name": "fifo"},
        },
    }
    path = tmp_path / "planted.yaml"
    path.write_text(yaml.safe_dump(experiment))
    plugins = str(TESTS / "plugins")
    env = {
        **os.environ,
        "RAYCOMP_PLUGINS": "raycomp_test_plugins",
        "PYTHONPATH": os.pathsep.join(filter(None, [plugins, os.environ.get("PYTHONPATH")])),
    }
    done = subprocess.run(
        [sys.executable, "-m", "raycomp.tune", str(path), "--no-report"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    document = json.loads((tmp_path / "planted" / "results.json").read_text())
    configs = {row["config_id"]: row for row in document["configs"]}
    assert set(configs) == {"baseline", "control", "method-1"}
    assert [len(row["seeds"]) for row in configs.values()] == [6, 6, 6]
    assert configs["method-1"]["verdict"] == "slower", configs["method-1"]
    assert configs["method-1"]["speedup_ci_high"] < 1
    assert configs["control"]["verdict"] == "no evidence", configs["control"]
    assert document["control"] == "no evidence"
    assert "control (A/A): no evidence" in done.stdout
