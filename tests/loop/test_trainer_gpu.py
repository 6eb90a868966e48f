"""CUDA paths: fp32 and AMP (bf16; fp16 with its GradScaler), channels_last inputs, a checkpoint saved on
CUDA and resumed, and the Trainer under a one-rank NCCL process group. Skipped without a GPU.

Two ranks of NCCL need two GPUs (NCCL refuses two ranks on one device), so DDP over NCCL is not tested
here; tests/test_trainer_ddp.py runs two gloo ranks, which on a CUDA machine put both on the GPU.
"""

import datetime

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import tiny_dataset, tiny_loader, tiny_model
from torch.utils.data import DataLoader, DistributedSampler

from raycomp import Callback, Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.algorithms.loss_selection import select_unchecked
from raycomp.loop.checkpoint import load_checkpoint

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
    if precision == "amp_fp16":  # the scaler stepped: its scale lives on the GPU and is finite
        assert trainer.state.scaler.get_scale() > 0


def test_selective_backprops_selection_waits_for_nothing_on_the_host():
    """Issue 58: SB's selection (scoring forward, ranks, draw, gather), eager and compiled, never synchronises with
    the host, so a GPU runs it without a stall and a CUDA graph can capture it (``torch.multinomial`` checked its
    weights with ``.item()``)."""
    model = tiny_model().cuda()
    generator = torch.Generator().manual_seed(0)
    input, target = torch.randn(16, 3, 8, 8, generator=generator).cuda(), torch.randint(0, 4, (16,)).cuda()

    def selection(input, target):
        def loss(outputs, targets, reduction):
            return model.loss(outputs, (None, targets), reduction=reduction)

        return select_unchecked(input, target, lambda x: model((x, target)), loss, 0.5, 0.5)

    for select in (selection, torch.compile(selection, dynamic=False)):
        select(input, target)  # the first call compiles and sets up cuDNN and cuBLAS, which may wait
        torch.cuda.set_sync_debug_mode("error")
        try:
            kept_input, kept_target = select(input, target)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        assert kept_input.shape == (8, 3, 8, 8) and kept_target.shape == (8,)


class GraphCounts(Callback):
    def __init__(self):
        self.graphs = []

    def batch_end(self, state, logger):
        self.graphs.append(torch._dynamo.utils.counters["stats"]["unique_graphs"])


def test_sb_switched_on_and_off_under_cuda_graphs_compiles_each_step_once():
    """Issue 58: ``reduce-overhead`` with SB on every other batch: the selection, the step on the kept rows and the
    full step are each compiled once, then replayed."""
    torch._dynamo.reset()
    torch._dynamo.utils.counters.clear()
    sb = SelectiveBackprop(start=0.0, end=1.0, keep=0.5, scale_factor=0.5, interrupt=2)
    graphs = GraphCounts()
    trainer = Trainer(
        tiny_model(),
        tiny_loader(n=64, batch_size=16),
        "8ba",
        algorithms=[sb],
        callbacks=[graphs],
        precision="amp_bf16",
        device="cuda",
        compile="reduce-overhead",
        seed=0,
    )
    trainer.fit()
    assert torch.isfinite(trainer.state.loss) and sb.last_num_kept == 8
    assert graphs.graphs[1] == graphs.graphs[-1] == 3, graphs.graphs


def channels_last_collate(samples):
    inputs, targets = torch.utils.data.default_collate(samples)
    return inputs.contiguous(memory_format=torch.channels_last), targets


@pytest.mark.parametrize("precision", ["fp32", "amp_bf16"])
def test_channels_last_model_and_inputs(precision):
    model = tiny_model().to(memory_format=torch.channels_last)
    dataset = tiny_dataset(64)
    loader = DataLoader(
        dataset,
        batch_size=16,
        sampler=DistributedSampler(dataset, num_replicas=1, rank=0, seed=0),
        collate_fn=channels_last_collate,
    )
    sb = SelectiveBackprop(start=0.0, end=1.0, interrupt=0)
    trainer = Trainer(model, loader, "4ba", algorithms=[sb], precision=precision, device="cuda", seed=0)
    trainer.fit()
    conv = trainer.state.model.module[0].weight
    assert conv.is_cuda and conv.is_contiguous(memory_format=torch.channels_last)
    assert torch.isfinite(trainer.state.loss) and sb.last_num_kept == 8


def cuda_trainer(tmp_path, folder, seed=0, **kwargs):
    model = tiny_model(seed=0)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    return Trainer(
        model,
        tiny_loader(n=64, batch_size=16),
        "3ep",
        eval_dataloader=tiny_loader(n=16),
        algorithms=[SelectiveBackprop(start=0.2, end=0.9, keep=0.5, scale_factor=0.5, interrupt=2)],
        optimizers=optimizer,
        schedulers=torch.optim.lr_scheduler.StepLR(optimizer, step_size=5, gamma=0.5),
        precision="amp_fp16",
        device="cuda",
        save_folder=tmp_path / folder,
        save_interval="3ba",
        seed=seed,
        **kwargs,
    )


def test_checkpoint_saved_on_cuda_resumes_on_cuda_with_amp_fp16(tmp_path, monkeypatch):
    # cuDNN may pick non-deterministic kernels; ask for deterministic ones so only atomics can differ.
    monkeypatch.setattr(torch.backends.cudnn, "deterministic", True)
    monkeypatch.setattr(torch.backends.cudnn, "benchmark", False)
    full = cuda_trainer(tmp_path, "full")
    full.fit()
    payload = load_checkpoint(tmp_path / "full" / "ep1-ba6.pt")
    assert payload["rng"]["cuda"], "the CUDA generator state was not saved"
    assert payload["state"]["scaler"] is not None and payload["state"]["scaler"]["scale"] > 0
    assert all(not t.is_cuda for t in payload["state"]["model"].values())  # map_location='cpu'

    resumed = cuda_trainer(tmp_path, "resumed", seed=999, load_path=tmp_path / "full" / "ep1-ba6.pt")
    assert resumed.state.timestamp.batch == 6
    assert resumed.state.scaler.state_dict() == payload["state"]["scaler"]
    params = list(resumed.state.model.parameters())
    assert all(p.is_cuda for p in params)
    assert all(resumed.state.optimizers[0].state[p]["momentum_buffer"].is_cuda for p in params)
    resumed.fit()
    assert resumed.state.timestamp.batch == full.state.timestamp.batch == 12
    assert resumed.state.scaler.state_dict() == full.state.scaler.state_dict()
    for key, value in full.state.model.state_dict().items():
        torch.testing.assert_close(resumed.state.model.state_dict()[key], value, rtol=1e-4, atol=1e-5, msg=key)


def one_rank_nccl(rank, init_file, out_file):
    torch.cuda.set_device(0)
    dist.init_process_group(
        "nccl", init_method=f"file://{init_file}", rank=0, world_size=1, timeout=datetime.timedelta(seconds=60)
    )
    try:
        from raycomp.data import SyntheticCIFAR, build_dataloader
        from raycomp.models import build_model

        sb = SelectiveBackprop(start=0.0, end=1.0, interrupt=0)
        trainer = Trainer(
            build_model("cnn"),
            build_dataloader(SyntheticCIFAR(128, "train"), 32, seed=0),
            "4ba",
            eval_dataloader=build_dataloader(SyntheticCIFAR(64, "test"), 32, shuffle=False),
            algorithms=[sb],
            precision="amp_bf16",
            seed=0,
        )
        trainer.fit()
        total = torch.ones(1, device="cuda")
        dist.all_reduce(total)  # the NCCL communicator itself works
        torch.save(
            {
                "nccl_sum": total.item(),
                "device": str(trainer.device),
                "world_size": trainer.state.world_size,
                "backend": dist.get_backend(),
                "loss": float(trainer.state.loss),
                "kept": sb.last_num_kept,
                "samples": trainer.state.timestamp.sample,
                "accuracy": trainer.state.eval_metrics["eval/accuracy"],
            },
            out_file,
        )
    finally:
        dist.destroy_process_group()


@pytest.mark.skipif(torch.cuda.is_available() and not dist.is_nccl_available(), reason="needs NCCL")
def test_fit_under_a_one_rank_nccl_group(tmp_path):
    mp.spawn(one_rank_nccl, args=(str(tmp_path / "init"), str(tmp_path / "out.pt")), nprocs=1, join=True)
    result = torch.load(tmp_path / "out.pt")
    assert result["device"] == "cuda:0" and result["world_size"] == 1 and result["backend"] == "nccl"
    assert result["nccl_sum"] == 1.0
    assert result["kept"] == 16 and result["samples"] == 4 * 16
    assert 0 <= result["accuracy"] <= 1 and result["loss"] == result["loss"]
