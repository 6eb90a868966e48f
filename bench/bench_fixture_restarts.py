"""The multi-node fixture's cluster started and stopped again and again beside a running sweep (issue 54;
docs/benchmarks.md, "The test suite"): tests/cluster_services.py's ``Cluster`` (moto's S3 server, PostgreSQL and
an MLflow server on it, a Ray head and two worker nodes), as tests/launch/test_multinode.py's module fixture starts
it, while ``python -m raycomp.tune experiments/sb.yaml`` (a local Ray, two trials at a time) loads the machine.

Each round's processes carry a marker of their own (tests/leftovers.py), so after each stop any of them still
running is counted (and killed): the leftovers must be 0. At the end the sweep is interrupted as Ctrl-C stops it,
and its processes are counted the same way.

    python bench/bench_fixture_restarts.py --rounds 3 --json /tmp/restarts.json
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the suite's cluster and leftover check

from cluster_services import Cluster
from leftovers import RUN_MARKER, describe, kill_all, left_running
from processes import stop_group

REPO = Path(__file__).resolve().parents[1]
SWEEP_FLAGS = ["--set", "tracking.enabled=false", "--no-report"]


def leftovers(marker: str) -> list[str]:
    """The processes carrying ``marker`` 5 s after their stop, killed now."""
    left = left_running(marker, grace_s=5, children=False)
    described = [describe(process) for process in left]
    kill_all(left)
    return described


def start_sweep(folder: Path, marker: str) -> subprocess.Popen:
    command = [sys.executable, "-m", "raycomp.tune", str(REPO / "experiments" / "sb.yaml")]
    command += ["--set", f"storage_path={folder / 'runs'}", *SWEEP_FLAGS]
    env = {**os.environ, RUN_MARKER: marker, "PYTHONUNBUFFERED": "1"}
    with (folder / "sweep.log").open("w") as log:
        return subprocess.Popen(
            command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )


def wait_for_trials(sweep: subprocess.Popen, log: Path, timeout_s: float = 180) -> float:
    """Seconds until the sweep's Tune shows running trials (the load this bench means), or its end."""
    started = time.monotonic()
    while sweep.poll() is None and time.monotonic() - started < timeout_s:
        if "RUNNING" in log.read_text(errors="replace"):
            break
        time.sleep(1)
    return round(time.monotonic() - started, 1)


def one_round(folder: Path, sweep: subprocess.Popen) -> dict:
    marker = uuid.uuid4().hex
    os.environ[RUN_MARKER] = marker  # what the cluster's processes inherit
    load = os.getloadavg()[0]
    started = time.monotonic()
    cluster = Cluster(folder)
    up = time.monotonic()
    alive = cluster.stop()
    down = time.monotonic()
    return {
        "start_s": round(up - started, 1),
        "stop_s": round(down - up, 1),
        "left_by_stop": alive,
        "leftovers": leftovers(marker),
        "sweep_running": sweep.poll() is None,
        "load_1min": round(load, 2),
    }


def stop_sweep(sweep: subprocess.Popen, marker: str) -> dict:
    """Ctrl-C's SIGINT to the sweep's group, as a terminal sends it; its exit code and its leftovers."""
    with_sigint = sweep.poll() is None
    if with_sigint:
        os.killpg(sweep.pid, signal.SIGINT)
        try:
            sweep.wait(timeout=120)
        except subprocess.TimeoutExpired:
            stop_group(sweep)
    return {"sweep_exit": sweep.wait(), "interrupted": with_sigint, "sweep_leftovers": leftovers(marker)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))  # through the `finally`s below
    folder = Path(tempfile.mkdtemp(prefix="raycomp-restarts-"))
    sweep_marker = uuid.uuid4().hex
    sweep = start_sweep(folder, sweep_marker)
    rows: list[dict] = []
    try:
        print(json.dumps({"sweep_trials_after_s": wait_for_trials(sweep, folder / "sweep.log")}), flush=True)
        for number in range(1, args.rounds + 1):
            round_folder = folder / f"round-{number}"
            round_folder.mkdir()
            rows.append({"round": number, **one_round(round_folder, sweep)})
            print(json.dumps(rows[-1]), flush=True)
    finally:
        end = stop_sweep(sweep, sweep_marker)
        print(json.dumps(end), flush=True)
    summary = {
        "rounds": len(rows),
        "leftovers": sum(len(row["leftovers"]) + len(row["left_by_stop"]) for row in rows),
        "all_beside_the_sweep": all(row["sweep_running"] for row in rows),
        **end,
    }
    print(json.dumps(summary), flush=True)
    if args.json:
        args.json.write_text(json.dumps({"rounds": rows, "summary": summary}, indent=1))
    if summary["leftovers"] or end["sweep_leftovers"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
