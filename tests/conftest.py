import pytest
from helpers import tiny_loader, tiny_model
from torch.utils.data import DataLoader

from raycomp.models.base import ClassifierModel


@pytest.fixture
def model() -> ClassifierModel:
    return tiny_model()


@pytest.fixture
def loader() -> DataLoader:
    return tiny_loader()


@pytest.fixture(scope="session")
def local_ray():
    """One real local Ray for the whole test run (started on first use), as the CLIs start it."""
    import ray

    from raycomp.launch.cluster import init_ray

    init_ray(num_cpus=2)
    yield ray
    ray.shutdown()


# Tests that start Ray or a server, or run a CLI in its own process: the slow lane. `pytest -m "not slow"` is
# the daily loop (no Ray, no server); `pytest -m ray` runs only what needs Ray.
_OWN_RAY = {"test_job_submit.py", "test_fault_tolerance.py", "test_verdict_sweep.py"}  # start their own Ray
_SLOW_FIXTURES = {"local_ray", "mlflow_server"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        uses_ray = "local_ray" in item.fixturenames or item.path.name in _OWN_RAY
        if uses_ray:
            item.add_marker(pytest.mark.ray)
        if uses_ray or _SLOW_FIXTURES & set(item.fixturenames) or item.get_closest_marker("subprocess_cli"):
            item.add_marker(pytest.mark.slow)
