"""SIGTERM ends a raycomp command the way Ctrl-C does.

``timeout``, ``kill``, Slurm and Kubernetes stop a process with SIGTERM, whose default action ends it
at once: no ``finally`` runs, so its MLflow run stays RUNNING and a checkpoint being written is left in
its temporary folder. Turned into SIGINT's path, the same context managers that handle Ctrl-C end the
run KILLED and remove the temporary folders, and a sweep's Tune saves its state for ``--resume``.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


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
