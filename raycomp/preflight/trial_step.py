"""A few real training steps per method before Ray starts, as a trial would take them.

``Algorithm.check_workload`` says what a method knows it needs; it cannot know what its own code trips on. Here the
method runs through the Trainer on a copy of the model and the probe's batch (forward, loss, backward and the
optimizer's step, at every event of a few batches): label smoothing on a regression model's float targets, CutMix
on ``(N, 8)`` inputs or RandAugment on 1-D examples fail here once, not in every trial of a sweep or a find.
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

import torch
from torch.utils.data import DataLoader, TensorDataset

from raycomp.base.errors import one_line
from raycomp.core.algorithm import Algorithm
from raycomp.preflight.probe import Workload

STEPS = 4  # enough for a method that starts part-way (SelectiveBackprop at half the run) to act in some of them
COPIES = 4  # the probe's batch of two, four times over: a method that keeps part of a batch keeps more than one


def training_failure(workload: Workload, algorithm: Algorithm | None) -> str | None:
    """The error ``STEPS`` training steps with ``algorithm`` raise, as one line; None when they run. ``None`` as the
    algorithm trains the baseline: when that fails, no method's failure says anything about the method."""
    from raycomp.loop.trainer import Trainer

    algorithms = [] if algorithm is None else [copy.deepcopy(algorithm)]
    with _driver_rng_kept(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a method's warnings belong to its trials, which show them
        try:
            model = copy.deepcopy(workload.model).train()
            loader = _loader(workload.train_batch)
            options = {"device": "cpu", "seed": 0, "progress_bar": False, "recompute_batchnorm": 0}
            Trainer(model, loader, f"{STEPS}ba", algorithms=algorithms, **options).fit()
        except Exception as error:
            return one_line(error)
    return None


def _loader(batch: Any) -> Iterable[Any]:
    """A DataLoader over the batch's examples for an ``(input, target)`` pair of tensors (RandAugment rebuilds a
    DataLoader's dataset), else the batch itself once per step."""
    if isinstance(batch, list | tuple) and len(batch) == 2 and all(isinstance(part, torch.Tensor) for part in batch):
        input, target = (torch.cat([part] * COPIES) for part in batch)
        return DataLoader(TensorDataset(input, target), batch_size=len(input))
    return [batch] * STEPS


@contextlib.contextmanager
def _driver_rng_kept() -> Iterator[None]:
    """The Trainer seeds every generator; the driver's own draws (a sweep's search) stay as they were."""
    from raycomp.loop.rng import get_rng_state, set_rng_state

    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
