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
