"""CUDA paths: AMP fp16 with its GradScaler, bf16, and channels_last inputs. Skipped without a GPU."""

import pytest
import torch
from helpers import tiny_loader, tiny_model

from raycomp import Trainer
from raycomp.algorithms import SelectiveBackprop

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]


@pytest.mark.parametrize("precision", ["fp32", "amp_bf16", "amp_fp16"])
def test_fit_on_cuda(precision):
    sb = SelectiveBackprop(start=0.0, end=1.0, interrupt=0)
    trainer = Trainer(
        tiny_model(),
        tiny_loader(),
        "4ba",
        eval_dataloader=tiny_loader(n=16),
        algorithms=[sb],
        precision=precision,
        device="auto",
        seed=0,
    )
    assert trainer.device.type == "cuda"
    assert (trainer.state.scaler is not None) == (precision == "amp_fp16")
    trainer.fit()
    assert next(trainer.state.model.parameters()).is_cuda
    assert torch.isfinite(trainer.state.loss) and sb.last_num_kept == 8
    assert 0 <= trainer.state.eval_metrics["eval/accuracy"] <= 1
