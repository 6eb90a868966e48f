"""Callables of a user's project that the tests name by ``class_path`` (see the ``user_project`` fixture)."""

ODD_MODULE = '''
import torch
from torch import nn

from raycomp.models import RaycompModel


def not_a_module(num_classes: int = 3):
    return {"num_classes": num_classes}


def linear_classifier(num_classes: int = 3, size: int = 8):
    return nn.Sequential(nn.Flatten(), nn.Linear(3 * size * size, num_classes))


def one_dataset():
    return [1, 2, 3]


class SquaredErrorNet(RaycompModel):
    """A RaycompModel bringing its own loss: squared error against one-hot targets."""

    def __init__(self, num_classes: int = 3, size: int = 16) -> None:
        super().__init__()
        self.num_classes = num_classes
        self.net = nn.Sequential(nn.Flatten(), nn.Linear(3 * size * size, num_classes))

    def forward(self, batch):
        return self.net(batch[0])

    def loss(self, outputs, batch, reduction="mean"):
        target = nn.functional.one_hot(batch[1], self.num_classes).float()
        per_sample = ((outputs - target) ** 2).mean(dim=1)
        return {"none": per_sample, "sum": per_sample.sum()}.get(reduction, per_sample.mean())
'''
