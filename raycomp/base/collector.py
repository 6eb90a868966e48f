"""Python's cyclic garbage collector in the processes raycomp runs: a command's driver, a trial's process, a Ray
Train worker.

Such a process imports torch, Ray and MLflow, some 600,000 objects that live as long as it does. The collector
walks all of them on each full pass, several while they are imported, and again at exit: in a process that
imports them and exits, nearly half its CPU time (docs/benchmarks.md has the figures). So a process raycomp runs
pauses the collector while it starts. Once its imports are done they are frozen (``gc.freeze``: no later pass
walks them) without a pass, which would cost more than the few megabytes of garbage importing leaves are worth
(and they hold no user data: no user code has run). Once its real work starts (training, a Tune experiment), one
pass over what came after the imports frees what start-up left (a preflight's model among it), the rest is
frozen too, and collection goes on for newer objects. At exit everything is frozen, for the operating system
frees the memory anyway. Ray Serve does the same to its replicas once they start (``gc.collect(); gc.freeze()``).

Only in a process raycomp runs, and once: a frozen object is never collected, which a user's notebook that
calls ``raycomp.api``, or the next trial in a reused Tune actor, must not get. ``RAYCOMP_FREEZE_START_UP=0`` in
the environment turns it off (as ``RAY_SERVE_FREEZE_GC_ON_STARTUP=0`` does Ray Serve's): bench/bench_collector.py
compares the two.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
from collections.abc import Iterator

ENABLED_VARIABLE = "RAYCOMP_FREEZE_START_UP"
_UNTOUCHED, _PAUSED, _STARTED = "untouched", "paused", "started"
_state = _UNTOUCHED


def pause_collector() -> None:
    """No full passes until ``resume_collector``, and none at this process's exit. For a process raycomp runs
    (its commands, a trial's function, a Train worker's loop); once a process: later calls do nothing."""
    global _state
    # started already, the collector off by someone else's choice, or this turned off
    if _state != _UNTOUCHED or not gc.isenabled() or os.environ.get(ENABLED_VARIABLE, "1") == "0":
        return
    gc.disable()
    atexit.register(gc.freeze)  # runs after the handlers registered later (Ray's, MLflow's): last
    _state = _PAUSED


def freeze_imports() -> None:
    """The process has imported what it needs and run no user code yet: all of it is frozen without a pass
    (its garbage stays: see above). Nothing unless ``pause_collector`` paused it."""
    if _state == _PAUSED:
        gc.freeze()


def resume_collector() -> None:
    """Start-up is over: its garbage is freed, what it kept is frozen out of later passes, which run again for
    what comes after. Nothing unless ``pause_collector`` paused it, so it is safe in code any process runs."""
    global _state
    if _state == _PAUSED:
        gc.collect()
        gc.freeze()
        gc.enable()
        _state = _STARTED


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Paused for the block, or until ``resume_collector`` inside it: a trial that fails while it starts leaves
    its reused process collecting again."""
    pause_collector()
    try:
        yield
    finally:
        resume_collector()
