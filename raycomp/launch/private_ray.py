"""A private Ray on this machine, started by ``cluster.init_ray``: its temporary folder, its processes in a
session of their own, its node on loopback, a free port for its GCS, and its end at exit (processes waited
for, folders removed)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

from raycomp.base.scratch import process_scratch_path, remove_tree

RAY_TEMP_PREFIX = "raycomp-ray-"  # a private Ray's temporary folder in TMPDIR (base/scratch.py names and clears)
# A unix socket's path holds at most 107 bytes, and Ray's longest is <temp dir>/session_<date, 26 characters>_<pid,
# up to 7>/sockets/plasma_store: 64 bytes after the temp dir.
_RAY_TEMP_DIR_MAX = 107 - 64


def private_temp_dir() -> Path | None:
    """A new folder in TMPDIR for a private Ray's sessions, removed when this process exits (or, if it is
    killed outright, by the next raycomp command: ``scratch.remove_abandoned``). Ray's default,
    ``$TMPDIR/ray``, keeps every session's logs and sockets, a few megabytes a command, for good.

    None (Ray's default folder, from which only this Ray's session is removed at exit) when ``RAY_TMPDIR`` chooses
    one, or when TMPDIR is too long a path for the unix sockets Ray makes under it (above about 23 characters).
    """
    if "RAY_TMPDIR" in os.environ:
        return None
    folder = process_scratch_path(RAY_TEMP_PREFIX)  # one per process: a second Ray here adds a session to it
    if len(str(folder).encode()) > _RAY_TEMP_DIR_MAX:
        return None
    try:
        folder.mkdir(mode=0o700, exist_ok=True)
        if folder.stat().st_uid != os.getuid():  # left by another user's process of the same id
            return None
    except OSError:  # Ray says what is wrong with TMPDIR in its own words
        return None
    return folder


def shut_down_and_remove(folders: list[Path]) -> None:
    """At exit: stops the private Ray, waiting for its processes, then removes its temporary folders.

    A worker that was still ending may write a last log line meanwhile, so the removal is tried a few times.
    """
    with contextlib.suppress(Exception):
        ray.shutdown(wait_for_processes=True)
    for folder in folders:
        if folder.is_symlink():  # Ray's link to its newest session, left pointing nowhere
            with contextlib.suppress(OSError):
                if not folder.exists():
                    folder.unlink()
            continue
        for _ in range(20):
            remove_tree(folder)
            if not folder.exists():
                break
            time.sleep(0.1)


@contextlib.contextmanager
def processes_of_their_own() -> Iterator[None]:
    """Ray's processes started inside (GCS, raylet, dashboard; the raylet's workers follow it) in a session of
    their own, with SIGTERM unblocked (``sigterm_kept`` holds it back in this process meanwhile).

    ``timeout``, systemd and Slurm stop a command with SIGTERM to its whole process group: a private Ray in it
    died at once, and the driver, its GCS gone, hung for a minute and died leaving its MLflow runs RUNNING
    (reliability notes, D1). Out of the group, Ray stays up while the driver ends the sweep as for Ctrl-C, then
    stops it. Ray itself ends them when the driver dies (the kernel's parent-death signal, which Ray sets where
    it is supported; elsewhere its reaper needs them in the driver's group, so they stay there).
    """
    from ray._private import services
    from ray._private.utils import detect_fate_sharing_support

    own_session = detect_fate_sharing_support()
    popen = services.ConsolePopen

    class OwnSessionPopen(popen):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            ray_preexec = kwargs.get("preexec_fn")

            def preexec() -> None:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})
                if ray_preexec is not None:
                    ray_preexec()

            kwargs["preexec_fn"] = preexec
            if own_session:
                kwargs.setdefault("start_new_session", True)
            super().__init__(*args, **kwargs)

    services.ConsolePopen = OwnSessionPopen
    try:
        yield
    finally:
        services.ConsolePopen = popen


@contextlib.contextmanager
def loopback_node() -> Iterator[None]:
    """A private Ray's node on 127.0.0.1, so its GCS, raylet, workers and agents listen on loopback only.

    Ray binds its servers to the node's IP, and ``ray.init`` replaces a loopback ``_node_ip_address`` with
    the host's address unless Ray runs as a single-host node (its switch ``ENABLE_RAY_CLUSTER``, off on
    macOS and Windows, read from ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` at import). It is turned off only
    while this node starts: the driver knows its node afterwards, and joining a cluster never comes here.
    """
    from ray._private import ray_constants

    was = ray_constants.ENABLE_RAY_CLUSTER
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = was


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
