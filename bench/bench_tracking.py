"""What MLflow tracking costs a training run (results in docs/benchmarks.md). Target <= 1.02x.

The same run of ``experiments/sb.yaml``'s model and data (SelectiveBackprop on, an evaluation and a
checkpoint every epoch), in this process as ``python -m raycomp.train`` runs it with
``num_workers: 0``, once with tracking off and once with full tracking into a fresh SQLite store:
every step's train loss, lr and SelectiveBackprop metrics, every report's metrics, the trace
summary and table, and each checkpoint uploaded as an artifact. The two alternate their order every
repeat; the ratio is taken per repeat and the median reported. Timed: the training wall time the
run reports (``time/train_wall_s``: fit start to the last report, reports and uploads included),
and, measured inside the tracked run, the time rank 0 spent in tracking (``time/tracking_s``:
buffering each step's metrics and every MLflow call), which is not blurred by run-to-run noise.
Creating the run (the SQLite schema, ~1.7 s once per store) happens before training and is shown apart.
torch runs on one thread, as a ``cpus_per_worker: 1`` trial does.

    python bench/bench_tracking.py             # the run quoted in docs/benchmarks.md
    python bench/bench_tracking.py --quick     # a smoke run
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch
from bench_core import machine

from raycomp.base import keys
from raycomp.config import load_experiment
from raycomp.launch.sinks import FolderSink
from raycomp.launch.spec import TrialSpec
from raycomp.launch.worker import run_in_process
from raycomp.loop.checkpoint import KeptCheckpoints

REPO = Path(__file__).resolve().parents[1]


def one_run(overrides: list[str], tracked: bool) -> tuple[float, float, float, float]:
    """(training wall s, run set-up s, MLflow points sent, seconds rank 0 spent tracking) of one fresh run."""
    gc.collect()  # the previous run's garbage is not this run's cost
    with tempfile.TemporaryDirectory(prefix="bench-tracking-") as folder:
        config = load_experiment(REPO / "experiments" / "sb.yaml", [*overrides, f"storage_path={folder}"])
        setup_s, points, tracking_s = 0.0, 0.0, 0.0
        with contextlib.ExitStack() as stack:
            run = None
            if tracked:
                from raycomp.tracking import train_run

                began = time.perf_counter()
                run = stack.enter_context(train_run(config, None))
                setup_s = time.perf_counter() - began
            sink = FolderSink(KeptCheckpoints(Path(folder) / "checkpoints", num_to_keep=2))
            run_in_process(TrialSpec.of(config, run=run.ref if run else None), sink)
        last = sink.history[-1]
        if run is not None:
            points, tracking_s = float(_points(config, run.ref.run_id)), float(last["time/tracking_s"])
        return float(last[keys.WALL]), setup_s, points, tracking_s


def _points(config, run_id: str) -> int:
    from mlflow import MlflowClient

    from raycomp.tracking import tracking_uri

    client = MlflowClient(tracking_uri(config))
    return sum(len(client.get_metric_history(run_id, key)) for key in client.get_run(run_id).data.metrics)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes, for a smoke test")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args()
    overrides = [
        f"max_duration={1 if args.quick else args.epochs}ep",
        "checkpoint.interval=1ep",
        "eval.interval=1ep",
        "scaling.num_workers=0",
        "tracking.enabled=true",
        "algorithms.selective_backprop.start=0.0",
    ]
    if args.quick:
        overrides += ["data.num_train=512", "data.num_test=256"]
    repeats = 2 if args.quick else args.repeats
    torch.set_num_threads(1)  # as a trial with scaling.cpus_per_worker: 1 trains; two threads on 2 cores jitter
    one_run(overrides, tracked=False)  # warm-up: imports, data generation, allocator
    rows = []
    for repeat in range(repeats):
        order = (False, True) if repeat % 2 == 0 else (True, False)
        times = {tracked: one_run(overrides, tracked) for tracked in order}
        off, (on, setup, points, spent) = times[False][0], times[True]
        row = {"off_s": off, "on_s": on, "ratio": on / off, "setup_s": setup, "points": points}
        rows.append({**row, "tracking_s": spent, "tracking_share": spent / on})
        print(
            f"repeat {repeat}: off {off:.2f} s, tracked {on:.2f} s, ratio {on / off:.3f}; "
            f"in MLflow calls {spent:.3f} s = {spent / on:.2%} of the tracked run "
            f"(+ run set-up {setup:.2f} s, {points:.0f} metric points)",
            flush=True,
        )
    result = {
        "machine": machine(torch.device("cpu")),
        "epochs": 1 if args.quick else args.epochs,
        "repeats": repeats,
        "median_off_s": statistics.median(r["off_s"] for r in rows),
        "median_on_s": statistics.median(r["on_s"] for r in rows),
        "median_ratio": statistics.median(r["ratio"] for r in rows),
        "median_setup_s": statistics.median(r["setup_s"] for r in rows),
        "median_tracking_share": statistics.median(r["tracking_share"] for r in rows),
        "rows": rows,
    }
    print(f"machine: {result['machine']}")
    print(
        f"tracking overhead: median ratio {result['median_ratio']:.3f} (target <= 1.02) over {repeats} repeats; "
        f"off {result['median_off_s']:.2f} s, tracked {result['median_on_s']:.2f} s; "
        f"time in MLflow calls {result['median_tracking_share']:.2%} of training; "
        f"run set-up before training {result['median_setup_s']:.2f} s"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
