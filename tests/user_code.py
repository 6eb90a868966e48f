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

# Models and data for the preflight's tests (``cases`` fixtures write it as ``my_project/cases.py``): tabular data,
# a regression RaycompModel, outputs of every wrong shape, data modules that fail.
CASES_MODULE = '''
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from raycomp.models import RaycompModel


def tabular(num_train: int = 8, num_eval: int = 4, regression: bool = False):
    """Two features a sample, of classes 0, 1, 0, 1, ... shifting their mean (or, for regression, their sum)."""
    generator = torch.Generator().manual_seed(0)

    def split(n):
        labels = torch.arange(n) % 2
        features = torch.randn(n, 2, generator=generator) + 2 * labels.view(-1, 1)
        return TensorDataset(features, features.sum(dim=1) if regression else labels)

    return split(num_train), split(num_eval)


class TabularModule:
    """The same data as a data module, whose setup("fit") may fail or whose eval loader may yield nothing."""

    def __init__(self, fail_in_setup: bool = False, num_eval: int = 4, no_train_loader: bool = False) -> None:
        self.fail_in_setup, self.num_eval, self.no_train_loader = fail_in_setup, num_eval, no_train_loader

    def setup(self, stage: str) -> None:
        if self.fail_in_setup:
            raise RuntimeError("the feature store did not answer")
        self.train, self.val = tabular(num_eval=self.num_eval)

    def train_dataloader(self):
        return None if self.no_train_loader else DataLoader(self.train, batch_size=4)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=4)


def mlp(num_classes: int = 2) -> nn.Module:
    return nn.Linear(2, num_classes)


def forwarded(**kwargs) -> nn.Module:
    """Passes its arguments on, as torchvision's resnet18 does: only the call shows one it does not take."""
    return nn.Linear(**kwargs)


class DictLogits(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 2)

    def forward(self, x):
        return {"logits": self.linear(x), "features": x}


class TupleOutput(DictLogits):
    def forward(self, x):
        return self.linear(x), x


class Regression(RaycompModel):
    """A RaycompModel with its own loss (squared error on float targets); ``per_sample`` False ignores reduction."""

    def __init__(self, per_sample: bool = True) -> None:
        super().__init__()
        self.per_sample = per_sample
        self.linear = nn.Linear(2, 1)

    def forward(self, batch):
        return self.linear(batch[0]).squeeze(1)

    def loss(self, outputs, batch, reduction="mean"):
        return nn.functional.mse_loss(outputs, batch[1], reduction=reduction if self.per_sample else "mean")
'''

# A regression project (issue 32 items 3 and 6): float targets, a RaycompModel with per-sample squared error and its
# own MAE metric, and the same data as a data module whose loaders batch by 32 (``regression`` fixtures write it as
# ``my_project/regression.py``).
REGRESSION_MODULE = '''
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchmetrics import MeanAbsoluteError

from raycomp.models import RaycompModel


def sums(num_train: int = 96, num_eval: int = 32, features: int = 4):
    """Features and their sum as the target: float targets, no class labels."""
    generator = torch.Generator().manual_seed(0)

    def split(n):
        inputs = torch.randn(n, features, generator=generator)
        return TensorDataset(inputs, inputs.sum(dim=1))

    return split(num_train), split(num_eval)


class SumsModule:
    """The same data as a data module: its loaders batch by ``batch_size``, whatever data.batch_size says."""

    def __init__(self, batch_size: int = 32) -> None:
        self.batch_size = batch_size

    def setup(self, stage: str) -> None:
        self.train, self.val = sums()

    def train_dataloader(self):
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val, batch_size=self.batch_size)


class SumRegression(RaycompModel):
    """Squared error per sample (SelectiveBackprop can rank them) and the mean absolute error as its own metric."""

    def __init__(self, features: int = 4, hidden: int = 8) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, 1))

    def forward(self, batch):
        return self.net(batch[0]).squeeze(1)

    def loss(self, outputs, batch, reduction="mean"):
        return nn.functional.mse_loss(outputs, batch[1], reduction=reduction)

    def get_metrics(self, is_train=False):
        return {} if is_train else {"mae": MeanAbsoluteError()}


def three_classes(features: int = 4) -> nn.Module:
    """A plain 3-class classifier of the same features (trained by cross-entropy)."""
    return nn.Linear(features, 3)


def labelled(num_train: int = 96, num_eval: int = 32, features: int = 4):
    """The features with 3 class labels (the sum's sign and size)."""

    def relabel(split):
        inputs, total = split.tensors
        return TensorDataset(inputs, torch.bucketize(total, torch.tensor([-1.0, 1.0])))

    return tuple(relabel(split) for split in sums(num_train, num_eval, features))


class LabelledModule(SumsModule):
    def setup(self, stage: str) -> None:
        self.train, self.val = labelled()
'''
