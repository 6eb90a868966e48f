"""SelectiveBackprop's BatchNorm statistics (issues 12 and 24): eval accuracy against BN-recalibrated accuracy.

SB always on trains every step on the hardest half of the batch. Its running BatchNorm statistics come from
the selection pass over the full batch (and, when that pass is downsampled, from the kept half too), so
evaluation with them should score about what it scores with statistics recomputed over every full training
batch. A small case (the cnn model on synthetic CIFAR-shaped data, 16x16 images, 1,024 samples, 3 epochs,
SGD at lr 0.1 decaying linearly to 0 as raycomp's recipes decay it), over 5 seeds: the gap is noisy per
seed (500 test samples: one point is 5 images), so the median is compared.
"""

import copy
import datetime
import statistics

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from helpers import leave_rank, tiny_dataset, tiny_model
from torch.utils.data import DataLoader, DistributedSampler

from raycomp import Trainer
from raycomp.algorithms import SelectiveBackprop
from raycomp.algorithms.batchnorm import recalibrate_batchnorm
from raycomp.data.synthetic import SyntheticCIFAR
from raycomp.models import build_model


@pytest.fixture(autouse=True)
def one_thread():
    """One torch thread: several are slower on a loaded 2-core machine, and the run is then reproducible."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def loader(dataset, batch_size, shuffle):
    return DataLoader(dataset, batch_size, sampler=DistributedSampler(dataset, 1, 0, shuffle=shuffle, seed=0))


@torch.no_grad()
def accuracy(model, eval_loader):
    model.eval()
    correct = sum((model((x, y)).argmax(-1) == y).sum().item() for x, y in eval_loader)
    return correct / len(eval_loader.dataset)


def recalibration_gap(scale_factor, seed):
    """Points of eval accuracy that recomputing the statistics over all training batches adds, after SB always on."""
    train_loader = loader(SyntheticCIFAR(1024, "train", image_size=16), 64, shuffle=True)
    eval_loader = loader(SyntheticCIFAR(500, "test", image_size=16), 500, shuffle=False)
    torch.manual_seed(seed)
    model = build_model("cnn")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    steps = 3 * len(train_loader)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1 - step / steps)
    sb = SelectiveBackprop(0, 1, 0.5, scale_factor, 0)
    trainer = Trainer(
        model,
        train_loader,
        "3ep",
        eval_dataloader=eval_loader,
        algorithms=[sb],
        optimizers=optimizer,
        schedulers=schedule,
        step_schedulers_every_batch=True,
        seed=seed,
        progress_bar=False,
    )
    trainer.fit()
    recalibrated = copy.deepcopy(trainer.state.model)
    recalibrate_batchnorm(recalibrated, train_loader)  # every training batch, full and unpruned
    return 100 * (accuracy(recalibrated, eval_loader) - trainer.state.eval_metrics["eval/accuracy"])


@pytest.mark.parametrize(
    ("scale_factor", "max_median_gap"),
    [
        (1.0, 1.0),  # measured: gaps 0.8, 0.4, 2.0, 3.0, -1.2 (median 0.8); no SB: 1.0, 0.2, -1.0, -0.6, -0.4
        # measured: 2.8, -0.4, 2.6, 0.8, 1.2 (median 1.2); from the downsampled pass alone 10.4, 1.6, 5.2, 4.8, 2.6
        (0.5, 2.0),
    ],
)
def test_sb_always_on_is_scored_close_to_its_recalibrated_accuracy(scale_factor, max_median_gap):
    gaps = [recalibration_gap(scale_factor, seed) for seed in range(5)]
    print(f"scale_factor {scale_factor}: gaps {gaps}")
    assert statistics.median(gaps) <= max_median_gap


def run_rank(rank, world_size, init_file, out_dir):
    dist.init_process_group(
        "gloo", init_method=f"file://{init_file}", rank=rank, world_size=world_size, timeout=datetime.timedelta(60)
    )
    try:
        dataset = tiny_dataset(64)
        train_loader = DataLoader(dataset, batch_size=8, sampler=DistributedSampler(dataset, shuffle=True, seed=0))
        model = tiny_model()
        sb = SelectiveBackprop(0, 1, 0.5, 0.5, 0)
        Trainer(model, train_loader, "2ep", eval_dataloader=train_loader, algorithms=[sb], device="cpu", seed=0).fit()
        torch.save(model.state_dict(), f"{out_dir}/rank{rank}.pt")
    finally:
        dist.destroy_process_group()
    leave_rank()


@pytest.mark.spawns
def test_under_ddp_every_rank_ends_with_rank_0s_recomputed_statistics(tmp_path):
    """Each rank's selection pass moves its statistics from its own shard; the Trainer's buffer sharing after
    every step leaves the ranks with the same ones: rank 0's, which its checkpoint keeps."""
    mp.spawn(run_rank, args=(2, str(tmp_path / "init"), str(tmp_path)), nprocs=2, join=True)
    ranks = [torch.load(tmp_path / f"rank{r}.pt") for r in range(2)]
    for key, value in ranks[0].items():
        assert torch.equal(value, ranks[1][key]), key
