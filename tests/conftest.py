import os

import pytest
import torch
from helpers import tiny_loader, tiny_model
from torch.utils.data import DataLoader

from raycomp.models.base import ClassifierModel

# One torch thread per test process, as a `cpus_per_worker: 1` trial has (raycomp/launch/worker.py sets the same
# after any in-process run, so a later test saw 1 thread anyway). The suite runs as `-n 2` on 2 cores: with
# torch's default of one thread per core each worker's tiny models waited on a second thread that the other
# worker held, and a loaded machine made every op's threads wait for each other (2 to 3x the wall time).
torch.set_num_threads(1)


@pytest.fixture
def model() -> ClassifierModel:
    return tiny_model()


@pytest.fixture
def loader() -> DataLoader:
    return tiny_loader()


@pytest.fixture(scope="session", autouse=True)
def private_text_cache(tmp_path_factory):
    """raycomp's text cache in this run's temporary folder, not the user's ~/.cache. Set once, before any Ray
    starts: Ray's workers take the environment their raylet started with, not a test's later ``setenv``."""
    os.environ["RAYCOMP_CACHE_DIR"] = str(tmp_path_factory.mktemp("raycomp-cache"))


@pytest.fixture(scope="session")
def local_ray():
    """One real local Ray for the whole test run (started on first use), as the CLIs start it."""
    import ray

    from raycomp.launch.cluster import init_ray

    init_ray(num_cpus=2)
    yield ray
    ray.shutdown()


# Tests that start Ray or a server, or processes of their own (DDP ranks, a CLI, an import check): the slow
# lane. `pytest -m "not slow"` is the daily loop (no Ray, no server, no extra process); `pytest -m ray` runs
# only what needs Ray. Under pytest-xdist (`-n 2`) each worker starts its own local Ray on first use; the tests
# that start a Ray of their own stop only their own processes, so they can run beside the other worker's.
# (No xdist_group: with pytest 9, pytest-xdist 3.8's loadgroup cannot rename the items and ignores groups.)
_OWN_RAY = {"test_fault_tolerance.py", "test_verdict_sweep.py"}  # start their own Ray
_SLOW_FIXTURES = {"local_ray", "mlflow_server", "shared_mlflow_server", "tracking_server"}
_LONGEST = {"test_crash_resume.py"}  # over 3 minutes alone: started first, so that nothing waits on it at the end


def pytest_collection_modifyitems(config, items):
    cost: dict[str, int] = {}
    for item in items:
        shares_ray = "local_ray" in item.fixturenames
        owns_ray = item.path.name in _OWN_RAY or item.get_closest_marker("subprocess_cli") is not None
        spawns = item.get_closest_marker("spawns") is not None
        if shares_ray or item.path.name in _OWN_RAY:
            item.add_marker(pytest.mark.ray)
        slow = shares_ray or owns_ray or spawns or bool(_SLOW_FIXTURES & set(item.fixturenames))
        if slow:
            item.add_marker(pytest.mark.slow)
        cost[item.nodeid] = -1 if item.path.name in _LONGEST else 0 if owns_ray else 1 if slow else 2
    # The costliest first (a stable sort: each module's order stays), so that under pytest-xdist the quick tests
    # fill in at the end. With `--dist worksteal` (README) a worker that runs out takes tests from the other; with
    # the default `--dist load` one worker ran the last long tests for minutes while the other idled.
    items.sort(key=lambda item: cost[item.nodeid])


@pytest.fixture
def user_project(tmp_path, monkeypatch):
    """A user's project in a temporary folder, importable as ``my_project`` (examples/own_model's package, plus
    ``my_project.odd``: callables that return the wrong things, and a RaycompModel with its own loss)."""
    import shutil
    import sys
    from pathlib import Path

    from user_code import ODD_MODULE

    project = tmp_path / "project"
    shutil.copytree(
        Path(__file__).parents[1] / "examples" / "own_model",
        project,
        ignore=shutil.ignore_patterns("images", "runs", "__pycache__"),
    )
    (project / "my_project" / "odd.py").write_text(ODD_MODULE)
    monkeypatch.syspath_prepend(str(project))
    yield project
    for name in [name for name in sys.modules if name == "my_project" or name.startswith("my_project.")]:
        del sys.modules[name]
