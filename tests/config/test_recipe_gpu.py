"""The recipe on a GPU (issue 58): batches in pinned memory, so the Trainer's ``non_blocking`` copy does not wait
for the GPU's queued work, and the optimizer's fused update. Skipped without CUDA; bench/gpu_check.sh runs it
(it imports no Ray or MLflow)."""

import pytest
import torch
from helpers import NoSyncInSteps

from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_trainer

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

SMALL = {"data": {"num_train": 64, "num_test": 32, "batch_size": 16}, "max_duration": "4ba"}


@pytest.mark.parametrize(("optimizer", "precision"), [("sgd", "amp_bf16"), ("adamw", "amp_fp16"), ("adam", "fp32")])
def test_a_gpu_trainer_from_the_recipe_loads_pinned_batches_and_steps_a_fused_optimizer(optimizer, precision):
    # 16 steps: fp16's GradScaler skips its first steps while its scale comes down from 2**16
    config = ExperimentConfig.from_dict(
        {**SMALL, "max_duration": "16ba", "optimizer": {"name": optimizer}, "precision": precision}
    )
    trainer = build_trainer(config, device="cuda")
    loader = trainer.state.train_dataloader
    assert loader.pin_memory and trainer.state.evaluators[0].dataloader.pin_memory
    inputs, _ = next(iter(loader))
    assert inputs.is_pinned()
    [built] = trainer.state.optimizers
    assert built.defaults["fused"] is True
    before = [parameter.detach().clone() for parameter in trainer.state.model.parameters()]
    trainer.fit()  # fp16's GradScaler steps a fused optimizer through its own inf check
    assert torch.isfinite(trainer.state.loss)
    assert any(not torch.equal(a, b) for a, b in zip(before, trainer.state.model.parameters(), strict=True))
    assert 0 <= trainer.state.eval_metrics["eval/accuracy"] <= 1


def test_a_run_saved_on_the_cpu_resumes_on_the_gpu_with_its_fused_update_under_fp16(tmp_path):
    """A checkpoint's optimizer state names its update kernel; an unfused one (saved on a CPU) resumed into the GPU's
    fused optimizer under fp16's GradScaler failed at its first step before the recipe kept the fused update."""
    saved = ExperimentConfig.from_dict({**SMALL, "max_duration": "2ba", "optimizer": {"name": "adamw"}})
    build_trainer(saved, device="cpu", save_folder=tmp_path).fit()
    resumed = ExperimentConfig.from_dict({**SMALL, "optimizer": {"name": "adamw"}, "precision": "amp_fp16"})
    trainer = build_trainer(resumed, device="cuda", load_path=tmp_path / "latest.pt")
    assert trainer.state.timestamp.batch == 2
    trainer.fit()
    assert trainer.state.timestamp.batch == 4 and torch.isfinite(trainer.state.loss)
    assert trainer.state.optimizers[0].param_groups[0]["fused"] is True


@pytest.mark.parametrize("precision", ["amp_bf16", "amp_fp16"])
@pytest.mark.parametrize("selective_backprop", [False, True])
def test_the_recipes_gpu_steps_never_wait_for_the_device(precision, selective_backprop):
    """Issue 58: with no logger and no result callback (bench_core's and bench_lm_methods' runs), a step on the
    recipe's GPU path waits for nothing: the batch's copy from pinned memory, SelectiveBackprop's selection, fp16's
    GradScaler with the fused optimizer (which checks for infs on the device; with foreach it read them with
    ``.item()``). A sweep's trial adds its result callback (tests/launch/test_eval_report.py)."""
    algorithms = {"selective_backprop": {"start": 0.0, "end": 1.0, "interrupt": 0}} if selective_backprop else {}
    config = ExperimentConfig.from_dict(
        {**SMALL, "max_duration": "8ba", "precision": precision, "algorithms": algorithms}
    )
    guard = NoSyncInSteps()
    try:
        build_trainer(config, device="cuda", callbacks=[guard]).fit()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert guard.checked_steps == 6
