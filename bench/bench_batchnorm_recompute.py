"""What recomputing BatchNorm statistics before each evaluation costs a trial (results in docs/benchmarks.md).

Each trial is experiments/sb.yaml's recipe (the cnn on 3,000 synthetic samples, 4 epochs, an evaluation after
every epoch), built by ``build_trainer`` in this process on one torch thread as a sweep trial trains, for the
baseline (no algorithm), SelectiveBackprop at the recipe's arguments, and SB always on. The time inside
``RecentBatches.recompute`` (this thread's CPU time, and wall time) is compared with the fit's, and each
trial's checkpoint is written to compare sizes with ``eval.recompute_batchnorm`` 2 and 0.

    python bench/bench_batchnorm_recompute.py              # 3 arms x 3 repeats, ~3 min on an idle machine
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch

from raycomp.config.recipe import build_trainer
from raycomp.config.source import load_experiment
from raycomp.loop.batchnorm import RecentBatches

ARMS: dict[str, list[str] | None] = {
    "baseline": None,  # sb.yaml without its algorithm
    "sb (sb.yaml's)": [],
    "sb always on": [
        "algorithms.selective_backprop.start=0",
        "algorithms.selective_backprop.end=1",
        "algorithms.selective_backprop.interrupt=0",
    ],
}
_spent = {"cpu": 0.0, "wall": 0.0}
_recompute = RecentBatches.recompute


def _timed_recompute(self: RecentBatches, *args, **kwargs) -> int:
    cpu, wall = time.thread_time(), time.perf_counter()
    try:
        return _recompute(self, *args, **kwargs)
    finally:
        _spent["cpu"] += time.thread_time() - cpu
        _spent["wall"] += time.perf_counter() - wall


def trial(experiment: str, overrides: list[str] | None, recompute: int, folder: Path) -> dict[str, float]:
    config = load_experiment(experiment, [*(overrides or []), f"eval.recompute_batchnorm={recompute}"])
    if overrides is None:
        config = config.without_algorithms(list(config.algorithms))
    trainer = build_trainer(config, save_folder=folder)
    _spent.update(cpu=0.0, wall=0.0)
    cpu, wall = time.thread_time(), time.perf_counter()
    trainer.fit()
    cpu, wall = time.thread_time() - cpu, time.perf_counter() - wall
    sizes = [p.stat().st_size for p in folder.rglob("*") if p.is_file()]
    return {
        "cpu_s": cpu,
        "wall_s": wall,
        "recompute_cpu_s": _spent["cpu"],
        "share_cpu": _spent["cpu"] / cpu,
        "checkpoint_bytes": max(sizes) if sizes else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="experiments/sb.yaml")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    torch.set_num_threads(1)
    RecentBatches.recompute = _timed_recompute
    print(f"# load at start {os.getloadavg()[0]:.1f}, torch {torch.__version__}, 1 thread")
    print("| arm | repeat | fit CPU s | recompute CPU s | share of the fit's CPU | checkpoint bytes (2 / 0) |")
    print("|---|---|---|---|---|---|")
    shares: dict[str, list[float]] = {}
    for name, overrides in ARMS.items():
        for repeat in range(args.repeats):
            with tempfile.TemporaryDirectory() as on, tempfile.TemporaryDirectory() as off:
                result = trial(args.experiment, overrides, 2, Path(on))
                without = trial(args.experiment, overrides, 0, Path(off)) if repeat == 0 else None
            shares.setdefault(name, []).append(result["share_cpu"])
            sizes = f"{result['checkpoint_bytes']} / {without['checkpoint_bytes']}" if without else "-"
            print(
                f"| {name} | {repeat} | {result['cpu_s']:.2f} | {result['recompute_cpu_s']:.3f} "
                f"| {result['share_cpu']:.2%} | {sizes} |",
                flush=True,
            )
    print(f"\n# load at end {os.getloadavg()[0]:.1f}; the recomputation's share of a fit's CPU time, median (min-max):")
    for name, values in shares.items():
        print(f"{name:16s} {statistics.median(values):.2%} ({min(values):.2%}-{max(values):.2%})")


if __name__ == "__main__":
    main()
