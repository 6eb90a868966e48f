import pytest
import torch
from torch.utils.data import DistributedSampler, TensorDataset

from raycomp.data import DATASET_NAMES, SyntheticCIFAR, build_dataloader, build_datasets


def _dataset(n: int = 40) -> TensorDataset:
    return TensorDataset(torch.arange(n), torch.zeros(n, dtype=torch.int64))


def _epoch_order(loader, epoch: int) -> list[int]:
    loader.sampler.set_epoch(epoch)
    return [int(i) for xs, _ in loader for i in xs]


def test_uses_a_distributed_sampler_with_world_one() -> None:
    loader = build_dataloader(_dataset(), batch_size=8, seed=5)
    assert isinstance(loader.sampler, DistributedSampler)
    assert loader.sampler.num_replicas == 1 and loader.sampler.rank == 0
    assert loader.sampler.seed == 5


def test_each_epoch_covers_every_index_once() -> None:
    loader = build_dataloader(_dataset(42), batch_size=8)
    for epoch in range(2):
        assert sorted(_epoch_order(loader, epoch)) == list(range(42))


def test_order_depends_only_on_seed_and_epoch() -> None:
    a = build_dataloader(_dataset(), batch_size=8, seed=1)
    b = build_dataloader(_dataset(), batch_size=8, seed=1)
    torch.manual_seed(123)  # the global RNG must not matter
    order_a = [_epoch_order(a, 0), _epoch_order(a, 1)]
    torch.manual_seed(456)
    order_b = [_epoch_order(b, 0), _epoch_order(b, 1)]
    assert order_a == order_b
    assert order_a[0] != order_a[1]
    assert _epoch_order(build_dataloader(_dataset(), batch_size=8, seed=2), 0) != order_a[0]


def test_no_shuffle_and_drop_last() -> None:
    loader = build_dataloader(_dataset(42), batch_size=8, shuffle=False, drop_last=True)
    batches = [xs.tolist() for xs, _ in loader]
    assert len(batches) == 5 and all(len(b) == 8 for b in batches)
    assert batches[0] == list(range(8))


def test_build_datasets_synthetic() -> None:
    train, test = build_datasets("synthetic", num_train=64, num_test=32, seed=4)
    assert isinstance(train, SyntheticCIFAR) and isinstance(test, SyntheticCIFAR)
    assert (len(train), len(test)) == (64, 32)
    assert (train.split, test.split) == ("train", "test")
    assert torch.equal(train.images, SyntheticCIFAR(64, "train", seed=4).images)


def test_build_datasets_errors() -> None:
    assert DATASET_NAMES == ("synthetic", "cifar10", "stdlib_text", "text_files", "image_folder", "hf_dataset")
    with pytest.raises(ValueError, match="root"):
        build_datasets("cifar10")
    with pytest.raises(ValueError, match=r"'mnist'.*synthetic, cifar10"):
        build_datasets("mnist")


@pytest.mark.spawns  # DataLoader workers
def test_stop_workers_ends_a_persistent_loaders_processes_now() -> None:
    """A reused Tune actor must not carry one trial's DataLoader workers into the next (loaders.py)."""
    import psutil

    from raycomp.loop.batching import stop_workers

    before = {child.pid for child in psutil.Process().children()}  # a session's Ray, say
    loader = build_dataloader(_dataset(), batch_size=8, num_workers=2)
    assert sorted(_epoch_order(loader, 0)) == list(range(40))
    workers = [child for child in psutil.Process().children() if child.pid not in before]
    assert len(workers) >= 2  # persistent: alive after the epoch
    stop_workers([loader, None])
    assert not any(worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE for worker in workers)
    assert sorted(_epoch_order(loader, 1)) == list(range(40))  # the loader still works: new workers
    stop_workers([loader])
