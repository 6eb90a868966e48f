"""Failures of the machine in one line, with what to do, and their traceback in a file that line names.

A Ray that does not start on an overloaded machine, a full disk or a port taken used to end a command with forty
lines of traceback; the user can act on each, so each is one ``error:`` line (``cli.common.exit_code_of``). The
traceback still matters to whoever looks into it: it goes to a file in TMPDIR.
"""

from __future__ import annotations

import errno
import os
import tempfile
import time
import traceback
from pathlib import Path

from raycomp.base.errors import MachineFailure, one_line


def traceback_file(error: BaseException) -> Path:
    """Writes ``error``'s traceback (with its causes) to a new file in TMPDIR; returns its path."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    handle, name = tempfile.mkstemp(prefix=f"raycomp-error-{stamp}-", suffix=".log")
    with os.fdopen(handle, "w") as file:
        file.write("".join(traceback.format_exception(error)))
    return Path(name)


def machine_failure(error: OSError) -> MachineFailure | None:
    """A full disk or a port taken as a ``MachineFailure`` saying what to do; None for other OS errors (a bug's
    traceback is shown as it is)."""
    where = f" writing {error.filename}" if error.filename else ""
    if error.errno in (errno.ENOSPC, errno.EDQUOT):
        return MachineFailure(f"the disk is full{where}: free space there, or set storage_path to a disk with room")
    if error.errno == errno.EADDRINUSE:
        return MachineFailure(f"a port this command needs is taken ({one_line(error)}): stop what holds it, or rerun")
    return None
