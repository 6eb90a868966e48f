"""An MLP for the rows: a regression model with its own per-sample loss and MAE metric (a ``RaycompModel``), and a
plain ``nn.Module`` classifier that raycomp trains by cross-entropy."""

from __future__ import annotations

from torch import nn
from torchmetrics import MeanAbsoluteError

from my_tabular.data import FEATURES
from raycomp.models import RaycompModel


def mlp(outputs: int, hidden: int = 64) -> nn.Sequential:
    return nn.Sequential(nn.Linear(FEATURES, hidden), nn.ReLU(), nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, outputs))  # fmt: skip


class Regressor(RaycompModel):
    """Squared error per sample (what SelectiveBackprop ranks), the mean absolute error as the metric to judge."""

    def __init__(self, hidden: int = 64) -> None:
        super().__init__()
        self.net = mlp(1, hidden)

    def forward(self, batch):
        return self.net(batch[0]).squeeze(1)

    def loss(self, outputs, batch, reduction="mean"):
        return nn.functional.mse_loss(outputs, batch[1], reduction=reduction)

    def get_metrics(self, is_train=False):
        return {} if is_train else {"mae": MeanAbsoluteError()}


def classifier(classes: int = 3, hidden: int = 64) -> nn.Module:
    return mlp(classes, hidden)
