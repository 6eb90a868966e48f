"""Small, fast pieces shared by the tests: a tiny CNN with BatchNorm and Dropout, tensor data, recorders."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from raycomp.core import Callback, Event, Logger, State
from raycomp.models.base import ClassifierModel


def tiny_net(num_classes: int = 4) -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Dropout(0.2),
        nn.Linear(8, num_classes),
    )


def tiny_model(seed: int = 0, num_classes: int = 4) -> ClassifierModel:
    torch.manual_seed(seed)
    return ClassifierModel(tiny_net(num_classes))


def tiny_dataset(n: int = 64, seed: int = 0, num_classes: int = 4, size: int = 8) -> TensorDataset:
    generator = torch.Generator().manual_seed(seed)
    targets = torch.randint(0, num_classes, (n,), generator=generator)
    inputs = torch.randn(n, 3, size, size, generator=generator) + targets.view(-1, 1, 1, 1).float()
    return TensorDataset(inputs, targets)


def tiny_loader(n: int = 64, batch_size: int = 16, shuffle: bool = True, seed: int = 0) -> DataLoader:
    dataset = tiny_dataset(n, seed)
    sampler = DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=shuffle, seed=seed)
    return DataLoader(dataset, batch_size=batch_size, sampler=sampler)


class EventRecorder(Callback):
    """Records every event the Engine fires, in order."""

    def __init__(self) -> None:
        self.events: list[Event] = []

    def run_event(self, event: Event, state: State, logger: Logger) -> None:
        self.events.append(event)


def write_cifar10_batch(path: Path, images: np.ndarray, labels: list[int], protocol: int = 2) -> None:
    """Write ``images`` (uint8, [N, 32, 32, 3] or [N, 3072] channel-major) as a CIFAR-10 batch file."""
    data = np.asarray(images, dtype=np.uint8)
    if data.ndim == 4:
        data = data.transpose(0, 3, 1, 2).reshape(len(data), 3072)
    batch = {
        b"batch_label": b"fake batch",
        b"data": data,
        b"labels": list(labels),
        b"filenames": [f"img_{i}.png".encode() for i in range(len(labels))],
    }
    with open(path, "wb") as f:
        pickle.dump(batch, f, protocol=protocol)
