"""`ray job submit` of a sweep to a real Ray head on 127.0.0.1: the README's cluster path, end to end.

The head is started like cluster.yaml's (``ray start --head`` with ``trial_slot`` resources, token auth off),
the sweep is submitted with the real ``ray job submit`` CLI, and the head is stopped by signalling only the
processes this test started: ``ray stop`` would also stop every other Ray on the host (docs/ray-notes.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from find_experiments import SHRUNK_METHOD, shrunk

REPO = Path(__file__).resolve().parents[2]
# The working dir Ray zips and uploads; .gitignore already drops .venv/runs, these keep it small without one.
EXCLUDES = [".venv", ".git", "runs", "mlruns", "mlflow.db", "*.whl", "**/__pycache__", ".pytest_cache", ".ruff_cache"]
# Variables that would point the head or the CLI at another Ray, or give them a token.
FOREIGN_RAY_ENV = (
    "RAY_ADDRESS",
    "RAY_API_SERVER_ADDRESS",
    "RAY_GCS_SERVER_PORT",
    "RAY_AUTH_TOKEN",
    "RAY_AUTH_TOKEN_PATH",
)
JOB_TIMEOUT_S = 240
AGENT_NOT_READY = "No available agent to submit job"

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


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def head_env() -> dict[str, str]:
    """This environment for the head and the CLI: the venv's bin first (the job's ``python``), auth off."""
    env = {key: value for key, value in os.environ.items() if key not in FOREIGN_RAY_ENV}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["RAY_AUTH_MODE"] = "disabled"  # loopback only: a real cluster keeps token auth (see the README)
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def bundled_psutil():
    """The psutil Ray bundles: ``import ray`` puts it on ``sys.path``."""
    import ray  # noqa: F401

    # isort: split
    import psutil

    return psutil


def ray_processes(proc: subprocess.Popen, temp_dir: str) -> list:
    """The live processes of this head: ``ray start``'s descendants and any process naming its temp dir."""
    psutil = bundled_psutil()
    found: dict[int, psutil.Process] = {}
    if proc.returncode is None:  # not yet reaped: the pid is still ``ray start``'s
        with contextlib.suppress(psutil.NoSuchProcess):
            found.update((child.pid, child) for child in psutil.Process(proc.pid).children(recursive=True))
    for candidate in psutil.process_iter(["cmdline"]):
        if candidate.pid != os.getpid() and any(temp_dir in arg for arg in candidate.info["cmdline"] or ()):
            found[candidate.pid] = candidate
    return list(found.values())


def title(process) -> str:
    """A process's command line, or "" once it has exited."""
    try:
        return " ".join(process.cmdline())
    except bundled_psutil().Error:
        return ""


def raylet_workers(processes: list) -> list:
    """The worker processes (tasks, actors, idle workers) under this head's raylet, not its agents."""
    psutil = bundled_psutil()
    workers = []
    for raylet in (process for process in processes if title(process).split(" ")[0].endswith("/raylet")):
        with contextlib.suppress(psutil.Error):
            for child in raylet.children():
                name = title(child)
                if "default_worker.py" in name or (name.startswith("ray::") and "Agent" not in name):
                    workers.append(child)
    return workers


def signal_all(processes: list, stop) -> list:
    """Sends ``stop`` (``psutil.Process.terminate`` or ``.kill``) to each process; waits 5 s; returns the living."""
    psutil = bundled_psutil()
    for process in processes:
        with contextlib.suppress(psutil.Error):
            stop(process)
    return psutil.wait_procs(processes, timeout=5)[1]


def stop_head(proc: subprocess.Popen, temp_dir: str) -> list[str]:
    """Stops this head and only its processes; returns those still alive at the end (none).

    Measured here: SIGTERM to ``ray start --block`` stops what it started in ~3 s, but after a Train
    job its raylet waits ~30 s for leftover workers (the job supervisor, Train's autoscaling
    coordinator), so those get SIGTERM first; signalling everything at once (as ``ray stop`` does)
    made the GCS linger ~30 s instead. Stragglers get SIGTERM, then SIGKILL.
    """
    psutil = bundled_psutil()
    started = ray_processes(proc, temp_dir)
    for _ in range(3):  # the raylet may start new (idle) workers meanwhile
        workers = raylet_workers(started)
        if not workers:
            break
        signal_all(workers, psutil.Process.terminate)
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    alive = psutil.wait_procs(started + ray_processes(proc, temp_dir), timeout=5)[1]
    for stop in (psutil.Process.terminate, psutil.Process.kill):
        if alive:
            alive = signal_all(alive, stop)
    return [title(process) or str(process.pid) for process in ray_processes(proc, temp_dir)]


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


def submit_and_wait(
    address: str, env: dict[str, str], working_dir: Path, runtime_env: dict, experiment: Path, command: str = "tune"
) -> str:
    """Submits ``python -m raycomp.<command> experiment`` with ``working_dir`` uploaded; returns the job's logs
    once it has succeeded (the test fails with them otherwise)."""
    from ray.job_submission import JobStatus, JobSubmissionClient

    submission_id = f"raycomp-test-{os.getpid()}-{time.monotonic_ns()}"
    submit = [
        *("ray", "job", "submit", "--address", address, "--submission-id", submission_id, "--no-wait"),
        *("--working-dir", str(working_dir), "--runtime-env-json", json.dumps(runtime_env)),
        *("--", "python", "-m", f"raycomp.{command}", str(experiment)),
    ]
    started = time.monotonic()
    submitted = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=120, check=False)
    # The dashboard answers before the head's job agent has registered; on a loaded machine the first
    # submission can then be refused with Ray's "No available agent to submit job, please try again later".
    while AGENT_NOT_READY in submitted.stderr + submitted.stdout and time.monotonic() < started + 60:
        time.sleep(2)
        submitted = subprocess.run(submit, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert submitted.returncode == 0, f"ray job submit failed:\n{submitted.stdout}\n{submitted.stderr}"

    client = JobSubmissionClient(address)
    deadline = started + JOB_TIMEOUT_S
    status = client.get_job_status(submission_id)
    while not status.is_terminal() and time.monotonic() < deadline:
        time.sleep(1)
        status = client.get_job_status(submission_id)
    if not status.is_terminal():
        client.stop_job(submission_id)
    logs = client.get_job_logs(submission_id)
    print(f"ray job submit -> {status}: {time.monotonic() - started:.1f} s")
    assert status == JobStatus.SUCCEEDED, f"job {submission_id} ended {status}; its logs:\n{logs[-8000:]}"
    # Train's placement-group cleaner found this cluster, not the test run's other local Ray.
    assert "Found multiple active Ray instances" not in logs, logs[-8000:]
    return logs


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


USER_EXPERIMENT = """\
name: own-model-job
model: {{class_path: my_project.nets.TinyResNet, init_args: {{num_classes: 3, widths: [8]}}}}
data:
  class_path: my_project.data.colour_squares
  init_args: {{num_train: 64, num_eval: 32, num_classes: 3, size: 8}}
  batch_size: 32
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


def test_ray_job_submit_with_a_user_package_as_the_working_dir(ray_head, tmp_path):
    """The user's project folder is the job's working dir: its package imports in the driver, each Tune
    trial and each Ray Train worker on the cluster (raycomp comes from the head's environment)."""
    address, env = ray_head
    project = tmp_path / "project"
    shutil.copytree(REPO / "examples" / "own_model", project, ignore=shutil.ignore_patterns("__pycache__"))
    storage = tmp_path / "runs"
    (project / "job.yaml").write_text(USER_EXPERIMENT.format(storage=storage))
    submit_and_wait(address, env, project, {}, Path("job.yaml"))

    results = json.loads((storage / "own-model-job" / "results.json").read_text())
    rows = {row["variant"]: row for row in results["trials"]}
    assert sorted(rows) == ["baseline", "method"], results
    assert all(row["status"] == "TERMINATED" for row in rows.values()), results


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
