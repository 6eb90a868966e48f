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
