"""An evaluation's numbers come from batches: an eval set with none is an error (D6), not accuracy 0.0 and loss 0.0."""

from __future__ import annotations

import pytest
from helpers import tiny_loader, tiny_model
from torch.utils.data import DataLoader, TensorDataset

from raycomp import Trainer


def test_an_eval_loader_without_batches_is_an_error_not_zeros():
    empty = DataLoader(TensorDataset(*tiny_loader().dataset[:0]), batch_size=4)
    trainer = Trainer(tiny_model(), tiny_loader(n=16), "1ep", eval_dataloader=empty, seed=0, device="cpu")
    with pytest.raises(ValueError, match="evaluator 'eval': its dataloader yielded no batches"):
        trainer.fit()
    assert "eval/accuracy" not in trainer.state.eval_metrics
