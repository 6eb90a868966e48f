"""Where a command's CPU time goes, by kind of process: the test suite's, first of all (issue 56, "The test suite").

The suite is limited by CPU work on a 2-core machine, not by waiting, so its time falls only with less work; this
says which processes do it. Every process started after the command is sampled twice a second (its CPU time so far,
its name and command line as last seen); a process's last sample is its CPU time, less at most half a second.

    python bench/suite_profile.py -- pytest -n 2 --dist worksteal
"""

from __future__ import annotations

import argparse
import collections
import subprocess
import sys
import time

import psutil

KINDS = (  # (kind, what its name or command line holds), first match wins; a name is cut at 15 characters
    ("CLI processes the tests start (python -m raycomp...)", ("-m raycomp", "raycomp.cli")),
    ("Ray: trial processes (Tune trials, local mode)", ("ray::ImplicitFu",)),
    ("Ray: Train workers (DDP ranks)", ("ray::RayTrainWo",)),
    (
        "Ray: Train's and Tune's helper actors",
        (
            "ray::TrainContr",
            "ray::DatasetMan",
            "ray::PlacementG",
            "ray::Synchroniz",
            "ray::_Autoscali",
            "ray::_QueueActo",
            "ray::Preemption",
            "ray::JobSupervi",
        ),
    ),
    (
        "Ray: node processes (GCS, raylet, agents, dashboard, monitors, idle workers)",
        (
            "gcs_server",
            "raylet",
            "ray::",
            "ray-dashboard",
            "ray/dashboard",
            "ray/autoscaler",
            "log_monitor",
            "multiprocessing",
            "ray start",
            "bin/ray",
        ),
    ),
    ("MLflow servers", ("mlflow server", "uvicorn", "huey")),
    ("PostgreSQL, moto, Chromium", ("postgres", "initdb", "moto", "chrom")),
    ("pytest, and scripts the tests start", ("exec(eval(sys.stdin", "pytest")),
)


def kind(name: str, command: str) -> str:
    text = f"{name} {command}"
    return next((kind for kind, marks in KINDS if any(mark in text for mark in marks)), "other")


def profile(command: list[str], interval_s: float = 0.5) -> tuple[int, float, dict[str, list[float]]]:
    """Runs ``command``; its exit code, wall time and, per kind, [CPU-s, processes]."""
    began, me = time.time(), psutil.Process().pid
    seen: dict[tuple[int, float], list] = {}  # (pid, start) -> [name, command line, CPU-s]
    process = subprocess.Popen(command)
    while process.poll() is None:
        for p in psutil.process_iter(["pid", "name", "cmdline", "cpu_times", "create_time"]):
            info = p.info
            if info["pid"] == me or info["cpu_times"] is None or info["create_time"] < began - 1:
                continue
            entry = seen.setdefault((info["pid"], info["create_time"]), ["", "", 0.0])
            entry[0] = info["name"] or entry[0]  # the newest: a Ray worker takes its actor's name once it has one
            entry[1] = " ".join(info["cmdline"] or [])[:300] or entry[1]
            entry[2] = info["cpu_times"].user + info["cpu_times"].system
        time.sleep(interval_s)
    by_kind: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0])
    for name, line, cpu in seen.values():
        by_kind[kind(name, line)][0] += cpu
        by_kind[kind(name, line)][1] += 1
    return process.returncode, time.time() - began, dict(by_kind)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("command", nargs=argparse.REMAINDER, help="after --: the command to profile")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    code, wall, by_kind = profile(command)
    total = sum(cpu for cpu, _ in by_kind.values())
    print(f"\n{' '.join(command)}: exit {code}, {wall:.0f} s wall, {total:,.0f} CPU-s sampled")
    print("| processes | CPU-s | share | count |\n|---|---|---|---|")
    for name, (cpu, count) in sorted(by_kind.items(), key=lambda item: -item[1][0]):
        print(f"| {name} | {cpu:,.0f} | {cpu / total:.0%} | {count:.0f} |")
    sys.exit(code)


if __name__ == "__main__":
    main()
