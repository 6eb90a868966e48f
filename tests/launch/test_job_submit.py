"""`ray job submit` of a sweep to a real Ray head on 127.0.0.1: the README's cluster path, end to end.

The head is started like cluster.yaml's (``ray start --head`` with ``trial_slot`` resources, token auth off),
the sweep is submitted with the real ``ray job submit`` CLI, and the head is stopped by signalling only the
processes this test started: ``ray stop`` would also stop every other Ray on the host (docs/ray-notes.md).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
from find_experiments import SHRUNK_METHOD, shrunk
from ray_nodes import free_ports, head_env, stop_head, submit_and_wait

REPO = Path(__file__).resolve().parents[2]
# The working dir Ray zips and uploads; .gitignore already drops .venv/runs, these keep it small without one.
EXCLUDES = [".venv", ".git", "runs", "mlruns", "mlflow.db", "*.whl", "**/__pycache__", ".pytest_cache", ".ruff_cache"]

EXPERIMENT = """\
name: job-submit
model: {{name: cnn}}
data: {{name: synthetic, num_train: 256, num_test: 128, batch_size: 64, eval_batch_size: 128}}
max_duration: 1ep
algorithms:
  selective_backprop: {{keep: 0.5}}
scaling: {{num_workers: 1}}
tracking: {{enabled: false}}
storage_path: {storage}
sweep:
  space:
    algorithms.selective_backprop.keep: {{grid: [0.5]}}
"""


@pytest.fixture(scope="module")
def ray_head():
    """A Ray head on 127.0.0.1 with free ports, 2 CPUs and 2 trial slots; yields (dashboard URL, env).

    One per module: its jobs run one after another, and a head takes seconds to start and stop."""
    from ray.job_submission import JobSubmissionClient

    gcs, dashboard, client, agent, agent_grpc, metrics, runtime_env = free_ports(7)
    temp_dir = tempfile.mkdtemp(prefix="rcray-")  # short: Ray's socket paths live under it
    env = head_env()
    command = [
        *("ray", "start", "--head", "--block", "--disable-usage-stats", "--num-cpus=2", "--num-gpus=0"),
        '--resources={"trial_slot": 2}',
        f"--port={gcs}",
        "--include-dashboard=true",
        "--dashboard-host=127.0.0.1",
        f"--dashboard-port={dashboard}",
        f"--ray-client-server-port={client}",
        f"--dashboard-agent-listen-port={agent}",
        f"--dashboard-agent-grpc-port={agent_grpc}",
        f"--metrics-export-port={metrics}",
        f"--runtime-env-agent-port={runtime_env}",
        f"--temp-dir={temp_dir}",
    ]
    log = open(os.path.join(temp_dir, "ray-start.log"), "w+")  # noqa: SIM115  (closed in the finally)
    started = time.monotonic()
    proc = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    address = f"http://127.0.0.1:{dashboard}"
    try:
        deadline = started + 90
        while True:
            if proc.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                pytest.fail(f"ray start did not come up (exit {proc.returncode}):\n{log.read()[-4000:]}")
            try:
                JobSubmissionClient(address)
                break
            except Exception:
                time.sleep(0.5)
        print(f"ray start: {time.monotonic() - started:.1f} s")
        yield address, env
    finally:
        stopping = time.monotonic()
        try:
            alive = stop_head(proc, temp_dir)
        finally:
            if proc.poll() is None:  # stop_head failed: ray start still stops what it started
                proc.terminate()
                proc.wait(timeout=60)
            log.close()
            shutil.rmtree(temp_dir, ignore_errors=True)
        print(f"head stopped: {time.monotonic() - stopping:.1f} s")
        assert not alive, f"Ray processes of this head still alive: {alive}"


def test_ray_job_submit_runs_a_sweep_on_the_cluster(ray_head, tmp_path):
    address, env = ray_head
    storage = tmp_path / "runs"
    experiment = tmp_path / "sweep.yaml"
    experiment.write_text(EXPERIMENT.format(storage=storage))
    submit_and_wait(address, env, REPO, {"excludes": EXCLUDES}, experiment)

    results = json.loads((storage / "job-submit" / "results.json").read_text())
    rows = {row["variant"]: row for row in results["trials"]}
    assert sorted(rows) == ["baseline", "method"], results
    for row in rows.values():
        assert row["status"] == "TERMINATED", row
        assert isinstance(row["eval/accuracy"], float) and 0 <= row["eval/accuracy"] <= 1, row


def test_ray_job_submit_runs_a_find_whose_stages_train_on_the_cluster(ray_head, tmp_path):
    """`raycomp find` as a cluster job (issue 30 item 5): its driver joins the head, each stage's round of trials
    is a Tune run on the cluster, and it answers in the shared storage."""
    address, env = ray_head
    path = shrunk(tmp_path, "find-job", control=False)
    config = path.read_text().replace(f"tracking_uri: sqlite:///{tmp_path / 'mlflow.db'}", "enabled: false")
    path.write_text(config)
    logs = submit_and_wait(address, env, REPO, {"excludes": EXCLUDES}, path, command="find")

    answer = json.loads((tmp_path / "find-job" / "find.json").read_text())
    assert "candidates (the stage each reached, and how it ended there):" in logs, logs[-4000:]
    arms = {row["arm"]: row for row in answer["tried"]}
    assert {"baseline", *(key for key in arms if key.startswith("progressive_resizing"))} == set(arms), arms
    assert all(not row["failed"] and row["stages"][0] == "screen" for row in arms.values()), arms
    assert answer["recommended"] in (None, SHRUNK_METHOD)  # which one is the machine's timing (test_find_cli.py)
