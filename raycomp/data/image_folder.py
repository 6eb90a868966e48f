"""``data: {name: image_folder, root: DIR}``: a folder of images per class, read by torchvision's ``ImageFolder``.

``root/train/<class>/*.png`` trains and ``root/val/<class>/*.png`` evaluates, with the usual ImageNet-style
transforms of ``torchvision.transforms.v2`` scaled to ``image_size``: a random resized crop and a flip for
training, a resize and a centre crop for evaluation, both normalised with ImageNet's mean and deviation.
The eval set takes the training set's class indices, so a ``val/`` lacking a class still labels the rest
right; a class only ``val/`` has is refused. Nothing is downloaded.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

from torch.utils.data import Dataset

from raycomp.base.errors import one_line

SPLITS = ("train", "val")
IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp")  # ImageFolder's
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
_RESIZE_RATIO = 256 / 224  # eval: resize the short side to this times image_size, then crop image_size


def class_folders(folder: Path) -> list[str]:
    """The class names in one split's folder: its subfolders, sorted (ImageFolder's own order)."""
    return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir() and not entry.name.startswith("."))


def folder_problems(root: str | None) -> list[str]:
    """What is wrong with ``root`` as an image folder, each a line for ``data.root`` (none: it reads)."""
    if root is None:
        return ["required when data.name is 'image_folder' (a folder holding train/ and val/, a subfolder per class)"]
    base = Path(root)
    if not base.is_dir():
        return [f"{root} is not a folder (image_folder needs one holding train/ and val/, a subfolder per class)"]
    missing = [split for split in SPLITS if not (base / split).is_dir()]
    if missing:
        return [f"{root} has no {' nor '.join(m + '/' for m in missing)} folder (image_folder reads train/ and val/)"]
    train, val = (class_folders(base / split) for split in SPLITS)
    if not train:
        return [f"{base / 'train'} has no class subfolders (one folder of images per class)"]
    unknown = [name for name in val if name not in train]
    if unknown:
        return [f"{base / 'val'} has classes train/ lacks: {', '.join(unknown[:5])}"]
    empty = [name for name in train if not _holds_image(base / "train" / name)]
    if empty:
        listed = ", ".join(empty[:5])
        return [f"{base / 'train'} has class folders without images: {listed} (give each an image, or remove it)"]
    if not any(_holds_image(base / "val" / name) for name in val):
        return [f"{base / 'val'} holds no images: the eval set would be empty (add images per class under it)"]
    return []


def _holds_image(folder: Path) -> bool:
    """Whether ``folder`` (or a folder in it) holds a file ``ImageFolder`` reads; stops at the first."""
    for _, _, files in os.walk(folder, followlinks=True):
        if any(name.lower().endswith(IMAGE_EXTENSIONS) for name in files):
            return True
    return False


def undecodable_image(dataset: Any) -> str | None:
    """The first image of each class of an ``ImageFolder``, decoded as training decodes it: the first that
    fails, with the error (None: all decode). One per class, so a corrupt file elsewhere is found only in training."""
    seen: set[int] = set()
    for path, label in dataset.samples:
        if label in seen:
            continue
        seen.add(label)
        try:
            dataset.loader(path)
        except Exception as error:
            return f"{path} cannot be decoded ({one_line(error)}): replace or remove it"
    return None


def transforms(image_size: int, train: bool) -> Any:
    """The v2 transform of a split: augmenting crops for training, a deterministic centre crop for eval."""
    from raycomp.base.torchvision_shim import import_torchvision

    v2 = import_torchvision("torchvision.transforms.v2")
    import torch

    tail = [v2.ToImage(), v2.ToDtype(torch.float32, scale=True), v2.Normalize(IMAGENET_MEAN, IMAGENET_STD)]
    if train:
        head = [v2.RandomResizedCrop(image_size, antialias=True), v2.RandomHorizontalFlip()]
    else:
        head = [v2.Resize(round(image_size * _RESIZE_RATIO), antialias=True), v2.CenterCrop(image_size)]
    return v2.Compose([v2.RGB(), *head, *tail])


def image_folder_datasets(root: str, image_size: int) -> tuple[Dataset, Dataset]:
    """``(train, eval)`` ``ImageFolder``s of ``root``; eval labelled with the training set's class indices."""
    problems = folder_problems(root)
    if problems:
        raise ValueError(f"data.root: {problems[0]}")
    from raycomp.data.labelled_folder import LabelledFolder

    train = LabelledFolder(os.path.join(root, "train"), transform=transforms(image_size, train=True))
    val = LabelledFolder(
        os.path.join(root, "val"), transform=transforms(image_size, train=False), classes=train.class_to_idx
    )
    return train, val


@functools.cache
def train_size(root: str) -> int:
    """Training images under ``root/train`` (ImageFolder's count, without opening any)."""
    from raycomp.data.labelled_folder import LabelledFolder

    return len(LabelledFolder(os.path.join(root, "train")))
