"""The sweep's end on a tracking server as trials grow (issue 33; docs/benchmarks.md "At scale"): the verdicts
tagged on the trials' MLflow runs (``tracking.log_verdicts``, one request per tagged run, at most
``MAX_TAGGED_TRIALS`` of them), and how a trial's run is
found at its end (a search by tags against ``get_run`` by the id the trial reported), on an ``mlflow server`` on
127.0.0.1 with a SQLite store (tests/helpers.py's).

Hand-made trials (tests/reportkit.py), one child run each; medians over the repeats.

    python bench/bench_sweep_end.py --trials 300 1000 --repeats 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # the suite's server and hand-made trials

from helpers import MlflowServer
from mlflow import MlflowClient
from reportkit import ARMS, Arm, hand_made_records

from raycomp.base import keys
from raycomp.results.configs import summarize_configs
from raycomp.results.summary import summarize
from raycomp.tracking import sweep_results
from raycomp.tracking.ref import RunRef
from raycomp.tracking.runs import find_run


def many_arms(count: int) -> tuple[Arm, ...]:
    """The hand-made references and ``count`` method configurations, every fifth faster."""
    methods = tuple(
        Arm(f"m{i:05d}", "method", {"algorithms.selective_backprop.keep": round(0.1 + i / (2 * count), 6)},
            speed=1.5 if i % 5 == 0 else 1.0)
        for i in range(count)
    )  # fmt: skip
    return tuple(arm for arm in ARMS if arm.variant != "method") + methods


def one_size(server: MlflowServer, trials: int, repeats: int) -> dict:
    client = MlflowClient(server.uri)
    experiment = client.create_experiment(f"end-{trials}-{time.monotonic_ns()}")
    parent = client.create_run(experiment).info.run_id
    summaries = summarize(hand_made_records(1, many_arms(trials - 3))[:trials])
    verdicts = summarize_configs(summaries, "max")
    children = {
        summary.trial_id: client.create_run(
            experiment, tags={keys.PARENT_TAG: parent, keys.TRIAL_TAG: summary.trial_id}
        ).info.run_id
        for summary in summaries
    }
    ref = RunRef(server.uri, experiment, parent)
    times = []
    for _ in range(repeats):
        began = time.perf_counter()
        assert sweep_results.log_verdicts(ref, verdicts, summaries)
        times.append(time.perf_counter() - began)
    sample = list(children.items())[:: max(1, len(children) // 50)]
    began = time.perf_counter()
    for trial_id, _ in sample:
        find_run(client, experiment, {keys.PARENT_TAG: parent, keys.TRIAL_TAG: trial_id})
    search_ms = (time.perf_counter() - began) / len(sample) * 1000
    began = time.perf_counter()
    for _, run_id in sample:
        client.get_run(run_id)
    get_ms = (time.perf_counter() - began) / len(sample) * 1000
    return {
        "trials": len(children),
        "verdict tags s (median)": round(statistics.median(times), 2),
        "verdict tags s (all)": [round(value, 2) for value in times],
        "find a run by tags ms": round(search_ms, 1),
        "get_run ms": round(get_ms, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, nargs="+", default=[300, 1000])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = MlflowServer(Path(folder) / "server")
        try:
            for trials in args.trials:
                print(json.dumps(one_size(server, trials, args.repeats)), flush=True)
        finally:
            server.stop()


if __name__ == "__main__":
    main()
