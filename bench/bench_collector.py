"""What pausing the cyclic garbage collector while a process starts saves (raycomp/base/collector.py;
docs/benchmarks.md "The test suite", twenty-first session).

Two measurements, each run side by side, ``RAYCOMP_FREEZE_START_UP`` 1 (raycomp's default) and 0 (off) alternating:

- ``imports``: a fresh interpreter imports what a sweep's driver and a trial's process import (torch, Ray Tune and
  Train, MLflow, raycomp's sweep command and trial) and exits: its own CPU time (user + sys, as its parent reaps it);
- ``sweep``: ``python -m raycomp.tune`` on a tiny tracked sweep (baseline and one SelectiveBackprop arm, two seeds,
  2 epochs of 256 images, one trial at a time, a private Ray, SQLite tracking): its wall time and the machine's busy
  CPU over it (/proc/stat: the driver, Ray's processes and the trial's process together), so run it on an
  otherwise idle machine.

    python bench/bench_collector.py --repeats 5 --json /tmp/collector.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

IMPORTS = """
from raycomp.base.collector import pause_collector, resume_collector
pause_collector()
import torch, ray.tune, ray.train.torch, mlflow  # noqa: E401
import raycomp.cli.tune, raycomp.launch.sweep.command, raycomp.launch.sweep.trial  # noqa: E401
resume_collector()
"""
KEEP = "algorithms.selective_backprop.keep"


def busy_cpu_seconds() -> float:
    """The machine's busy CPU time so far: user, nice, system, irq and softirq of /proc/stat's first line."""
    fields = [int(value) for value in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    user, nice, system, _idle, _iowait, irq, softirq = fields[:7]
    return (user + nice + system + irq + softirq) / os.sysconf("SC_CLK_TCK")


def run(command: list[str], freeze: str, cwd: Path | None = None) -> dict[str, float]:
    """``command`` with ``RAYCOMP_FREEZE_START_UP=freeze``: its wall time, its and its reaped children's CPU time,
    and the machine's busy CPU over it."""
    env = {**os.environ, "RAYCOMP_FREEZE_START_UP": freeze}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    busy, start = busy_cpu_seconds(), time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True)
    wall, busy = time.perf_counter() - start, busy_cpu_seconds() - busy
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{command} failed ({done.returncode}):\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    own = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall_s": wall, "process_cpu_s": own, "busy_cpu_s": busy}


def tiny_sweep(folder: Path) -> Path:
    config = {
        "name": "collector",
        "data": {"num_train": 256, "num_test": 128, "batch_size": 64},
        "max_duration": "2ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep"},
        "storage_path": str(folder),
        "tracking": {"tracking_uri": f"sqlite:///{folder / 'mlflow.db'}"},
        "sweep": {"space": {KEEP: {"grid": [0.5]}}, "repeats": 2, "max_concurrent_trials": 1},
    }
    path = folder / "collector.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def summary(rows: list[dict[str, float]], key: str) -> dict[str, float]:
    values = [row[key] for row in rows]
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, dict[str, list[dict[str, float]]]] = {"imports": {"1": [], "0": []}, "sweep": {"1": [], "0": []}}
    for repeat in range(args.repeats):
        for freeze in ("1", "0") if repeat % 2 == 0 else ("0", "1"):
            results["imports"][freeze].append(run([sys.executable, "-c", IMPORTS], freeze))
            with tempfile.TemporaryDirectory(prefix="bench-collector-") as folder:
                path = tiny_sweep(Path(folder))
                command = [sys.executable, "-m", "raycomp.tune", str(path), "--no-report"]
                results["sweep"][freeze].append(run(command, freeze, cwd=Path(folder)))
        print(f"repeat {repeat + 1}/{args.repeats} done", flush=True)
    table = {}
    for what, keys in (("imports", ("process_cpu_s",)), ("sweep", ("wall_s", "busy_cpu_s"))):
        for key in keys:
            paused, plain = summary(results[what]["1"], key), summary(results[what]["0"], key)
            ratios = [on[key] / off[key] for on, off in zip(results[what]["1"], results[what]["0"], strict=True)]
            table[f"{what} {key}"] = {"paused": paused, "not paused": plain, "ratio_median": statistics.median(ratios)}
            print(
                f"{what:8s} {key:14s} paused {paused['median']:6.2f} ({paused['min']:.2f}-{paused['max']:.2f})  "
                f"not paused {plain['median']:6.2f} ({plain['min']:.2f}-{plain['max']:.2f})  "
                f"ratio {statistics.median(ratios):.2f}"
            )
    if args.json:
        args.json.write_text(json.dumps({"runs": results, "summary": table}, indent=1))


if __name__ == "__main__":
    main()
