import pytest
import torch
from torch.nn import functional as F

from raycomp.data import SyntheticCIFAR
from raycomp.models import SmallCNN


def test_shapes_and_dtypes() -> None:
    ds = SyntheticCIFAR(50)
    assert len(ds) == 50
    image, label = ds[3]
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32
    assert label.dtype == torch.int64 and label.ndim == 0
    assert ds.images.shape == (50, 3, 32, 32)
    assert ds.targets.shape == ds.is_hard.shape == ds.is_noisy.shape == (50,)
    assert ds.is_hard.dtype == ds.is_noisy.dtype == torch.bool
    assert int(ds.targets.min()) >= 0 and int(ds.targets.max()) < 10


def test_image_size_and_num_classes() -> None:
    ds = SyntheticCIFAR(20, num_classes=3, image_size=16)
    assert ds.images.shape == (20, 3, 16, 16)
    assert int(ds.targets.max()) < 3


def test_same_seed_same_data() -> None:
    a, b = SyntheticCIFAR(100, seed=3), SyntheticCIFAR(100, seed=3)
    assert torch.equal(a.images, b.images)
    assert torch.equal(a.targets, b.targets)
    assert torch.equal(a.is_hard, b.is_hard) and torch.equal(a.is_noisy, b.is_noisy)


def test_different_seed_different_data() -> None:
    a, b = SyntheticCIFAR(100, seed=0), SyntheticCIFAR(100, seed=1)
    assert not torch.equal(a.images, b.images)
    assert not torch.equal(a.prototypes, b.prototypes)


def test_splits_share_prototypes_not_samples() -> None:
    train, test = SyntheticCIFAR(100, "train", seed=0), SyntheticCIFAR(100, "test", seed=0)
    assert torch.equal(train.prototypes, test.prototypes)
    assert not torch.equal(train.images, test.images)


def test_label_noise_in_train_only() -> None:
    train = SyntheticCIFAR(1000, "train", label_noise=0.1)
    test = SyntheticCIFAR(1000, "test", label_noise=0.1)
    assert int(train.is_noisy.sum()) == 100
    assert bool((train.targets != train.clean_targets).eq(train.is_noisy).all())
    assert int(test.is_noisy.sum()) == 0
    assert torch.equal(test.targets, test.clean_targets)


def test_hard_fraction_in_both_splits() -> None:
    for split in ("train", "test"):
        assert int(SyntheticCIFAR(1000, split, hard_fraction=0.3).is_hard.sum()) == 300


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="split"):
        SyntheticCIFAR(10, "val")
    with pytest.raises(ValueError, match="label_noise"):
        SyntheticCIFAR(10, label_noise=1.5)


@pytest.mark.measured
def test_is_learnable_and_hard_examples_have_higher_loss() -> None:
    # A short real training run: easy examples should be learned, hard/noisy ones left with high loss.
    torch.manual_seed(0)
    train, test = SyntheticCIFAR(1000, "train"), SyntheticCIFAR(500, "test")
    model = SmallCNN(width=16)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(5):
        for idx in torch.randperm(len(train)).split(100):
            opt.zero_grad()
            F.cross_entropy(model(train.images[idx]), train.targets[idx]).backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(test.images).argmax(1) == test.targets).float().mean().item()
        losses = F.cross_entropy(model(train.images), train.targets, reduction="none")
    # Bounds against seeds 0-9 x kernels default/SSE4.1, AVX2, AVX-512 (issue 29), each at least 3 sd (over all 30
    # runs) from seed 0's value: accuracy 0.804-0.920 (sd 0.035; seed 0 0.822, 3.5 sd above 0.7); hard/easy loss
    # 4.9-7.5 (sd 0.83; seed 0 5.76); noisy/hard 2.50-4.06 (sd 0.42; seed 0 2.50, the lowest: 1.5 was 2.4 sd
    # away, so 1.2). Kernels moved each by < 0.03.
    assert accuracy > 0.7
    easy = ~train.is_hard & ~train.is_noisy
    assert losses[train.is_hard].mean() > 1.5 * losses[easy].mean()
    assert losses[train.is_noisy].mean() > 1.2 * losses[train.is_hard].mean()
