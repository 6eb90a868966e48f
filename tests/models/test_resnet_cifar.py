import pytest
import torch

from raycomp.models.resnet_cifar import resnet20, resnet56, resnet_cifar


def _num_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def test_parameter_counts_match_he_et_al() -> None:
    # He et al. 2016, Table 6: ResNet-20 0.27M, ResNet-56 0.85M (option-B shortcuts add ~3k).
    assert _num_params(resnet20()) == pytest.approx(0.27e6, rel=0.02)
    assert _num_params(resnet56()) == pytest.approx(0.85e6, rel=0.02)


@pytest.mark.parametrize("size", [32, 16])
def test_output_shape(size: int) -> None:
    model = resnet20(num_classes=10).eval()
    assert model(torch.randn(2, 3, size, size)).shape == (2, 10)


def test_depth_counts_weighted_layers() -> None:
    model = resnet_cifar(32)
    convs = [m for m in model.modules() if isinstance(m, torch.nn.Conv2d) and m.kernel_size == (3, 3)]
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)]
    assert len(convs) + len(linears) == 32


@pytest.mark.parametrize("depth", [0, 2, 19, 21])
def test_bad_depth_is_rejected(depth: int) -> None:
    with pytest.raises(ValueError, match="6n"):
        resnet_cifar(depth)


@pytest.mark.measured
def test_resnet20_trains_a_step() -> None:
    torch.manual_seed(0)
    model = resnet20(num_classes=3)
    x, y = torch.randn(8, 3, 16, 16), torch.randint(0, 3, (8,))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(5):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    # The 5 steps' drop was 0.97-1.50 over seeds 0-4 x kernels default, AVX2, AVX-512 (issue 29; sd 0.20, kernels
    # < 0.001): seed 0's 1.01 is 5 sd above the bound 0.
    assert losses[-1] < losses[0]
