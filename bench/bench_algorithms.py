"""Each algorithm alone against the baseline on the built-in benchmark (results in docs/methods/, docs/benchmarks.md).

The built-in benchmark is experiments/sb.yaml's recipe: the small CNN on 5,000/1,000 synthetic CIFAR-shaped
samples, SGD (lr 0.05, momentum 0.9, weight decay 5e-4), one-cycle schedule, batch 128; here for ``--epochs``
on the CPU with one torch thread, as one sb.yaml trial (``cpus_per_worker: 1``) trains. Every run is built
by ``build_trainer`` from that config with one algorithm (or none) and evaluated once, at the end.

Repeat ``r`` trains the baseline and every algorithm with seed ``r`` (same data, same initial weights),
in reverse order on odd repeats, so that drift in machine speed hits both ends of the list. Reported per
algorithm: median training seconds per epoch (``EPOCH_START`` to ``EPOCH_END``: data, algorithm work and
steps, no evaluation), the median of per-repeat ratios to that repeat's baseline, the median final eval
accuracy with its min–max over seeds, and its difference to the baseline's median.

    python bench/bench_algorithms.py                          # the full run quoted in docs/methods/
    python bench/bench_algorithms.py --quick                  # a seconds-long smoke run
    python bench/bench_algorithms.py --only ema,blurpool      # a subset (the baseline always runs)
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import statistics
import time
from typing import Any

import torch
from bench_core import machine

from raycomp.algorithms.registry import ALGORITHMS
from raycomp.config import ExperimentConfig, load_experiment
from raycomp.config.recipe import build_trainer
from raycomp.core import Callback

# The arguments each algorithm runs with (and its method card quotes); None: sb.yaml's own arguments.
ARGS: dict[str, dict[str, Any] | None] = {
    "selective_backprop": None,
    "label_smoothing": {"smoothing": 0.1},
    "mixup": {"alpha": 0.2},
    "cutmix": {"alpha": 1.0},
    "progressive_resizing": {},  # initial_scale 0.5, delay_fraction 0.5, finetune_fraction 0.2
    "channels_last": {},
    "blurpool": {},
    "layer_freezing": {},  # freeze_start 0.5, freeze_level 1.0
    "gradient_clipping": {"clipping_type": "norm", "clipping_threshold": 1.0},
    "ema": {"half_life": "50ba"},  # Composer's suggested start; the default 1000ba is 4x this whole run
}
assert set(ARGS) == set(ALGORITHMS)


class EpochTimer(Callback):
    """Training wall time summed over epochs: EPOCH_START to EPOCH_END, so evaluation is not counted."""

    def __init__(self) -> None:
        self.seconds, self._start = 0.0, 0.0

    def epoch_start(self, state, logger) -> None:
        self._start = time.perf_counter()

    def epoch_end(self, state, logger) -> None:
        self.seconds += time.perf_counter() - self._start


def train(base: dict[str, Any], name: str, seed: int) -> tuple[float, float]:
    """One run of ``base`` with algorithm ``name`` alone (or none); (training seconds, final eval accuracy)."""
    data = copy.deepcopy(base)
    data["seed"], data["algorithms"] = seed, {} if name == "baseline" else {name: ARGS[name]}
    gc.collect()
    config, timer = ExperimentConfig.from_dict(data, source=f"<{name}>"), EpochTimer()
    trainer = build_trainer(config, callbacks=[timer], device="cpu")
    trainer.fit()
    return timer.seconds, trainer.state.eval_metrics["eval/accuracy"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--repeats", type=int, default=3, help="seeds 0..repeats-1, one per repeat")
    parser.add_argument("--only", help="comma-separated algorithm names (default: all ten)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--config", default="experiments/sb.yaml")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    names = args.only.split(",") if args.only else list(ARGS)
    if unknown := set(names) - set(ARGS):
        parser.error(f"unknown algorithm(s) {', '.join(sorted(unknown))}; valid: {', '.join(ARGS)}")
    torch.set_num_threads(1)  # one sb.yaml trial: scaling.cpus_per_worker 1
    sets = ["data.num_train=256", "data.num_test=128", "data.batch_size=64"] if args.quick else []
    epochs, repeats = (2, 1) if args.quick else (args.epochs, args.repeats)
    sets += [f"max_duration={epochs}ep", f"eval.interval={epochs}ep", "sweep=null"]
    config = load_experiment(args.config, sets)
    ARGS["selective_backprop"] = config.algorithms["selective_backprop"]
    base = config.to_dict()
    names = ["baseline", *names]
    print(
        f"# machine: {machine(torch.device('cpu'))}\n# {args.config}: {config.model.name}, {config.data.num_train} "
        f"samples, batch {config.data.batch_size}, {epochs} epochs, {repeats} repeats (seeds 0..{repeats - 1})\n"
    )

    warmup = copy.deepcopy(base)
    warmup["max_duration"] = "5ba"
    train(warmup, "baseline", 0)  # first-call costs (allocator, kernels) hit no measured run
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in names}
    for repeat in range(repeats):
        for name in names if repeat % 2 == 0 else names[::-1]:
            seconds, accuracy = train(base, name, seed=repeat)
            runs[name].append((seconds / epochs, accuracy))
            print(f"  repeat {repeat} {name}: {runs[name][-1][0]:.2f} s/epoch, accuracy {runs[name][-1][1]:.4f}")

    base_s = [s for s, _ in runs["baseline"]]
    base_acc = statistics.median(a for _, a in runs["baseline"])
    results: dict[str, Any] = {
        "machine": machine(torch.device("cpu")),
        "config": args.config,
        "epochs": epochs,
        "repeats": repeats,
        "train_samples": config.data.num_train,
        "algorithms": {},
    }
    print(
        "\n| algorithm | arguments | s/epoch (median) | time vs baseline | eval accuracy, median (min–max) "
        "| Δ accuracy |\n|---|---|---|---|---|---|"
    )
    for name in names:
        seconds, accuracy = [s for s, _ in runs[name]], [a for _, a in runs[name]]
        ratio = statistics.median(s / b for s, b in zip(seconds, base_s, strict=True))
        acc = statistics.median(accuracy)
        shown = "—" if name == "baseline" else (", ".join(f"{k}={v}" for k, v in ARGS[name].items()) or "defaults")
        print(
            f"| {name} | {shown} | {statistics.median(seconds):.2f} | {ratio:.3f}x | {100 * acc:.1f} % "
            f"({100 * min(accuracy):.1f}–{100 * max(accuracy):.1f}) | {100 * (acc - base_acc):+.1f} pt |"
        )
        results["algorithms"][name] = {
            "args": ARGS.get(name),
            "s_per_epoch": seconds,
            "accuracy": accuracy,
            "time_ratio_median": ratio,
            "accuracy_median": acc,
        }
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
