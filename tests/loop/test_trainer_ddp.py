"""The Trainer under a real two-process gloo group: DDP gradients, and a stop decided by all ranks."""

import datetime

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import leave_rank, tiny_dataset
from torch import nn
from torch.utils.data import DataLoader, DistributedSampler

from raycomp import Callback, Trainer
from raycomp.models.base import ClassifierModel


def linear_model():
    torch.manual_seed(0)
    return ClassifierModel(nn.Sequential(nn.Flatten(), nn.Linear(3 * 8 * 8, 4)))


def loader(batch_size):
    dataset = tiny_dataset(64)
    return DataLoader(dataset, batch_size=batch_size, sampler=DistributedSampler(dataset, shuffle=True, seed=0))


class StopOnRankOne(Callback):
    def batch_end(self, state, logger):
        if state.rank == 1 and state.step == 2:
            state.request_stop()


def run_rank(rank, world_size, init_file, out_dir, stop):
    dist.init_process_group(
        "gloo",
        init_method=f"file://{init_file}",
        rank=rank,
        world_size=world_size,
        timeout=datetime.timedelta(seconds=60),
    )
    try:
        model = linear_model()
        callbacks = [StopOnRankOne()] if stop else []
        trainer = Trainer(model, loader(batch_size=8), "2ep", callbacks=callbacks, eval_dataloader=loader(8), seed=0)
        trainer.fit()
        torch.save(
            {
                "weights": model.state_dict(),
                "step": trainer.state.step,
                "sample": trainer.state.timestamp.sample,
                "eval": trainer.state.eval_metrics,
                "ddp": type(trainer.train_model).__name__,
            },
            f"{out_dir}/rank{rank}.pt",
        )
    finally:
        dist.destroy_process_group()
    leave_rank()


def spawn(tmp_path, stop=False):
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(tmp_path), stop), nprocs=2, join=True)
    return [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]


@pytest.mark.spawns
@pytest.mark.measured
def test_two_ranks_match_one_process_with_the_global_batch(tmp_path):
    ranks = spawn(tmp_path)
    assert [r["ddp"] for r in ranks] == ["DistributedDataParallel"] * 2
    single_model = linear_model()
    dataset = tiny_dataset(64)
    single_loader = DataLoader(
        dataset, batch_size=16, sampler=DistributedSampler(dataset, num_replicas=1, rank=0, shuffle=True, seed=0)
    )
    Trainer(single_model, single_loader, "2ep", seed=0).fit()
    # Two means of 8 against one of 16 round differently. Over seeds 0-4 x kernels default, AVX2, AVX-512 (issue
    # 29) the largest difference took 0.10-1.80 of rtol=1e-5, atol=1e-6 (seed 0: 0.10-0.13; seeds 1 and 3 failed
    # under the default kernels), so the tolerance is 10 times that: at most 0.18 of it used (sd 0.05); a wrong
    # averaging (a sum, one rank's half) is off by a factor.
    for key, value in single_model.state_dict().items():
        torch.testing.assert_close(ranks[0]["weights"][key], ranks[1]["weights"][key], rtol=0, atol=0)
        torch.testing.assert_close(ranks[0]["weights"][key], value, rtol=1e-4, atol=1e-5)
    assert ranks[0]["sample"] == ranks[1]["sample"] == 128  # samples counted over both ranks
    assert ranks[0]["eval"] == ranks[1]["eval"]  # eval metrics reduced over ranks


@pytest.mark.spawns
def test_a_stop_requested_on_one_rank_stops_every_rank(tmp_path):
    ranks = spawn(tmp_path, stop=True)
    assert [r["step"] for r in ranks] == [2, 2]
