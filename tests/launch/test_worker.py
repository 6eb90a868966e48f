"""One training process (worker.py): a run leaves none of its DataLoader workers behind."""

from __future__ import annotations

import psutil
import pytest

from raycomp.config import ExperimentConfig
from raycomp.launch.spec import TrialSpec
from raycomp.launch.worker import run_locally


def live_children(excluding: set[int]) -> list[psutil.Process]:
    return [
        child
        for child in psutil.Process().children()
        if child.pid not in excluding and child.is_running() and child.status() != psutil.STATUS_ZOMBIE
    ]


@pytest.mark.spawns  # DataLoader workers
def test_a_run_ends_its_dataloader_workers_before_it_returns(tmp_path):
    """A reused Tune actor runs the next trial in the same process: the last run's persistent DataLoader
    workers, left to garbage collection, were torn down inside the next trial's timed training (20 s)."""
    before = {child.pid for child in psutil.Process().children()}
    config = ExperimentConfig.from_dict(
        {
            "name": "loaders",
            "data": {"num_train": 64, "num_test": 32, "batch_size": 32, "num_workers": 2},
            "max_duration": "1ep",
            "scaling": {"num_workers": 0},
            "storage_path": str(tmp_path),
        }
    )
    assert run_locally(TrialSpec.of(config))["epoch"] == 1
    assert live_children(before) == []
