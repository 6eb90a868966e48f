"""Ray nodes on 127.0.0.1 started by ``ray start`` as a cluster's are (cluster.yaml), for the tests that need a
cluster of their own: a head for ``ray job submit``, or a head and worker nodes. Each node runs in a session of
its own, so a test can stop it, or SIGKILL every process of it (a lost node), without touching any other Ray on
the host: ``ray stop`` would stop them all (docs/ray-notes.md).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from processes import StartFailed, on_free_ports, wait_until_up

# Variables that would point the nodes or the CLI at another Ray, or give them a token.
FOREIGN_RAY_ENV = (
    "RAY_ADDRESS",
    "RAY_API_SERVER_ADDRESS",
    "RAY_GCS_SERVER_PORT",
    "RAY_AUTH_TOKEN",
    "RAY_AUTH_TOKEN_PATH",
)


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


def head_env(token: str) -> dict[str, str]:
    """This environment for the nodes and a user's shell on the cluster: the venv's bin first (the job's
    ``python``), token auth on with ``token`` (as cluster.yaml's ``RAY_AUTH_MODE=token``; given in the environment
    rather than ~/.ray/auth_token, which the host's other Rays share)."""
    env = {key: value for key, value in os.environ.items() if key not in FOREIGN_RAY_ENV}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN"] = token
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    return env


def auth_headers(env: dict[str, str]) -> dict[str, str]:
    """The HTTP header this test process sends the head's dashboard (job and state APIs): the token in ``env``.
    Explicit, because Ray's clients in this process take the token of the suite's own local Ray."""
    return {"Authorization": f"Bearer {env['RAY_AUTH_TOKEN']}"}


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
    made the GCS linger ~30 s instead. Stragglers get SIGKILL: they had SIGTERM from ``ray start``, and on a
    busy machine (the suite) one ignored it, so waiting 20 s for ``ray start`` and then 5 s for each of SIGTERM
    and SIGKILL took a cluster's teardown to 35 s, against 1-5 s a node otherwise.
    """
    psutil = bundled_psutil()
    started = ray_processes(proc, temp_dir)
    for _ in range(3):  # the raylet may start new (idle) workers meanwhile
        workers = raylet_workers(started)
        if not workers:
            break
        signal_all(workers, psutil.Process.terminate)
    proc.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)
    alive = psutil.wait_procs(started + ray_processes(proc, temp_dir), timeout=2)[1]
    if alive:
        signal_all(alive, psutil.Process.kill)
    proc.kill()  # (when it has exited: a no-op)
    proc.wait()
    return [title(process) or str(process.pid) for process in ray_processes(proc, temp_dir)]


@dataclass
class RayNode:
    """One ``ray start --block`` process (a head, or a worker node joined to ``head_gcs``) and its temp dir."""

    process: subprocess.Popen
    temp_dir: str
    log: Path
    gcs: int = 0  # the head's GCS port (0 for a worker node)
    dashboard: str = ""  # the head's dashboard URL
    stopped: bool = field(default=False)

    def kill(self) -> None:
        """Every process of this node SIGKILLed at once: the node is lost, as a machine that dies is."""
        processes = ray_processes(self.process, self.temp_dir)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        signal_all(processes, bundled_psutil().Process.kill)
        self.process.wait(timeout=30)
        self.stopped = True
        shutil.rmtree(self.temp_dir, ignore_errors=True)  # a lost node's folder: nothing will stop() it

    def stop(self) -> list[str]:
        """Stops this node and only its processes; returns those still alive (none)."""
        alive = [] if self.stopped else stop_head(self.process, self.temp_dir)
        self.stopped = True
        shutil.rmtree(self.temp_dir, ignore_errors=True)
        return alive


def start_node(
    env: dict[str, str], *, num_cpus: int, resources: dict[str, float] | None = None, head: RayNode | None = None
) -> RayNode:
    """A head (``head`` None: dashboard and job API on 127.0.0.1) or a worker node joined to ``head``, on free
    ports and a temp dir of its own, once it has registered with the cluster; started again on fresh ports when a
    port was taken meanwhile (Ray's ports are chosen free, then released)."""
    return on_free_ports(lambda: _start_node_once(env, num_cpus, resources or {}, head))


def _start_node_once(env: dict[str, str], num_cpus: int, resources: dict[str, float], head: RayNode | None) -> RayNode:
    ports = free_ports(8)
    temp_dir = tempfile.mkdtemp(prefix="rcray-")  # short: Ray's socket paths live under it
    command = [
        *("ray", "start", "--block", "--disable-usage-stats", f"--num-cpus={num_cpus}", "--num-gpus=0"),
        f"--resources={json.dumps(resources)}",
        "--node-ip-address=127.0.0.1",
        f"--node-name={Path(temp_dir).name}",  # how ``_registered`` tells this node from the cluster's others
        f"--node-manager-port={ports[0]}",
        f"--object-manager-port={ports[1]}",
        f"--dashboard-agent-listen-port={ports[2]}",
        f"--dashboard-agent-grpc-port={ports[3]}",
        f"--metrics-export-port={ports[4]}",
        f"--runtime-env-agent-port={ports[5]}",
        f"--temp-dir={temp_dir}",
    ]
    gcs, dashboard = (free_ports(3)[:2]) if head is None else (head.gcs, 0)
    if head is None:
        command += ["--head", f"--port={gcs}", "--include-dashboard=true", "--dashboard-host=127.0.0.1"]
        command += [f"--dashboard-port={dashboard}", f"--ray-client-server-port={ports[6]}"]
    else:
        command += [f"--address=127.0.0.1:{head.gcs}"]
    log = Path(temp_dir) / "ray-start.log"
    with log.open("w") as output:
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT, start_new_session=True)
    node = RayNode(
        process, temp_dir, log, gcs if head is None else 0, f"http://127.0.0.1:{dashboard}" if head is None else ""
    )
    try:
        wait_until_up(lambda: _registered(node, head, env), process, log, "ray start")
    except BaseException as error:
        said = node_logs(temp_dir)  # before stop() removes the node's folder with them
        node.stop()
        if isinstance(error, StartFailed):
            raise StartFailed(error.message, error.output + said) from None
        raise
    return node


RAY_LOGS = ("*.out", "*.err", "dashboard_agent.log")


def node_logs(temp_dir: str, tail: int = 3000) -> str:
    """The end of each of a node's own logs that has anything (raylet.out, gcs_server.out, dashboard_agent.log...):
    a failed ``ray start`` itself printed no more than its node's IP."""
    logs = Path(temp_dir) / "session_latest" / "logs"
    found = sorted({path for pattern in RAY_LOGS for path in logs.glob(pattern) if path.stat().st_size})
    return "".join(f"\n--- {path.name} ---\n{path.read_text(errors='replace')[-tail:]}" for path in found)


def state(dashboard: str, env: dict[str, str], resource: str, filters: list | None = None) -> list:
    """Ray's state API (``ray list nodes`` / ``actors``, all details) on the head at ``dashboard``."""
    from ray.util.state.api import StateApiClient
    from ray.util.state.common import ListApiOptions, StateResource

    client = StateApiClient(dashboard, headers={"Content-Type": "application/json", **auth_headers(env)})
    options = ListApiOptions(limit=1000, detail=True, filters=filters or [])
    return client.list(StateResource(resource), options, raise_on_missing_output=False)


def _registered(node: RayNode, head: RayNode | None, env: dict[str, str]) -> bool:
    from ray.job_submission import JobSubmissionClient

    try:
        if head is None:
            JobSubmissionClient(node.dashboard, headers=auth_headers(env))
            return True
        name = Path(node.temp_dir).name
        return bool(state(head.dashboard, env, "nodes", [("state", "=", "ALIVE"), ("node_name", "=", name)]))
    except Exception:
        return False


JOB_TIMEOUT_S = 240
AGENT_NOT_READY = "No available agent to submit job"


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

    client = JobSubmissionClient(address, headers=auth_headers(env))
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
