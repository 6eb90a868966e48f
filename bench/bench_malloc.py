"""A trial's CPU time with glibc's malloc defaults against raycomp's malloc settings (results in docs/benchmarks.md).

Each fit is experiments/sb.yaml's baseline trial (the cnn, 4 epochs of 3,000 synthetic samples, one torch
thread) built by ``build_trainer`` in a fresh process and trained in a thread of it, as a Tune trial trains.
The two settings alternate, one process at a time (or ``--side-by-side``: two processes of the same
setting at once, as the default sweep runs two trials), with ``GLIBC_TUNABLES`` unset or set to
``raycomp.launch.cluster.GLIBC_TUNABLES`` (what a private local Ray of raycomp's gives its workers).

For each fit: the training thread's CPU time (user and system), its page faults, and the steps' CPU time
the verdicts compare (``sweep.timing: cpu``). The spread over repeats is the noise a verdict must see through.

    python bench/bench_malloc.py                      # 5 repeats x 2 settings, one at a time: ~2 min
    python bench/bench_malloc.py --side-by-side       # the same, two processes at once
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading

SETTINGS = ("glibc defaults", "raycomp's settings")


def one_fit(experiment: str) -> None:
    """Train the baseline trial in a thread of this process and print its measurements as JSON (``--one``)."""
    import resource

    import torch

    from raycomp.config.recipe import build_trainer
    from raycomp.config.source import load_experiment
    from raycomp.launch.eval_report import EvalReportCallback

    torch.set_num_threads(1)
    config = load_experiment(experiment, ["algorithms={}", "sweep=null"])
    clock = EvalReportCallback([], config.checkpoint.interval, {})
    measured: dict[str, float] = {}

    def train() -> None:
        before = resource.getrusage(resource.RUSAGE_THREAD)
        build_trainer(config, callbacks=[clock]).fit()
        after = resource.getrusage(resource.RUSAGE_THREAD)
        measured.update(
            user_s=after.ru_utime - before.ru_utime,
            system_s=after.ru_stime - before.ru_stime,
            page_faults=after.ru_minflt - before.ru_minflt,
            steps_cpu_s=clock.step_clock.cpu_s,
        )

    thread = threading.Thread(target=train)
    thread.start()
    thread.join()
    print(json.dumps(measured), flush=True)


def fits(experiment: str, tuned: bool, processes: int) -> list[dict[str, float]]:
    """``processes`` fits at once, each in a fresh process, with or without the malloc settings."""
    from raycomp.launch.cluster import GLIBC_TUNABLES

    env = {key: value for key, value in os.environ.items() if key != "GLIBC_TUNABLES"}
    if tuned:
        env["GLIBC_TUNABLES"] = GLIBC_TUNABLES
    command = [sys.executable, __file__, "--one", "--experiment", experiment]
    running = [subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True) for _ in range(processes)]
    return [json.loads(process.communicate()[0].strip().splitlines()[-1]) for process in running]


def spread(values: list[float]) -> str:
    median = statistics.median(values)
    return f"{median:.2f} ({min(values):.2f}-{max(values):.2f}, CV {statistics.pstdev(values) / median:.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiment", default="experiments/sb.yaml")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--side-by-side", action="store_true", help="two processes of a setting at once")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        one_fit(args.experiment)
        return
    processes = 2 if args.side_by_side else 1
    print(f"# load at start {os.getloadavg()[0]:.1f}, {processes} process(es) at a time")
    print("| repeat | setting | steps' CPU s | thread user s | thread system s | page faults |")
    print("|---|---|---|---|---|---|")
    rows: dict[str, list[dict[str, float]]] = {name: [] for name in SETTINGS}
    for repeat in range(args.repeats):
        order = SETTINGS if repeat % 2 == 0 else SETTINGS[::-1]
        for name in order:
            for fit in fits(args.experiment, name == SETTINGS[1], processes):
                rows[name].append(fit)
                print(
                    f"| {repeat} | {name} | {fit['steps_cpu_s']:.2f} | {fit['user_s']:.2f} | {fit['system_s']:.2f} "
                    f"| {fit['page_faults']:,.0f} |",
                    flush=True,
                )
    print(f"\n# load at end {os.getloadavg()[0]:.1f}; medians (min-max, CV) over {args.repeats * processes} fits:")
    for name, results in rows.items():
        print(
            f"{name:19s} steps' CPU {spread([r['steps_cpu_s'] for r in results])} s, "
            f"system {spread([r['system_s'] for r in results])} s, "
            f"page faults {statistics.median(r['page_faults'] for r in results):,.0f}"
        )
    default, tuned = (statistics.median(r["steps_cpu_s"] for r in rows[name]) for name in SETTINGS)
    print(f"steps' CPU time with raycomp's settings / with glibc's defaults: {tuned / default:.3f}")


if __name__ == "__main__":
    main()
