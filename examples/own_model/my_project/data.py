"""The user's data, two ways raycomp accepts: a function returning ``(train, eval)`` Datasets, named as
``data: {class_path: my_project.data.colour_squares, init_args: {...}}``, and a class with
``train_dataloader()``/``val_dataloader()`` (a LightningDataModule works the same way). Also
``write_image_folder``, which writes PNGs for ``data: {name: image_folder, root: ...}``: nothing downloads."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.data import DataLoader, TensorDataset


def colour_squares(
    num_train: int = 256, num_eval: int = 128, num_classes: int = 4, size: int = 16, seed: int = 0
) -> tuple[TensorDataset, TensorDataset]:
    """Noisy images whose mean colour tells the class: learnable in a few steps."""
    generator = torch.Generator().manual_seed(seed)

    def split(n: int) -> TensorDataset:
        labels = torch.randint(0, num_classes, (n,), generator=generator)
        images = torch.randn(n, 3, size, size, generator=generator) + labels.view(-1, 1, 1, 1) * 0.75
        return TensorDataset(images, labels)

    return split(num_train), split(num_eval)


class ColourSquaresModule:
    """The same data as a data module: raycomp calls ``setup("fit")`` and then the two loader methods."""

    def __init__(self, batch_size: int = 32, **sizes: int) -> None:
        self.batch_size, self.sizes = batch_size, sizes
        self.train = self.val = None

    def setup(self, stage: str) -> None:
        self.train, self.val = colour_squares(**self.sizes)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val, batch_size=self.batch_size)


def write_image_folder(
    root: str | Path, num_classes: int = 3, per_class: tuple[int, int] = (24, 8), size: int = 24
) -> Path:
    """``root/train/<class>/*.png`` and ``root/val/<class>/*.png``: coloured noise, one hue per class."""
    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(0)
    root = Path(root)
    for split, count in zip(("train", "val"), per_class, strict=True):
        for label in range(num_classes):
            folder = root / split / f"class_{label}"
            folder.mkdir(parents=True, exist_ok=True)
            colour = np.zeros(3)
            colour[label % 3] = 160
            for index in range(count):
                pixels = np.clip(rng.normal(colour + 40, 40, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{index}.png")
    return root


if __name__ == "__main__":
    import sys

    print(write_image_folder(sys.argv[1] if len(sys.argv) > 1 else "images"))
