import os
import sys
from pathlib import Path

import pytest
import torch
from helpers import tiny_loader, tiny_model
from leftovers import pytest_configure, pytest_sessionfinish  # noqa: F401 - hooks: no process outlives the run
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


PLUGINS = Path(__file__).parent / "plugins"  # the tests' own algorithms and models, importable by the shared Ray
TEST_ALGORITHMS = "raycomp_test_plugins"


class SharedRay:
    """The suite's real local Ray, one per test process, started as the CLIs start it by the first test that asks
    for it and stopped once the next test of this process does not (``pytest_runtest_teardown``).

    Its workers can import tests/plugins (``PYTHONPATH``) and register its algorithms (``RAYCOMP_PLUGINS``), as a
    user's private Ray would with both set: a test then sweeps them in this process (``test_plugins``) instead of
    starting a CLI and a Ray of its own. This process's registry is left alone.

    An idle Ray still costs ~3.6 CPU-s a minute (its dashboard, idle workers, log monitor and raylet:
    docs/benchmarks.md, "The test suite"); kept for the whole run, the two processes' Rays idled through the
    CLI and quick tests, which start no Ray or a private one. The tests that share it run first, together."""

    @staticmethod
    def up() -> None:
        import ray

        from raycomp.base.process_env import environment
        from raycomp.launch.cluster import init_ray

        if not ray.is_initialized():
            path = os.pathsep.join(filter(None, [str(PLUGINS), os.environ.get("PYTHONPATH")]))
            with environment({"PYTHONPATH": path, "RAYCOMP_PLUGINS": TEST_ALGORITHMS}):
                init_ray(num_cpus=2)

    @staticmethod
    def down() -> None:
        ray = sys.modules.get("ray")  # not imported: no Ray to stop (and the quick tests never import it)
        if ray is not None and ray.is_initialized():
            ray.shutdown()


@pytest.fixture(scope="session")
def shared_ray():
    """Starts the shared Ray now (for a fixture wider than one test, which then requests this one)."""
    SharedRay.up()
    yield SharedRay
    SharedRay.down()


@pytest.fixture
def local_ray(shared_ray):
    """The shared local Ray (``SharedRay``), started again if an earlier test's end stopped it."""
    import ray

    shared_ray.up()
    return ray


_RAY_FIXTURES = {"local_ray", "shared_ray"}


@pytest.fixture
def test_plugins(monkeypatch):
    """tests/plugins importable here and its algorithms registered, as the shared Ray's workers have them; both
    gone again after the test, so no other test's registry holds them."""
    from raycomp.algorithms.registry import ALGORITHMS

    monkeypatch.syspath_prepend(str(PLUGINS))
    before = dict(ALGORITHMS)
    __import__(TEST_ALGORITHMS)
    yield
    ALGORITHMS.clear()
    ALGORITHMS.update(before)
    for name in [name for name in sys.modules if name.startswith(("raycomp_test_plugins", "raycomp_test_nets"))]:
        del sys.modules[name]


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After a test's own teardown: the shared Ray stops when the next test of this process does not use it."""
    if nextitem is None or not _RAY_FIXTURES & set(nextitem.fixturenames):
        SharedRay.down()


# Tests that start Ray or a server, or processes of their own (DDP ranks, a CLI, an import check): the slow
# lane. `pytest -m "not slow"` is the daily loop (no Ray, no server, no extra process); `pytest -m ray` runs
# only what needs Ray. Under pytest-xdist (`-n 2`) each worker starts its own local Ray on first use; the tests
# that start a Ray of their own stop only their own processes, so they can run beside the other worker's.
# (No xdist_group: with pytest 9, pytest-xdist 3.8's loadgroup cannot rename the items and ignores groups.)
_SLOW_FIXTURES = {"local_ray", "shared_ray", "mlflow_server", "shared_mlflow_server", "tracking_server"}
# Rough seconds a slow test takes on the 2-core machine, by kind (docs/benchmarks.md, "The test suite"), and the
# modules far from their kind's figure, as measured (`--durations=40` of a fresh clone, 2026-12-02), for the split.
_SECONDS = {"shares_ray": 12, "owns_ray": 25, "slow": 4}
_MODULE_SECONDS = {
    "test_multinode.py": 320,
    "test_crash_resume.py": 165,
    "test_find_resume.py": 130,
    "test_sweep.py": 100,
    "test_fault_tolerance.py": 85,
    "test_train_tracking.py": 75,
    "test_find_runs.py": 70,
    "test_sweep_tracking.py": 60,
    "test_experiments.py": 60,
    "test_frontier_budget.py": 60,
    "test_api.py": 45,
}


def pytest_collection_modifyitems(config, items):
    kind: dict[str, str] = {}
    for item in items:
        shares_ray = bool(_RAY_FIXTURES & set(item.fixturenames))
        owns_ray = item.get_closest_marker("subprocess_cli") is not None  # a CLI, with a private Ray of its own
        spawns = item.get_closest_marker("spawns") is not None
        if shares_ray:
            item.add_marker(pytest.mark.ray)
        slow = shares_ray or owns_ray or spawns or bool(_SLOW_FIXTURES & set(item.fixturenames))
        if slow:
            item.add_marker(pytest.mark.slow)
        kind[item.nodeid] = "shares_ray" if shares_ray else "owns_ray" if owns_ray else "slow" if slow else "quick"
    items[:] = two_lanes(items, kind)


def two_lanes(items: list, kind: dict[str, str]) -> list:
    """The slow tests in two lanes of about equal time, each lane's Ray-sharing tests together and first, and each
    lane followed by half the quick tests: lane A, quick, lane B, quick.

    ``--dist worksteal`` (README) gives each of its two workers one contiguous half of this list, and a worker that
    runs out takes tests from the end of the other's: so both start on slow tests, both end on quick ones, a
    module's slow tests stay on one worker (the cluster module's fixture starts its cluster once), and each
    worker's Ray starts once and stops after its last user (``SharedRay``). Sorted costliest-first into one list
    instead, one worker got every slow test and the other stole the tail of them, in pieces."""
    modules: dict[object, list] = {}
    quick = []
    for item in items:
        (quick if kind[item.nodeid] == "quick" else modules.setdefault(item.path, [])).append(item)
    seconds = {
        path: _MODULE_SECONDS.get(path.name, sum(_SECONDS[kind[item.nodeid]] for item in module))
        for path, module in modules.items()
    }
    lanes: tuple[list, list] = ([], [])
    totals = [0.0, 0.0]
    for path in sorted(modules, key=lambda path: -seconds[path]):
        lane = totals.index(min(totals))
        lanes[lane].extend(modules[path])
        totals[lane] += seconds[path]
    order = {"shares_ray": 0, "owns_ray": 1, "slow": 2}
    first, second = (sorted(lane, key=lambda item: order[kind[item.nodeid]]) for lane in lanes)
    fill = max(0, len(items) // 2 - len(first))  # worksteal's first worker takes len(items) // 2 of them
    return first + quick[:fill] + second + quick[fill:]


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


def pytest_collection_finish(session):
    """What importing and collecting made lives as long as this test process: frozen out of the collector's full
    passes (base/collector.py does the same in raycomp's processes), which then walk only what tests make."""
    import gc

    gc.collect()
    gc.freeze()
