"""A shrunk find experiment for the tests that run one for real (tests/find/test_find_cli.py, test_find_resume.py).

It races one ProgressiveResizing setting (an eighth of the pixels for most of training, a sure speed-up even on a
busy machine) at two seeds a stage, with an accuracy tolerance of 1 (the tiny set's accuracy says nothing): what
the tests check is the path through the stages, not a verdict on the CNN.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

SHRUNK_METHOD = {"progressive_resizing": {"initial_scale": 0.25, "delay_fraction": 0.8, "finetune_fraction": 0.0}}


def shrunk(storage: Path, name: str, methods: Any = None, **find: Any) -> Path:
    config = {
        "name": name,
        "model": {"name": "cnn"},
        "data": {"name": "synthetic", "num_train": 512, "num_test": 128, "batch_size": 64},
        "max_duration": "1ep",
        "scaling": {"num_workers": 0, "cpus_per_worker": 1},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": str(storage),
        "tracking": {"tracking_uri": f"sqlite:///{storage / 'mlflow.db'}"},
        "find": {
            "methods": methods or SHRUNK_METHOD,
            "budget": "10m",
            "accuracy_tolerance": 1.0,
            "timing": "cpu",
            "baseline_budgets": [],
            "control": True,
            "max_settings": 1,
            **{stage: [2, 2] for stage in ("screen", "tune", "compose", "confirm")},
            **find,
        },
    }
    path = storage / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path
