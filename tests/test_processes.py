"""The suite's own process handling (tests/processes.py, tests/leftovers.py, issue 54): a server stops with its
children, a start that fails says why and stops what it started, and a run that leaves a process running fails."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest
from leftovers import RUN_MARKER, kill_all, marked
from processes import StartFailed, answers, start_server, stop_group

pytestmark = pytest.mark.spawns  # every test here starts processes: the slow lane
TESTS = Path(__file__).parent


def test_a_group_stop_ends_the_servers_children_too():
    """``mlflow server``'s uvicorn outlived a SIGTERM to the server alone."""
    server = subprocess.Popen(["sh", "-c", "sleep 300 & sleep 300"], start_new_session=True)
    time.sleep(0.5)
    children = psutil.Process(server.pid).children()
    stop_group(server, timeout=5)
    assert children and not [child for child in children if child.is_running() and child.status() != "zombie"]


def test_a_start_that_dies_fails_at_once_with_all_it_printed(tmp_path):
    said = "; ".join(f"print('line {i}')" for i in range(200))
    started = time.monotonic()
    with contextlib.ExitStack() as stops, pytest.raises(StartFailed) as failed:
        start_server(
            lambda port: [sys.executable, "-c", f"{said}; raise SystemExit(3)"],
            lambda port: False,
            tmp_path / "log",
            "the server",
            stops,
        )
    message = str(failed.value)
    assert time.monotonic() - started < 30
    assert "exited with 3" in message and "line 0\n" in message and "line 199\n" in message


def test_a_start_that_lost_its_port_is_tried_again_on_another(tmp_path):
    tried: list[int] = []

    def command(port: int) -> list[str]:
        tried.append(port)
        if len(tried) == 1:  # what uvicorn says when another process took the port first
            return [sys.executable, "-c", "raise SystemExit('[Errno 98] Address already in use')"]
        return [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]

    with contextlib.ExitStack() as stops:
        process, port = start_server(
            command, lambda port: answers(f"http://127.0.0.1:{port}/"), tmp_path / "log", "the server", stops
        )
        assert len(tried) == 2 and port == tried[1] and process.poll() is None
    assert process.poll() is not None  # stopped with the stack


@pytest.fixture
def own_marker(monkeypatch):
    """A marker of this test's own for what it starts (leftovers.marked): none of it may be left at its end."""
    marker = uuid.uuid4().hex
    monkeypatch.setenv(RUN_MARKER, marker)
    yield marker
    left = marked(marker)
    kill_all(left)
    assert not left, [process.cmdline() for process in left]


@pytest.mark.skipif(not Path("/usr/lib/postgresql/15/bin/initdb").is_file(), reason="PostgreSQL 15 is not installed")
def test_a_cluster_whose_node_fails_to_start_stops_its_servers(tmp_path, monkeypatch, own_marker):
    """The multi-node fixture's setup raising at the head: the S3 server, PostgreSQL and the MLflow server it had
    started are stopped (the issue saw them orphaned), PostgreSQL's folder removed."""
    import cluster_services

    def failing_node(*args, **kwargs):
        raise StartFailed("ray start did not come up (exited with 1)", "Local node IP: 127.0.0.1")

    monkeypatch.setattr(cluster_services, "start_node", failing_node)
    made: list[Path] = []  # this cluster's own folders: other xdist workers may be starting clusters of their own
    make_folder = cluster_services.tempfile.mkdtemp

    def recorded_folder(*args, **kwargs):
        made.append(Path(make_folder(*args, **kwargs)))
        return str(made[-1])

    monkeypatch.setattr(cluster_services.tempfile, "mkdtemp", recorded_folder)
    with pytest.raises(StartFailed, match="Local node IP"):
        cluster_services.Cluster(tmp_path)
    assert made and not [folder for folder in made if folder.exists()]
    assert not marked(own_marker)


LEAKING_TEST = """
import subprocess, sys

def test_leaves_a_process():
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{token}"], start_new_session=True)
"""
CLEAN_TEST = """
import subprocess

def test_waits_for_its_process():
    subprocess.run(["true"], check=True)
"""


@pytest.mark.parametrize("workers", [["-p", "no:xdist"], ["-n", "1"]])
def test_a_run_that_leaves_a_process_running_fails_and_names_it(tmp_path, workers):
    """The check at the run's end (leftovers.py), by itself and as xdist's controller: the run exits 1 (its test
    passed), names the process and kills it; a run that leaves nothing passes."""
    token = uuid.uuid4().hex
    (tmp_path / "test_leak.py").write_text(LEAKING_TEST.format(token=token))
    (tmp_path / "test_clean.py").write_text(CLEAN_TEST)
    env = {**os.environ, "PYTHONPATH": str(TESTS), "RAYCOMP_LEFTOVER_GRACE_S": "2"}
    command = [sys.executable, "-m", "pytest", "-p", "leftovers", "-p", "no:cacheprovider", *workers]
    try:
        leaked = subprocess.run(
            [*command, "test_leak.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
        )
        assert leaked.returncode == 1 and "1 passed" in leaked.stdout, leaked.stdout + leaked.stderr
        assert "1 processes of this run outlived it (killed now)" in leaked.stdout and token in leaked.stdout
        time.sleep(0.5)
        assert not [process for process in psutil.process_iter(["cmdline"]) if token in (process.info["cmdline"] or ())]
    finally:
        for process in psutil.process_iter(["cmdline"]):
            if token in (process.info["cmdline"] or ()):
                process.kill()
    clean = subprocess.run(
        [*command, "test_clean.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert clean.returncode == 0 and "outlived" not in clean.stdout, clean.stdout + clean.stderr
