"""What a Composer user types first: passes, precision and device names, and what ``state.batch`` holds when."""

import pytest
import torch
from helpers import tiny_loader, tiny_model

from raycomp import Callback, Event, Trainer
from raycomp.core import Precision
from raycomp.core.passes import default_passes


def test_passes_are_added_to_the_defaults():
    def noop(algorithms, event):
        return list(algorithms)

    trainer = Trainer(tiny_model(), tiny_loader(), "1ba", passes=[noop], device="cpu", seed=0)
    assert trainer.engine.algorithm_passes == [*default_passes(), noop]


def test_amp_on_the_cpu_is_bf16_and_the_training_forward_runs_in_it():
    dtypes = []

    class Dtypes(Callback):
        def after_forward(self, state, logger):
            dtypes.append(state.outputs.dtype)

    trainer = Trainer(tiny_model(), tiny_loader(), "2ba", precision="amp", callbacks=[Dtypes()], device="cpu", seed=0)
    trainer.fit()
    assert trainer.state.precision is Precision.AMP_BF16 and trainer.state.scaler is None
    assert dtypes == [torch.bfloat16] * 2


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error where CUDA is absent")
@pytest.mark.parametrize("device", ["gpu", "cuda", "cuda:1"])
def test_asking_for_a_gpu_without_cuda_names_the_argument(device):
    with pytest.raises(ValueError, match=f"device='{device}' but CUDA is not available"):
        Trainer(tiny_model(), tiny_loader(), "1ba", device=device)


def test_an_unknown_device_names_the_argument():
    with pytest.raises(ValueError, match="device='tpu': expected 'auto', 'cpu', 'gpu'"):
        Trainer(tiny_model(), tiny_loader(), "1ba", device="tpu")


def test_state_batch_is_the_whole_batch_around_the_microbatches():
    """grad_accum=2: the microbatch only from BEFORE_FORWARD to AFTER_BACKWARD (docs/core.md)."""
    sizes: dict[Event, set[int]] = {}

    class BatchSizes(Callback):
        def run_event(self, event, state, logger):
            if state.batch is not None and not event.is_eval:
                sizes.setdefault(event, set()).add(len(state.batch[0]))

    Trainer(tiny_model(), tiny_loader(n=32), "2ba", grad_accum=2, callbacks=[BatchSizes()], device="cpu").fit()
    whole = (Event.AFTER_DATALOADER, Event.BATCH_START, Event.BEFORE_TRAIN_BATCH)
    whole += (Event.AFTER_TRAIN_BATCH, Event.BATCH_END)
    micro = (Event.BEFORE_FORWARD, Event.AFTER_FORWARD, Event.BEFORE_LOSS, Event.AFTER_LOSS)
    micro += (Event.BEFORE_BACKWARD, Event.AFTER_BACKWARD)
    assert {event: sizes[event] for event in whole} == {key: {16} for key in whole}
    assert {event: sizes[event] for event in micro} == {key: {8} for key in micro}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_gpu_is_cuda_and_amp_is_bf16_where_the_gpu_has_it():
    trainer = Trainer(tiny_model(), tiny_loader(), "2ba", device="gpu", precision="amp", seed=0)
    native_bf16 = torch.cuda.get_device_properties(trainer.device).major >= 8
    assert trainer.device.type == "cuda"
    assert trainer.state.precision is (Precision.AMP_BF16 if native_bf16 else Precision.AMP_FP16)
    assert (trainer.state.scaler is None) == native_bf16
    trainer.fit()
    assert torch.isfinite(trainer.state.loss)
