"""Trials sharing one GPU: the default sweep's trials, several at once on one card against one after another.

What ``scaling: {num_workers: 0, use_gpu: true, gpus_per_worker: 0.25}`` buys in a sweep (docs/runner.md),
measured without Ray (the GPU machines lent to this project have none): each trial is its own process, as
Tune's trial processes are, training experiments/sb.yaml's recipe (one trial of its sweep, ``seed`` = the
trial's index) through ``raycomp.config.recipe.build_trainer``. The same trials run once one after another and once
all at the same time; trials per hour is trials / wall time, process start-up included on both sides.

    python bench/bench_packed_trials.py --device cuda --trials 4
    python bench/bench_packed_trials.py --device cpu --trials 2 --set max_duration=2ba   # a smoke run
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time


def one_trial(config_path: str, seed: int, device: str, sets: list[str], threads: int) -> None:
    """Train one trial in this process (the ``--one`` mode the parent starts)."""
    import torch

    from raycomp.config import load_experiment
    from raycomp.config.recipe import build_trainer

    torch.set_num_threads(threads)
    config = load_experiment(config_path, ["sweep=null", f"seed={seed}", *sets])
    trainer = build_trainer(config, device=device)
    trainer.fit()
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def run_trials(args: argparse.Namespace, at_once: bool) -> float:
    """Wall seconds for ``args.trials`` trial processes, all at once or one after another."""
    command = [sys.executable, __file__, "--one", "--config", args.config, "--device", args.device]
    command += ["--threads", str(args.threads), *(f"--set={item}" for item in args.set)]
    start = time.perf_counter()
    if at_once:
        processes = [subprocess.Popen([*command, "--seed", str(seed)]) for seed in range(args.trials)]
        codes = [process.wait() for process in processes]
    else:
        codes = [subprocess.call([*command, "--seed", str(seed)]) for seed in range(args.trials)]
    if any(codes):
        raise SystemExit(f"a trial process failed: exit codes {codes}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="experiments/sb.yaml")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--trials", type=int, default=4, help="trials sharing the card (4: gpus_per_worker 0.25)")
    parser.add_argument("--threads", type=int, default=2, help="torch threads per trial process")
    parser.add_argument("--set", action="append", default=[], help="a config override, e.g. max_duration=2ep")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_trial(args.config, args.seed, args.device, args.set, args.threads)
        return
    sequential = run_trials(args, at_once=False)
    packed = run_trials(args, at_once=True)
    results = {
        "trials": args.trials,
        "device": args.device,
        "sequential_s": sequential,
        "packed_s": packed,
        "sequential_trials_per_hour": args.trials * 3600 / sequential,
        "packed_trials_per_hour": args.trials * 3600 / packed,
    }
    print(
        f"| {args.trials} trials of {args.config} on {args.device} | one after another {sequential:.1f} s "
        f"({results['sequential_trials_per_hour']:.0f}/h) | all at once {packed:.1f} s "
        f"({results['packed_trials_per_hour']:.0f}/h) | {sequential / packed:.2f}x the throughput |"
    )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)


if __name__ == "__main__":
    main()
