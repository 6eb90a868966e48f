"""The run's leftover check (a pytest plugin; tests/conftest.py loads it): no process the suite started may outlive it.

The run's first process (pytest-xdist's controller, or the lone pytest) puts a marker of this run in its environment
before any worker or test starts, so every process of the run inherits it: the xdist workers, the servers and Rays
they start, and PostgreSQL too, which ``pg_ctl`` daemonizes away from pytest's process tree (``runuser`` keeps the
environment). At the end, after xdist has stopped its workers, any process still carrying the marker (or still a
child of this one) is listed, killed and fails the run: a leaked server is a red run instead of an orphan holding
its port and temp folder.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

RUN_MARKER = "RAYCOMP_TEST_RUN"
# How long the xdist workers and their last children get to exit on their own (tests/test_processes.py: less).
EXIT_GRACE_S = float(os.environ.get("RAYCOMP_LEFTOVER_GRACE_S", "15"))


def marked(marker: str) -> list[psutil.Process]:
    """Every live process (but this one) whose environment holds ``RAYCOMP_TEST_RUN=marker``."""
    needle = f"\0{RUN_MARKER}={marker}\0".encode()
    found = []
    for entry in _proc_entries():
        try:
            environ = (Path("/proc") / entry / "environ").read_bytes()
        except OSError:  # gone meanwhile, or a kernel thread
            continue
        if needle in b"\0" + environ + b"\0":
            with contextlib.suppress(psutil.Error):
                found.append(psutil.Process(int(entry)))
    return found


def _proc_entries() -> Iterator[str]:
    if not Path("/proc").is_dir():  # not Linux: nothing to check
        return iter(())
    return (entry for entry in os.listdir("/proc") if entry.isdigit() and int(entry) != os.getpid())


def left_running(marker: str, grace_s: float = EXIT_GRACE_S, children: bool = True) -> list[psutil.Process]:
    """The processes of the run (``marker``'s, and this process's descendants with ``children``) still alive after
    ``grace_s``."""
    deadline = time.monotonic() + grace_s
    while True:
        alive = {process.pid: process for process in marked(marker)}
        if children:
            with contextlib.suppress(psutil.Error):
                alive.update((child.pid, child) for child in psutil.Process().children(recursive=True))
        alive = {pid: process for pid, process in alive.items() if _running(process)}
        if not alive or time.monotonic() > deadline:
            return list(alive.values())
        time.sleep(0.2)


def _running(process: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return process.status() != psutil.STATUS_ZOMBIE
    return False


def describe(process: psutil.Process) -> str:
    try:
        return f"pid {process.pid} (group {os.getpgid(process.pid)}): {' '.join(process.cmdline())[:300]}"
    except (psutil.Error, OSError):
        return f"pid {process.pid} (exited)"


def kill_all(processes: list[psutil.Process]) -> None:
    for process in processes:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(processes, timeout=5)


def report(config: pytest.Config, lines: list[str]) -> None:
    terminal = config.pluginmanager.get_plugin("terminalreporter")
    title = f"{len(lines)} processes of this run outlived it (killed now)"
    if terminal is None:
        print(title, *lines, sep="\n", file=sys.stderr)
        return
    terminal.write_sep("=", title, red=True)
    for line in lines:
        terminal.write_line(line)


def _is_first_process(config: pytest.Config) -> bool:
    return not hasattr(config, "workerinput")  # an xdist worker has it


def pytest_configure(config: pytest.Config) -> None:
    if _is_first_process(config):  # before xdist starts its workers (its pytest_sessionstart), which inherit it
        os.environ[RUN_MARKER] = uuid.uuid4().hex


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session: pytest.Session) -> Iterator[None]:
    """After every other plugin's session end (xdist's stops its workers; the summary is printed): the check."""
    try:
        return (yield)
    finally:
        if _is_first_process(session.config) and RUN_MARKER in os.environ:
            left = left_running(os.environ[RUN_MARKER])
            if left:
                report(session.config, [describe(process) for process in left])
                kill_all(left)
                if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
