"""SIGTERM ends a raycomp command the way Ctrl-C does.

``timeout``, ``kill``, Slurm and Kubernetes stop a process with SIGTERM, whose default action ends it
at once: no ``finally`` runs, so its MLflow run stays RUNNING and a checkpoint being written is left in
its temporary folder. Turned into SIGINT's path, the same context managers that handle Ctrl-C end the
run KILLED and remove the temporary folders, and a sweep's Tune saves its state for ``--resume``.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from raycomp.base.process_env import environment


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """Runs whatever Ctrl-C would run now: Tune's handler during ``Tuner.fit`` (it saves the sweep and
    returns), else Python's, a ``KeyboardInterrupt``. Also when SIGINT is ignored, as it is in a
    background job of a non-interactive shell: SIGTERM must still stop the run."""
    handler = signal.getsignal(signal.SIGINT)
    if callable(handler) and handler is not signal.default_int_handler:
        handler(signal.SIGINT, frame)
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM to this process acts as Ctrl-C (main thread only: Python runs handlers there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def sigterm_kept() -> Iterator[None]:
    """The SIGTERM handler in force before the block is in force after it, whatever the block installed.

    ``ray.init`` installs a Python handler (``sys.exit(15)``) and Ray's C++ failure-signal handler (a stack
    dump, then SIGABRT: exit 134) for SIGTERM; either would end a sweep without saving it, marking its runs,
    or printing how to resume it. Installing the Python handler again also puts Python's C handler back.

    SIGTERM is held back (blocked) inside, so one that arrives while Ray starts reaches the handler in force
    after the block, at its end, instead of Ray's (which exited 15 with no hint, its runs left RUNNING). A
    process started inside inherits the block: Ray's are started with it lifted (``cluster.py``).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    ours = signal.getsignal(signal.SIGTERM)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        if ours is not None:
            signal.signal(signal.SIGTERM, ours)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a SIGTERM held back is delivered now, to ours


class Deferred:
    """Whether an interrupt arrived while ``interrupts_deferred`` held it back."""

    def __init__(self) -> None:
        self.signal: int | None = None

    def __bool__(self) -> bool:
        return self.signal is not None


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[Deferred]:
    """While inside, Ctrl-C and SIGTERM are noted instead of acted on, so the block (a sweep's results and
    their MLflow records) is written whole; the caller reads the yielded flag and stops after it."""
    deferred = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield deferred
        return

    def note(signum: int, frame: FrameType | None) -> None:
        deferred.signal = signum

    previous = {signum: signal.signal(signum, note) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield deferred
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@contextlib.contextmanager
def tune_interrupts() -> Iterator[Deferred]:
    """While Tune runs: the first Ctrl-C (or SIGTERM, which acts as it) asks Tune to stop and save the sweep,
    and is noted, so the caller knows for sure that the sweep was interrupted (Tune returns the same results
    either way, and its trials' statuses after its cleanup do not tell); a second one raises
    ``KeyboardInterrupt`` at once. Tune's own Ctrl-C handler is switched off (``TUNE_DISABLE_SIGINT_HANDLER``)
    and asked through the SIGUSR1 handler it installs for the same purpose."""
    noted = Deferred()
    if threading.current_thread() is not threading.main_thread():
        yield noted
        return

    def on_interrupt(signum: int, frame: FrameType | None) -> None:
        if noted:
            raise KeyboardInterrupt
        noted.signal = signum
        os.kill(os.getpid(), signal.SIGUSR1)  # Tune's handler: stop, save the sweep's state, return

    previous = signal.signal(signal.SIGINT, on_interrupt)
    try:
        with environment({"TUNE_DISABLE_SIGINT_HANDLER": "1"}):
            yield noted
    finally:
        signal.signal(signal.SIGINT, previous)


def stops_said_quietly() -> None:
    """In a trial's process: the stop Tune asks for at a round's end is not printed as a traceback.

    Tune stops a trial's actor with SIGTERM, and Ray's handler there raises ``SystemExit`` wherever the process is;
    inside a weakref callback Python cannot raise it and prints "Exception ignored in ..." with Ray's traceback into
    the sweep's or the find's output. That stop was asked for: it is dropped; any other unraisable error is printed
    as before. Installed once per process (Tune reuses a trial's process for the next trial)."""
    default = sys.unraisablehook
    if getattr(default, "stops_said_quietly", False):
        return

    def hook(unraisable: Any) -> None:
        if not isinstance(unraisable.exc_value, SystemExit):
            default(unraisable)

    hook.stops_said_quietly = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook
