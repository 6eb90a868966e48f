"""A probe batch: the first two samples of a set or of a loader's first batch, whatever the batch's structure."""

from __future__ import annotations

from collections import defaultdict, namedtuple

import pytest
import torch
from torch.utils.data import DataLoader, TensorDataset

from raycomp.data.probe import dataset_batch, head, loader_batch

Pair = namedtuple("Pair", "input target")


def test_a_batch_is_cut_to_its_first_samples_keeping_its_structure():
    batch = Pair(torch.arange(6), {"ids": torch.arange(6), "name": "kept"})
    cut = head(batch, 2)
    assert isinstance(cut, Pair) and cut.input.tolist() == [0, 1] and cut.target["ids"].tolist() == [0, 1]
    assert cut.target["name"] == "kept"
    cut_mapping = head(defaultdict(list, {"x": torch.arange(3)}), 2)  # not built from a dict: a plain one
    assert type(cut_mapping) is dict and cut_mapping["x"].tolist() == [0, 1]


def test_sets_and_loaders_without_samples_say_so():
    empty = TensorDataset(torch.zeros(0, 2), torch.zeros(0))
    with pytest.raises(ValueError, match="its eval set is empty"):
        dataset_batch(empty, "eval")
    with pytest.raises(ValueError, match="its train loader yielded no batches"):
        loader_batch(DataLoader(empty, batch_size=4, num_workers=1), "train")
    data = TensorDataset(torch.arange(8.0).view(4, 2), torch.arange(4))
    assert loader_batch(DataLoader(data, batch_size=4, num_workers=1), "train")[1].tolist() == [0, 1]
