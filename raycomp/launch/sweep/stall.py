"""A line a minute while a sweep's or find's round hears nothing from its trials, saying what it waits for.

On a busy machine a round can sit for many minutes before its first result: trial processes start slowly, Ray
has no free CPU, or a restored Tune state is being read. Tune's table stays silent then, and a user could not tell
a slow round from a stuck one (issue 59 item 4: a ``--resume`` sat 14 minutes with no output). The watch prints
what Ray holds and how loaded the machine is, and how to stop and continue.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from ray import tune

from raycomp.base.remedies import remedies

QUIET_S = 60.0  # a round that hears nothing for this long says why, and again each time as long
_heard = [time.monotonic()]  # module-level: the callback is saved with Tune's state and restored as a new object


class Heard(tune.Callback):
    """Notes when a trial last started, reported or ended (on the driver, in Tune's loop)."""

    def on_trial_start(self, iteration: int, trials: list, trial: Any, **info: Any) -> None:
        _heard[0] = time.monotonic()

    on_trial_result = on_trial_complete = on_trial_error = on_trial_start  # type: ignore[assignment]


@contextlib.contextmanager
def said_when_quiet(quiet_s: float = QUIET_S) -> Iterator[None]:
    """While inside, every ``quiet_s`` without a trial starting, reporting or ending, one line saying so."""
    _heard[0] = time.monotonic()
    done, resume = threading.Event(), remedies().resume  # read here: a thread does not see this context's words

    def watch() -> None:
        while not done.wait(min(5.0, quiet_s / 4)):
            quiet = time.monotonic() - _heard[0]
            if quiet >= quiet_s:
                print(quiet_line(quiet, resume), flush=True)
                _heard[0] = time.monotonic()

    watcher = threading.Thread(target=watch, name="raycomp-quiet-round", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join(timeout=1)


def quiet_line(quiet_s: float, resume: str) -> str:
    """What a round that heard nothing for ``quiet_s`` waits on: Ray's free CPUs and the machine's load."""
    parts = [f"no trial has started, reported or ended for {quiet_s:.0f} s"]
    try:
        import ray

        free, total = ray.available_resources().get("CPU", 0.0), ray.cluster_resources().get("CPU", 0.0)
        parts.append(f"Ray has {free:g} of {total:g} CPUs free")
    except Exception:  # Ray's state cannot be read now: the load still says something
        pass
    cores = os.cpu_count() or 1
    load = os.getloadavg()[0]
    busy = load > 1.5 * cores
    parts.append(
        f"this machine's load is {load:.1f} on {cores} cores" + (" (busy: trials start slowly)" if busy else "")
    )
    return f"waiting: {'; '.join(parts)}. Ctrl-C stops it, and {resume} continues where it was"
