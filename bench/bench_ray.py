"""Benchmarks of the Ray runner on this machine (results in docs/benchmarks.md).

1. Per-trial start-up: Tune starting a trial (driver clock, `on_trial_start`) to that trial's first
   training step, median over a small sweep, for 0 workers (the trial trains in its own process),
   1 and 2 Ray Train workers (a TorchTrainer per trial). Target <= 5 s for the default laptop sweep.
2. Sweep efficiency of `experiments/sb.yaml`: the CPU seconds the trials spent training (each
   trial's process CPU time from FIT_START, reported by the trial) divided by cores x the sweep's wall
   time (`python -m raycomp.tune` end to end, Ray start-up included). Target >= 0.9 on 2 cores.
3. DDP: 2 workers against 1 worker at the same global batch (2 x 64 vs 1 x 128): training seconds per
   step of each, and the largest relative difference of their loss curves (model cnn_plain, whose loss
   does not depend on how a batch is split).

    python bench/bench_ray.py                       # all three, as quoted in docs/benchmarks.md
    python bench/bench_ray.py --only startup ddp    # a subset
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ray import tune

from raycomp.base.layout import TRIAL_HISTORY
from raycomp.config import ExperimentConfig, load_experiment
from raycomp.launch.cluster import init_ray, torch_trainer
from raycomp.launch.spec import TrialSpec
from raycomp.launch.sweep.outcome import trial_records
from raycomp.launch.sweep.tuner import build_tuner

REPO = Path(__file__).resolve().parents[1]


class TrialStarts(tune.Callback):
    """When the Tune driver started each trial (time.time(), the clock the trials report in)."""

    def __init__(self) -> None:
        self.starts: dict[str, float] = {}

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        self.starts[trial.trial_id] = time.time()


def small_experiment(storage: str, name: str, workers: int, **changes: Any) -> ExperimentConfig:
    data = {
        "name": name,
        "data": {"num_train": 512, "num_test": 256, "batch_size": 64},
        "max_duration": "1ep",
        "algorithms": {"selective_backprop": {}},
        "scaling": {"num_workers": workers},
        "storage_path": storage,
        "sweep": {"space": {"algorithms.selective_backprop.keep": {"grid": [0.3, 0.5, 0.7]}}},
    }
    data.update(changes)
    return ExperimentConfig.from_dict(data)


def bench_startup(storage: str) -> dict[str, Any]:
    """Median trial start -> first training step, per worker count."""
    figures = {}
    for workers in (0, 1, 2):
        starts = TrialStarts()
        config = small_experiment(storage, f"startup-{workers}", workers)
        began = time.perf_counter()
        results = build_tuner(config, callbacks=[starts]).fit()
        wall = time.perf_counter() - began
        delays = [
            record.history[0]["time/first_step_unix"] - starts.starts[record.trial_id]
            for record in trial_records(results)
            if record.history
        ]
        figures[f"{workers}_workers"] = {
            "trials": len(delays),
            "median_s": round(statistics.median(delays), 2),
            "all_s": [round(d, 2) for d in delays],
            "sweep_wall_s": round(wall, 1),
        }
        print(f"start-up, {workers} workers: {figures[f'{workers}_workers']}", flush=True)
    return figures


def bench_efficiency(storage: str) -> dict[str, Any]:
    """Runs the README's main command and relates the trials' training CPU time to cores x wall."""
    experiment = REPO / "experiments" / "sb.yaml"
    began = time.perf_counter()
    command = [sys.executable, "-m", "raycomp.tune", str(experiment), "--set", f"storage_path={storage}"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - began
    config = load_experiment(experiment)
    document = json.loads((Path(storage) / config.name / "results.json").read_text())
    histories = _histories(Path(storage) / config.name)
    cpu = sum(history[-1]["time/train_cpu_s"] for history in histories)
    train_wall = sum(history[-1]["time/train_wall_s"] for history in histories)
    cores = os.cpu_count() or 1
    figures = {
        "trials": len(document["trials"]),
        "sweep_wall_s": round(wall, 1),
        "train_cpu_s": round(cpu, 1),
        "train_wall_s_summed": round(train_wall, 1),
        "cores": cores,
        "efficiency_cpu": round(cpu / (cores * wall), 3),
        "efficiency_wall": round(train_wall / (cores * wall), 3),
        "best": document["best"],
    }
    print(f"efficiency: {figures}", flush=True)
    return figures


def _histories(folder: Path) -> list[list[dict[str, Any]]]:
    """Every trial's reports, read from the trials' own history.jsonl files (Tune is sent only the keys it reads)."""
    histories = []
    for result in sorted(folder.glob(f"*/{TRIAL_HISTORY}")):
        lines = [json.loads(line) for line in result.read_text().splitlines() if line.strip()]
        if lines:
            histories.append(lines)
    return histories


def bench_ddp(storage: str, repeats: int) -> dict[str, Any]:
    """Seconds per training step and loss-curve agreement, 1 x 128 against 2 x 64."""
    per_step: dict[int, list[float]] = {1: [], 2: []}
    curves: dict[int, list[float]] = {}
    for repeat in range(repeats):
        for workers in (1, 2) if repeat % 2 == 0 else (2, 1):
            name = f"ddp-{workers}-{repeat}"
            config = ExperimentConfig.from_dict(
                {
                    "name": name,
                    "model": {"name": "cnn_plain"},
                    "data": {"num_train": 2048, "num_test": 256, "batch_size": 128 // workers},
                    "max_duration": "2ep",
                    "eval": {"interval": "4ba"},
                    "checkpoint": {"interval": "4ba", "num_to_keep": None},
                    "scaling": {"num_workers": workers},
                    "storage_path": storage,
                }
            )
            result = torch_trainer(TrialSpec.of(config), name, storage).fit()
            reports = [metrics for _, metrics in sorted(result.best_checkpoints, key=lambda pair: pair[1]["step"])]
            first, last = reports[0], reports[-1]
            per_step[workers].append(
                (last["time/train_wall_s"] - first["time/train_wall_s"]) / (last["step"] - first["step"])
            )
            curves[workers] = [m["train/loss"] for m in reports]
    differences = [abs(a - b) / abs(a) for a, b in zip(curves[1], curves[2], strict=True)]
    figures = {
        "s_per_step_1_worker": round(statistics.median(per_step[1]), 4),
        "s_per_step_2_workers": round(statistics.median(per_step[2]), 4),
        "ratio_2_over_1": round(statistics.median(per_step[2]) / statistics.median(per_step[1]), 3),
        "repeats": repeats,
        "loss_points": len(differences),
        "max_rel_loss_difference": float(f"{max(differences):.2e}"),
    }
    print(f"ddp: {figures}", flush=True)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="*", choices=["startup", "efficiency", "ddp"], default=None)
    parser.add_argument("--repeats", type=int, default=3, help="DDP repeats")
    args = parser.parse_args()
    wanted = args.only or ["startup", "efficiency", "ddp"]
    results: dict[str, Any] = {"cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="raycomp-bench-") as storage:
        if "efficiency" in wanted:  # its own process and Ray, as a user runs it: first, on an idle machine
            results["efficiency"] = bench_efficiency(storage)
        if "startup" in wanted or "ddp" in wanted:
            began = time.perf_counter()
            init_ray()
            results["ray_init_s"] = round(time.perf_counter() - began, 1)
        if "startup" in wanted:
            results["startup"] = bench_startup(storage)
        if "ddp" in wanted:
            results["ddp"] = bench_ddp(storage, args.repeats)
    print(json.dumps(results, indent=2, default=str))


if __name__ == "__main__":
    main()
