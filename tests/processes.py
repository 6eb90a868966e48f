"""Starting and stopping the servers a test needs, so that none outlives it and a loaded machine fails none.

- A server runs in a session of its own and is stopped as a process group (``stop_group``): ``mlflow server``
  runs uvicorn as a child, which outlived a SIGTERM to the parent alone as an orphan holding the port.
- Its stop is registered (an ``ExitStack``) the moment it runs, and a start that raises closes that stack
  (``stopped_on_error``): a fixture whose third server fails to start stops the first two.
- A start waits as long as the server progresses (CPU or log output) rather than a fixed time, fails at once
  when it exits, and then carries its whole log (``wait_until_up``): on a machine busy with a sweep a server
  took more than 90 s to create its tables.
- Ports are found free by binding and releasing them, so another process can take one first: a start that
  failed on a bind error is tried again on fresh ports (``start_server``).
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import psutil

STALL_S = 60  # a start that used no CPU and wrote no log for this long is stuck
START_LIMIT_S = 300  # any start fails after this long, however busy the machine (pytest-timeout's limit is 600 s)
START_ATTEMPTS = 3  # starts that lost a port to another process
T = TypeVar("T")
PORT_TAKEN = re.compile(r"address already in use|already occupied|could not bind|failed to bind", re.IGNORECASE)


class StartFailed(RuntimeError):
    """A server that did not come up; the message has everything it printed."""

    def __init__(self, message: str, output: str):
        super().__init__(f"{message}; its output:\n{output}")
        self.message, self.output = message, output

    @property
    def port_taken(self) -> bool:
        return bool(PORT_TAKEN.search(self.output))


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def answers(url: str) -> bool:
    """Whether ``url`` answers an HTTP GET with a success."""
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status < 400
    except OSError:
        return False


@contextlib.contextmanager
def stopped_on_error(stops: contextlib.ExitStack) -> Iterator[contextlib.ExitStack]:
    """Closes ``stops`` (every stop registered so far) when the block raises: a start that fails half-way leaves
    nothing running."""
    try:
        yield stops
    except BaseException:
        stops.close()
        raise


def stop_group(process: subprocess.Popen, timeout: float = 20) -> None:
    """SIGTERM to ``process``'s process group (it was started with ``start_new_session=True``), SIGKILL to what is
    left of the group ``timeout`` seconds later; ``process`` reaped. Safe to call again."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and _group_alive(process):
        time.sleep(0.1)
    # The group's id cannot be reused while any member is alive (Linux), so this reaches only what is left of it.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _group_alive(process: subprocess.Popen) -> bool:
    if process.poll() is None:
        return True
    try:
        os.killpg(process.pid, 0)
    except ProcessLookupError:
        return False
    return True


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of ``pid`` and its live descendants: how a start that is still working shows it."""
    try:
        processes = [psutil.Process(pid)]
        processes += processes[0].children(recursive=True)
    except psutil.Error:
        return 0.0
    total = 0.0
    for process in processes:
        with contextlib.suppress(psutil.Error):
            times = process.cpu_times()
            total += times.user + times.system + times.children_user + times.children_system
    return total


def wait_until_up(ready: Callable[[], bool], process: subprocess.Popen, log: Path, what: str, since: int = 0) -> None:
    """Returns once ``ready()``. Raises ``StartFailed`` with ``process``'s log (from byte ``since``) at once when it
    has exited, when it has neither used CPU nor written to its log for ``STALL_S`` (stuck), or after
    ``START_LIMIT_S``: a server slow on a loaded machine is waited for, a dead one is not."""
    started = progressed = time.monotonic()
    seen: tuple[float, int] | None = None
    while True:
        now = time.monotonic()
        progress = (tree_cpu_s(process.pid), log.stat().st_size if log.exists() else 0)
        if progress != seen:
            seen, progressed = progress, now
        if process.poll() is not None:  # first: another server on the port would answer ``ready`` too
            problem = f"exited with {process.returncode}"
        elif ready():
            return
        elif now - progressed > STALL_S:
            problem = f"stuck: no CPU and no output for {STALL_S} s"
        elif now - started > START_LIMIT_S:
            problem = f"still not up after {START_LIMIT_S} s"
        else:
            time.sleep(0.3)
            continue
        raise StartFailed(f"{what} did not come up ({problem}, after {now - started:.0f} s)", read_from(log, since))


def read_from(log: Path, offset: int = 0) -> str:
    if not log.exists():
        return ""
    with log.open("rb") as file:
        file.seek(offset)
        return file.read().decode(errors="replace")


def on_free_ports(start: Callable[[], T]) -> T:
    """``start()``, again when it failed because a port it chose was taken meanwhile (it chooses fresh ones each
    time): ports are found free by binding and releasing them, so another process can take one first."""
    for _ in range(START_ATTEMPTS - 1):
        try:
            return start()
        except StartFailed as failed:
            if not failed.port_taken:
                raise
    return start()


def start_server(
    command: Callable[[int], list[str]],
    ready: Callable[[int], bool],
    log: Path,
    what: str,
    stops: contextlib.ExitStack,
    env: dict[str, str] | None = None,
    port: int | None = None,
) -> tuple[subprocess.Popen, int]:
    """Runs ``command(port)`` (on a free port, or on ``port``) in a session of its own, its output appended to
    ``log``, its stop registered on ``stops`` as it starts; returns it and its port once ``ready(port)``."""

    def start_once() -> tuple[subprocess.Popen, int]:
        chosen = port or free_port()
        since = log.stat().st_size if log.exists() else 0
        with log.open("a") as output:
            process = subprocess.Popen(
                command(chosen), stdout=output, stderr=subprocess.STDOUT, env=env, start_new_session=True
            )
        stops.callback(stop_group, process)
        try:
            wait_until_up(functools.partial(ready, chosen), process, log, what, since)
        except BaseException:
            stop_group(process)
            raise
        return process, chosen

    return start_once() if port else on_free_ports(start_once)


def run_step(command: list[str], what: str, timeout: float = START_LIMIT_S) -> subprocess.CompletedProcess:
    """``command`` run to its end; ``StartFailed`` with all it printed when it fails."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise StartFailed(f"{what} failed (exit {done.returncode})", done.stdout + done.stderr)
    return done
