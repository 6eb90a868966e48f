"""Every code example of Composer's algorithms page (shared/seeds/002), run with ``composer`` replaced by ``raycomp``.

Each test quotes its example as the page shows it; the lines that had to change say why in a comment. What
they need from around them (``mean``, ``model``, a dataloader, ...) is made small and local first. The
page's commented-out examples (the event pseudocode and ``MyAlgorithm``, which are not rendered) are left out.
"""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from raycomp.algorithms.blurpool_layers import BlurConv2d, BlurMaxPool2d
from raycomp.algorithms.randaugment_transform import RandAugmentTransform

NUM_IMAGES = 20


def write_image_folder(root: Path, num_classes: int = 2) -> Path:
    """``root/class_k/i.png``: 32x32 RGB images, CIFAR-10's size, for torchvision's ImageFolder."""
    rng = np.random.default_rng(0)
    for i in range(NUM_IMAGES):
        folder = root / f"class_{i % num_classes}"
        folder.mkdir(parents=True, exist_ok=True)
        Image.fromarray(rng.integers(0, 256, (32, 32, 3), dtype=np.uint8)).save(folder / f"{i}.png")
    return root


def image_batches(num_classes: int = 10, n: int = 16, batch_size: int = 8) -> DataLoader:
    generator = torch.Generator().manual_seed(0)
    images, labels = torch.randn(n, 3, 32, 32, generator=generator), torch.arange(n) % num_classes
    return DataLoader(TensorDataset(images, labels), batch_size=batch_size)


def test_data_augmentation_randaugment_in_a_dataset_transform(tmp_path):
    mean, std = (0.4914, 0.4822, 0.4465), (0.2470, 0.2435, 0.2616)
    data_root = write_image_folder(tmp_path / "data")

    import torch
    from torchvision import datasets, transforms

    from raycomp import functional as cf

    c10_transforms = transforms.Compose([cf.randaugment(), # <---- Add RandAugment
                                        transforms.ToTensor(),
                                        transforms.Normalize(mean, std)])  # fmt: skip

    # The page reads datasets.CIFAR10('../data', train=True, download=True, ...): that downloads, and
    # CIFAR10 checks its files' MD5 sums, so no stand-in files pass. ImageFolder reads the same kind of
    # PIL images from local files through the same transform.
    dataset = datasets.ImageFolder(data_root,
                            transform=c10_transforms)  # fmt: skip
    dataloader = torch.utils.data.DataLoader(dataset, batch_size=1024)

    images, labels = next(iter(dataloader))
    assert images.shape == (NUM_IMAGES, 3, 32, 32) and labels.shape == (NUM_IMAGES,)
    assert isinstance(c10_transforms.transforms[0], RandAugmentTransform)
    plain = transforms.Compose(c10_transforms.transforms[1:])
    assert not torch.allclose(images, torch.stack([plain(dataset.loader(path)) for path, _ in dataset.samples]))


def test_data_augmentation_cutmix_in_a_training_loop():
    dataloader = image_batches()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()
    before = [p.detach().clone() for p in model.parameters()]

    from raycomp import functional as cf

    cutmix_alpha = 1
    num_classes = 10
    for batch_idx, (data, target) in enumerate(dataloader):  # noqa: B007 (the page's loop)
        data = cf.cutmix(
            data,
            target,
            alpha=cutmix_alpha,
            num_classes=num_classes
        )  # fmt: skip
        optimizer.zero_grad()
        output = model(data)
        loss = loss_fn(output, target)
        loss.backward()
        optimizer.step()

    assert batch_idx == 1 and torch.isfinite(loss)
    assert all(not torch.equal(a, b) for a, b in zip(before, model.parameters(), strict=True))
    # What cf.cutmix returns: the batch with one box pasted from other examples, labels left to the caller.
    images, labels = next(iter(dataloader))
    mixed = cf.cutmix(images, labels, alpha=cutmix_alpha, num_classes=num_classes)
    changed = (mixed != images).any(dim=(0, 1))
    rows, columns = changed.any(dim=1).nonzero().flatten(), changed.any(dim=0).nonzero().flatten()
    if changed.any():  # a drawn box may be empty
        box = changed[rows.min() : rows.max() + 1, columns.min() : columns.max() + 1]
        assert box.float().mean() > 0.9 and changed.sum() == box.sum()
    with pytest.raises(ValueError, match=r"class ids in \[0, 10\), got values from 0 to 12"):
        cf.cutmix(images, torch.tensor([0, 12] * 4), alpha=1, num_classes=10)


def test_model_surgery_blurpool_on_a_torchvision_resnet18():
    from raycomp import functional as cf  # noqa: I001 (the page's order)
    import torchvision.models as models

    model = models.resnet18()
    cf.apply_blurpool(model)

    blurred = [name for name, module in model.named_modules() if isinstance(module, BlurConv2d | BlurMaxPool2d)]
    assert blurred == [
        "maxpool",  # the stem's 3-channel conv has fewer than min_channels=16 inputs, as in Composer
        "layer2.0.conv1",
        "layer2.0.downsample.0",
        "layer3.0.conv1",
        "layer3.0.downsample.0",
        "layer4.0.conv1",
        "layer4.0.downsample.0",
    ]
    model.eval()
    assert model(torch.randn(2, 3, 64, 64)).shape == (2, 1000)


def test_model_surgery_alibi_on_a_hugging_face_gpt2():
    pytest.importorskip("transformers")  # the nlp extra
    from raycomp import functional as cf  # noqa: I001 (the page's order)
    from raycomp.algorithms.alibi.gpt2_alibi import _attn
    from raycomp.algorithms.alibi.gpt2_alibi import enlarge_mask

    from transformers import GPT2Model
    from transformers.models.gpt2.modeling_gpt2 import GPT2Attention

    # The page loads pretrained weights, a download, into a bare GPT2Model, and then names the position
    # embedding "module.transformer.wpe", which a bare GPT2Model (whose embedding is `wpe`) does not have: that
    # path is a GPT2LMHeadModel's inside Composer's wrapper (ComposerTransformer.module), as it is inside
    # raycomp's LanguageModel. So: a small randomly initialised GPT-2 with the page's 12 heads, wrapped.
    from transformers import GPT2Config, GPT2LMHeadModel

    from raycomp.models import LanguageModel

    torch.manual_seed(0)
    config = GPT2Config(vocab_size=256, n_positions=32, n_embd=48, n_layer=2, n_head=12, use_cache=False)
    model = LanguageModel(GPT2LMHeadModel(config))

    cf.apply_alibi(
        model=model,
        heads_per_layer=12,
        max_sequence_length=8192,
        position_embedding_attribute="module.transformer.wpe",
        attention_module=GPT2Attention,
        attr_to_replace="_attn",
        alibi_attention=_attn,
        mask_replacement_function=enlarge_mask
    )  # fmt: skip

    transformer = model.module.transformer
    assert isinstance(transformer, GPT2Model)
    assert transformer.wpe.weight.shape == (8192, 48) and not transformer.wpe.weight.any()
    assert not transformer.wpe.weight.requires_grad
    tokens = torch.randint(0, 256, (2, 100))  # longer than the 32 positions the model was built with
    with torch.no_grad():
        logits = model.eval()((tokens, tokens))
    assert logits.shape == (2, 100, 256) and torch.isfinite(logits).all()


def test_trainer_with_channels_last_and_blurpool():
    from torchvision import models

    torch.manual_seed(0)
    model = models.resnet18()  # the page's model, a plain nn.Module: the Trainer trains it as a classifier
    # One batch per epoch and half a batch to evaluate: the page's 10 epochs of ResNet-18 stay as written.
    train_dataloader, test_dataloader = image_batches(n=8), image_batches(n=4)

    from raycomp import Trainer
    from raycomp.algorithms import BlurPool, ChannelsLast

    trainer = Trainer(
        model=model,
        algorithms=[ChannelsLast(), BlurPool()],  # the page lacks this comma: a SyntaxError as printed
        train_dataloader=train_dataloader,
        eval_dataloader=test_dataloader,
        max_duration='10ep',
    )  # fmt: skip

    trainer.fit()
    assert trainer.state.timestamp.epoch == 10 and torch.isfinite(trainer.state.loss)
    assert any(isinstance(module, BlurConv2d) for module in model.modules())
    assert trainer.state.model.module is model  # wrapped, not copied: the surgery changed the page's model
    assert model.conv1.weight.is_contiguous(memory_format=torch.channels_last)
