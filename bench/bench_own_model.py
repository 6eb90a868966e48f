"""The Trainer's overhead on a user's model and data: torchvision's resnet18 named by ``class_path``, on an
image folder of PNGs read by ``data.name: image_folder``, against a hand-written PyTorch loop over the same
loader (results in docs/benchmarks.md).

Both sides train the same network from the same initial weights on the same batches (the recipe's loader:
ImageFolder decoding and the transforms.v2 augmentations, in the training process), with SGD and a
constant learning rate, no evaluation, no checkpoints. The hand loop calls the torchvision module and
cross-entropy directly; the Trainer gets the config's model (``build_model_for``: the module wrapped as a
classifier). Sides alternate order every repeat; the ratio is the median of per-repeat ratios.

    python bench/bench_own_model.py              # the run quoted in docs/benchmarks.md
    python bench/bench_own_model.py --quick      # a smoke run
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from raycomp import Trainer
from raycomp.config import ExperimentConfig
from raycomp.config.recipe import build_loaders, build_model_for
from raycomp.launch.hardware import cpu_model


def write_pngs(root: Path, classes: int, per_class: int, size: int) -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    for split, count in (("train", per_class), ("val", max(1, per_class // 4))):
        for label in range(classes):
            folder = root / split / f"class_{label}"
            folder.mkdir(parents=True, exist_ok=True)
            for index in range(count):
                pixels = np.clip(rng.normal(40 + 60 * label, 50, (size, size, 3)), 0, 255).astype(np.uint8)
                Image.fromarray(pixels).save(folder / f"{index}.png")


def hand_loop(network: torch.nn.Module, loader, optimizer, epochs: int) -> None:
    network.train()
    for epoch in range(epochs):
        loader.sampler.set_epoch(epoch)
        for inputs, targets in loader:
            optimizer.zero_grad(set_to_none=True)
            loss = F.cross_entropy(network(inputs), targets)
            loss.backward()
            optimizer.step()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--per-class", type=int, default=40)
    parser.add_argument("--image-size", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: steadier on a shared machine)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.quick:
        args.repeats, args.epochs, args.per_class = 1, 1, 8
    with tempfile.TemporaryDirectory() as folder:
        write_pngs(Path(folder), classes=4, per_class=args.per_class, size=48)
        config = ExperimentConfig.from_dict({
            "model": {"class_path": "torchvision.models.resnet18", "init_args": {"num_classes": 4}},
            "data": {"name": "image_folder", "root": folder, "image_size": args.image_size,
                     "batch_size": args.batch_size},
            "scaling": {"num_workers": 0},
        })  # fmt: skip
        train_loader, _ = build_loaders(config)

        def fresh():
            torch.manual_seed(0)
            model = build_model_for(config)
            return model, torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

        def hand():
            model, optimizer = fresh()
            hand_loop(model.module, train_loader, optimizer, args.epochs)  # the bare torchvision module

        def trainer():
            model, optimizer = fresh()
            Trainer(model, train_loader, f"{args.epochs}ep", optimizers=optimizer, device="cpu", seed=0,
                    progress_bar=False).fit()  # fmt: skip

        hand()  # warm-up: first-call costs (allocator, kernels) hit neither side
        rows = []
        for repeat in range(args.repeats):
            order = (hand, trainer) if repeat % 2 == 0 else (trainer, hand)
            times = {}
            for run in order:
                start = time.perf_counter()
                run()
                times[run.__name__] = time.perf_counter() - start
            rows.append((times["hand"], times["trainer"]))
    hand_s, trainer_s = [r[0] for r in rows], [r[1] for r in rows]
    ratios = sorted(t / h for h, t in rows)
    quartiles = statistics.quantiles(ratios, n=4) if len(ratios) > 1 else [ratios[0]] * 3
    print(f"# {cpu_model()}, torch {torch.__version__}, {torch.get_num_threads()} threads")
    print(
        f"# torchvision.models.resnet18 by class_path, image_folder of 4x{args.per_class} PNGs at "
        f"{args.image_size}px, batch {args.batch_size}, {args.epochs} epochs, {args.repeats} repeats"
    )
    print(f"hand loop s: median {statistics.median(hand_s):.2f} (min {min(hand_s):.2f}, max {max(hand_s):.2f})")
    print(
        f"Trainer s:   median {statistics.median(trainer_s):.2f} (min {min(trainer_s):.2f}, max {max(trainer_s):.2f})"
    )
    print(
        f"ratio Trainer/hand: median {statistics.median(ratios):.3f}x (quartiles {quartiles[0]:.3f}-{quartiles[2]:.3f},"
        f" min {ratios[0]:.3f}, max {ratios[-1]:.3f})"
    )


if __name__ == "__main__":
    main()
