"""``python -m raycomp.report --profile runs/a runs/b ...``: performance profiles over several finds or sweeps
(each a workload), as PNG, HTML and markdown in ``--out`` (default ``runs/profile``); the table printed too."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

from raycomp.report.profile_inputs import read_workload
from raycomp.report.profile_page import score_table, write_profiles
from raycomp.report.text import shown_path
from raycomp.results.profiles import performance_profile

DEFAULT_TAU_MAX = 4.0  # AlgoPerf's


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--profile",
        nargs="+",
        metavar="FOLDER",
        help="draw performance profiles over these find or sweep folders (each one workload) instead of one report",
    )
    parser.add_argument(
        "--by",
        choices=("method", "recipe"),
        default="method",
        help="profile each method (its fastest setting on each workload, the default) or each recipe as it ran",
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        help="reach the baseline's final metric within this (default: each workload's accuracy_tolerance; 0: exactly)",
    )
    parser.add_argument("--tau-max", type=float, default=DEFAULT_TAU_MAX, help="the profiles' largest ratio (4)")


def report_profiles(args: argparse.Namespace) -> int:
    workloads, seen = [], {}
    times: dict[str, dict[str, float]] = {}
    for path in args.profile:
        workload = read_workload(path)  # NotFound: one line, exit 2
        seen[workload.name] = seen.get(workload.name, 0) + 1
        if seen[workload.name] > 1:  # two folders of the same name: each its own workload
            workload = dataclasses.replace(workload, name=f"{workload.name} ({seen[workload.name]})")
        workloads.append(workload)
        for method, time in workload.times(args.by, args.tolerance).items():
            times.setdefault(method, {})[workload.name] = time
    profile = performance_profile(times)
    out = args.out or Path("runs") / "profile"
    paths = write_profiles(profile, workloads, times, out, args.tau_max, args.by)
    header, rows = score_table(profile, args.tau_max, args.by)
    widths = [max(len(cell) for cell in column) for column in zip(header, *rows, strict=True)]
    for row in [header, *rows]:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
    print(f"profiles: {', '.join(shown_path(path) for path in paths)}")
    return 0
