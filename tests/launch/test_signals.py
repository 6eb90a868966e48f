"""A trial's process stopped by Tune at a round's end prints no traceback (issue 59 item 2): Ray's SIGTERM handler
raises SystemExit inside whatever runs, a weakref callback included, where Python prints it as "Exception ignored"."""

from __future__ import annotations

import subprocess
import sys

RAISED_IN_A_CALLBACK = """
import sys, weakref
{install}

class Thing:
    pass

def stop(_):
    raise SystemExit(1)  # as Ray's sigterm_handler does

def fail(_):
    raise ValueError("a real error")

thing, other = Thing(), Thing()
kept = weakref.ref(thing, stop), weakref.ref(other, fail)
del thing, other
print("still running")
"""


def run(install: str) -> subprocess.CompletedProcess:
    code = RAISED_IN_A_CALLBACK.format(install=install)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)


def test_a_stop_raised_in_a_callback_is_not_printed_and_other_errors_still_are():
    plain = run("")
    assert "SystemExit" in plain.stderr and "ValueError: a real error" in plain.stderr  # what the output showed
    quiet = run("from raycomp.launch.signals import stops_said_quietly; stops_said_quietly(); stops_said_quietly()")
    assert quiet.stdout == "still running\n"
    assert "SystemExit" not in quiet.stderr and "ValueError: a real error" in quiet.stderr
