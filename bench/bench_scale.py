"""raycomp's own cost as a sweep grows, on a cluster as a team runs one (issue 33; docs/benchmarks.md "At scale").

A Ray head offering no CPU to trials, two worker nodes that declare ``--cpus`` CPUs each (more than the host has,
so that many short trials run at once), the sweep's storage in an S3-compatible bucket (moto's server) and its
tracking on an MLflow server backed by PostgreSQL with artifacts in that bucket: the parts of
tests/launch/test_multinode.py. Each sweep is sb.yaml shrunk to trials of 2 steps (``data.num_train`` 256,
``max_duration`` 1ep, random ``keep``, one seed, no control), run by ``python -m raycomp.tune`` joined to the
cluster. Per sweep size it records:

- the driver's CPU seconds and peak resident memory (its rusage: a joined driver starts no process of its own),
  per trial, and its peak while the trials run and after (/proc, twice a second); its CPU before the first
  trial's first step (start-up: 4 s at 100 trials, 6 s at 1,000; 23 s before launch/sweep/bucket.py), per
  trial after it, per trial while the trials run (to Tune's last line: neither the start-up nor the end, which
  a short sweep's few trials would carry), and at the end; and per experiment of a sweep in parts (a later part
  holds its own Tuner's start-up and the previous part's ExperimentAnalysis, which Tune builds after its last line);
- the time to write results.json and the report (the driver's clock between its last trial and those lines);
- MLflow requests per trial (the server's access log) and whether every trial's metrics reached the store;
- S3 requests per trial by kind (HEAD, LIST, GET, write: the S3 endpoint's access log), over the whole sweep and
  while results.json is written (the log's clock has whole seconds);
- the time from one trial's end to the next trial's first step in the slot it freed (``slot_gaps``: each trial's
  MLflow run says when it ended and when its first step ran);
- the report page's size and how many configurations it draws in full.

    python bench/bench_scale.py --trials 100 300 1000 --json /tmp/scale.json
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the suite's cluster parts

import yaml
from cluster_services import PostgresMlflow, S3Endpoint
from ray_nodes import head_env, start_node

from raycomp.config.sweep import MAX_SAMPLES

# Tune's last line once the trials are done; the driver's lines once results.json, then the report, are written.
MARKS = ("Total run time", "results: ", "report: ")


def sweep_shape(trials: int) -> tuple[list[float], int]:
    """The SB ``end`` values of a grid and the ``num_samples`` that make ``trials`` trials with the baseline, or as
    near as a grid allows: a sweep samples at most ``MAX_SAMPLES`` configurations, so a larger one is a grid of
    SB window ends (1.0, 0.99, ...) crossed with random ``keep``."""
    grid = math.ceil((trials - 1) / MAX_SAMPLES)
    samples = trials - 1 if grid == 1 else (trials - 2) // grid  # within MAX_TRIALS, which counts a control too
    return [round(1.0 - index / 100, 2) for index in range(grid)], samples


def experiment(folder: Path, name: str, trials: int, storage: str, tracking: str, width: int = 32) -> Path:
    """The shrunk sb.yaml sweep; ``width`` is the built-in CNN's (32, its default: a 0.75 MB checkpoint; 4: 20 KB,
    for sweeps whose checkpoints would not fit in the memory of moto's server, which holds every object there)."""
    ends, samples = sweep_shape(trials)
    space = {"algorithms.selective_backprop.keep": {"uniform": [0.2, 0.9]}}
    if len(ends) > 1:
        space["algorithms.selective_backprop.end"] = {"grid": ends}
    config = {
        "name": name,
        "model": {"name": "cnn"}
        if width == 32
        else {"class_path": "raycomp.models.cnn.SmallCNN", "init_args": {"width": width}},
        "data": {"num_train": 256, "num_test": 128, "batch_size": 128},
        "max_duration": "1ep",
        "algorithms": {"selective_backprop": {"start": 0.0, "end": 1.0, "keep": 0.5, "interrupt": 0}},
        "scaling": {"num_workers": 0},
        "checkpoint": {"interval": "1ep", "num_to_keep": 1},
        "storage_path": storage,
        "tracking": {"tracking_uri": tracking},
        "sweep": {
            "space": space,
            "num_samples": samples,  # and the baseline
            "repeats": 1,
            "control": False,
        },
    }
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def requests(log: Path) -> int:
    return sum(
        1 for line in log.read_text(errors="replace").splitlines() if '"POST /api/' in line or '"GET /api/' in line
    )


S3_LINE = re.compile(r'\[(\d+/\w+/\d+ \d+:\d+:\d+)\] "(?:\x1b\[[0-9;]*m)*(\w+) (\S+)')  # some in colour


def s3_requests(log: Path, since: float, until: float = float("inf")) -> dict[str, int]:
    """The S3 endpoint's requests from ``since`` to ``until`` (Unix seconds), by kind: a LIST is a GET of the
    bucket with ``list-type``; writes are PUT, POST and DELETE."""
    counts = {"head": 0, "list": 0, "get": 0, "write": 0}
    for line in log.read_text(errors="replace").splitlines():
        match = S3_LINE.search(line)
        if not match or "/moto-api" in match[3]:
            continue
        at = datetime.datetime.strptime(match[1], "%d/%b/%Y %H:%M:%S").timestamp()
        if not since - 1 <= at <= until + 1:
            continue
        method = match[2]
        kind = "head" if method == "HEAD" else "list" if "list-type=" in match[3] else method.lower()
        counts["write" if kind in ("put", "post", "delete") else kind] += 1
    return counts


def one_sweep(
    trials: int, folder: Path, s3: S3Endpoint, mlflow: PostgresMlflow, env: dict[str, str], slots: int, width: int
) -> dict:
    name = f"scale-{trials}-{uuid.uuid4().hex[:6]}"  # a size may be asked for more than once
    path = experiment(folder, name, trials, s3.uri("runs"), mlflow.uri, width)
    before_requests = requests(mlflow.log)
    since = time.time()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = folder / f"{name}.log"
    started = time.monotonic()
    seen: dict[str, float] = {}  # when the driver printed each of MARKS, on this clock
    seen_unix: dict[str, float] = {}  # and on the S3 endpoint's
    parts_ended: list[float] = []  # Tune's last line of each experiment (a sweep past 1,000 trials has parts)
    with log.open("w") as output:
        command = [sys.executable, "-m", "raycomp.tune", str(path)]
        process = subprocess.Popen(
            command, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        memory = ResidentMemory(process.pid, seen)
        try:
            for line in process.stdout:
                output.write(line)
                for mark in MARKS:
                    if mark in line and (mark not in seen or mark == MARKS[0]):  # Tune's last: one per experiment
                        seen[mark] = time.monotonic()
                        seen_unix[mark] = time.time()
                        if mark == MARKS[0]:
                            parts_ended.append(seen_unix[mark])
        finally:  # the bench stopped (SIGTERM): the sweep ends as at a Ctrl-C while its cluster is still up
            if process.poll() is None and sys.exc_info()[0] is not None:
                process.terminate()
                process.wait(timeout=120)
        code = process.wait()
        memory.stop()
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    runs = mlflow.runs(name)
    trial_runs = [run for run in runs if run.data.tags.get("raycomp.kind") == "trial"]
    with_metrics = sum(1 for run in trial_runs if "eval/accuracy" in run.data.metrics)
    ended = [run for run in trial_runs if run.info.end_time and "time/first_step_unix" in run.data.metrics]
    gaps = slot_gaps(
        [run.info.end_time / 1000 for run in ended], [run.data.metrics["time/first_step_unix"] for run in ended], slots
    )
    results = json.loads((folder / "runs" / name / "results.json").read_text())
    html = (folder / "runs" / name / "report" / "report.html").read_text()
    card = html[html.find('<table id="method-card"') :]
    drawn = card[: card.find("</table>")].count("<tr") - 1  # its rows but the header
    cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    first_step = min((run.data.metrics["time/first_step_unix"] for run in ended), default=None)
    start_up = memory.cpu_before(first_step) if first_step is not None else None
    running = None if start_up is None else round(1000 * (cpu - start_up) / len(results["trials"]), 1)
    trials_done = memory.cpu_before(seen_unix["Total run time"]) if "Total run time" in seen_unix else None
    trials = len(results["trials"])  # sweep_arms lists once arms that differ only where an algorithm is left out
    return {
        "trials": trials,
        "exit": code,
        "wall_s": round(wall, 1),
        "driver_cpu_s": round(cpu, 1),
        "driver_cpu_ms_per_trial": round(1000 * cpu / trials, 1),
        # before the first trial's first step (imports, clients, the Tuner), and a trial once trials run
        "driver_start_up_cpu_s": None if start_up is None else round(start_up, 1),
        "driver_cpu_ms_per_trial_after_start_up": running,
        # once trials run until Tune's last line, a trial: no start-up and no end (results.json, the report) in it
        "driver_cpu_ms_per_trial_while_trials_run": None
        if start_up is None or trials_done is None
        else round(1000 * (trials_done - start_up) / trials, 1),
        "driver_cpu_s_at_the_end": None if trials_done is None else round(cpu - trials_done, 1),
        # each experiment of the sweep, from the first step (or the last part's line) to Tune's last line: a later
        # part holds its own Tuner's start-up and the previous part's ExperimentAnalysis (Tune builds it after
        # that line), so it is what one more part of a long sweep costs
        "driver_cpu_s_per_part": _per_part(memory, start_up, parts_ended),
        "driver_peak_mb": round(after.ru_maxrss / 1024),  # the largest child so far: run sizes in increasing order
        # sampled: while the trials run (to Tune's last line), while results.json is written, then the report
        "driver_peak_mb_phases": {phase: memory.peak_mb(phase) for phase in ("trials", "results", "report")},
        "results_s": _between(seen, "Total run time", "results: "),
        "report_s": _between(seen, "results: ", "report: "),
        "slot_gap_s": _quantiles(gaps),
        "mlflow_requests_per_trial": round((requests(mlflow.log) - before_requests) / trials, 1),
        "s3_requests_per_trial": {kind: round(n / trials, 2) for kind, n in s3_requests(s3.log, since).items()},
        "s3_requests_writing_results_per_trial": {
            kind: round(n / trials, 2)
            for kind, n in s3_requests(
                s3.log, seen_unix.get("Total run time", since), seen_unix.get("results: ", since)
            ).items()
        },
        "trial_runs": len(trial_runs),
        "trial_runs_with_metrics": with_metrics,
        "runs_finished": sum(run.info.status == "FINISHED" for run in runs),
        "runs": len(runs),
        "results_trials": len(results["trials"]),
        "report_kb": round(len(html) / 1024),
        "report_rows_drawn": drawn,
        "statuses": sorted({trial["status"] for trial in results["trials"]}),
    }


class ResidentMemory:
    """The driver's resident memory and CPU time, read from /proc twice a second. Memory in three phases split at
    the driver's lines (``MARKS``): the trials, results.json, the report; where its peak is says what grows it.
    CPU time by the clock, to part the driver's start-up (imports, Ray's and MLflow's clients, the Tuner) from
    what it spends once trials run: a cost a trial that a short sweep's start-up does not inflate."""

    PHASES = ("trials", "results", "report")
    TICKS = os.sysconf("SC_CLK_TCK")

    def __init__(self, pid: int, seen: dict[str, float]):
        self.pid, self.seen = pid, seen
        self.samples: list[tuple[float, int]] = []  # (monotonic time, kB)
        self.cpu: list[tuple[float, float]] = []  # (Unix time, CPU seconds)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.5):
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
                stat = Path(f"/proc/{self.pid}/stat").read_text()
            except OSError:
                return
            kilobytes = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
            self.samples.append((time.monotonic(), kilobytes))
            fields = stat[stat.rindex(")") + 2 :].split()  # after the command's name, which may hold spaces
            self.cpu.append((time.time(), (int(fields[11]) + int(fields[12])) / self.TICKS))  # utime, stime

    def stop(self) -> None:
        self._done.set()
        self._thread.join()

    def peak_mb(self, phase: str) -> int | None:
        index = self.PHASES.index(phase)
        start = self.seen.get(MARKS[index - 1], float("inf")) if index else float("-inf")
        end = self.seen.get(MARKS[index], float("inf")) if index < len(MARKS) - 1 else float("inf")
        values = [kb for at, kb in self.samples if start <= at < end]
        return round(max(values) / 1024) if values else None

    def cpu_before(self, unix: float) -> float | None:
        """The driver's CPU seconds at its last sample before ``unix``."""
        before = [seconds for at, seconds in self.cpu if at <= unix]
        return before[-1] if before else None


def slot_gaps(ends: list[float], first_steps: list[float], slots: int) -> list[float]:
    """Seconds from a trial's end to the next trial's first step, over the trials that waited for a free slot.

    The first ``slots`` trials start at once; each later one takes the slot of the earliest trial that had ended
    and not yet handed its slot on, so its gap is its first step less that end (Tune's, Ray's and the process's
    start-up, and the imports of a trial that gets a new process)."""
    ends, later = sorted(ends), sorted(first_steps)[slots:]
    gaps = []
    for step, end in zip(later, ends, strict=False):
        if step >= end:  # else the trial did not wait for this slot (a slot freed by an earlier one)
            gaps.append(step - end)
    return gaps


def _quantiles(values: list[float]) -> dict[str, float | None]:
    if not values:
        return {"median": None, "p90": None}
    ordered = sorted(values)
    return {"median": round(statistics.median(ordered), 2), "p90": round(ordered[int(0.9 * (len(ordered) - 1))], 2)}


def _per_part(memory: ResidentMemory, start_up: float | None, parts_ended: list[float]) -> list[float]:
    marks = [memory.cpu_before(unix) for unix in parts_ended]
    if start_up is None or None in marks:
        return []
    return [round(end - begin, 1) for begin, end in zip([start_up, *marks], marks, strict=False)]


def _between(seen: dict[str, float], first: str, last: str) -> float | None:
    return round(seen[last] - seen[first], 1) if first in seen and last in seen else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, nargs="+", default=[100, 300, 1000])
    parser.add_argument("--cpus", type=int, default=4, help="CPUs each of the two worker nodes declares")
    parser.add_argument("--width", type=int, default=32, help="the CNN's width (experiment's docstring)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    # SIGTERM (kill, a timeout) ends the bench through its `finally`, which stops the cluster's processes: by
    # default Python dies at once and leaves the nodes, moto, PostgreSQL and the MLflow server running.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    folder = Path(tempfile.mkdtemp(prefix="raycomp-scale-"))
    s3 = S3Endpoint(folder)
    mlflow = PostgresMlflow(folder, s3)
    env = {**head_env(token=uuid.uuid4().hex), **s3.env}
    head = start_node(env, num_cpus=0, resources={"trial_slot": 2 * args.cpus})
    workers = [start_node(env, num_cpus=args.cpus, head=head) for _ in range(2)]
    rows = []
    try:
        for asked in sorted(args.trials):
            ends, samples = sweep_shape(asked)
            trials = len(ends) * samples + 1
            row = one_sweep(
                trials, folder, s3, mlflow, {**env, "RAY_ADDRESS": f"127.0.0.1:{head.gcs}"}, 2 * args.cpus, args.width
            )
            rows.append(row)
            print(json.dumps(row), flush=True)
    finally:
        for node in [*workers, head]:
            node.stop()
        mlflow.stop()
        s3.stop()
    machine = f"{os.cpu_count()} cores; worker nodes declaring {args.cpus} CPUs each; CNN width {args.width}"
    if args.json:
        args.json.write_text(json.dumps({"machine": machine, "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
