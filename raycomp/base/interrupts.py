"""Ctrl-C while a raycomp command starts up ends it with one line, ``interrupted``, not a traceback.

``exit_code_of`` handles Ctrl-C once a command runs. Before that (importing torch takes seconds, then
reading the config) an uncaught ``KeyboardInterrupt`` printed 20 to 90 lines from inside torch's import.
``quiet_interrupts`` installs an excepthook that prints the one line instead; Python still ends the
process by SIGINT afterwards, which a shell reports as 130. It acts only in a raycomp command
(``python -m raycomp.*`` or the ``raycomp`` script): a program that imports raycomp keeps its tracebacks.
Light on purpose (no raycomp imports), so the package can install it before anything heavy.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from types import TracebackType

INTERRUPTED = "interrupted"


def is_raycomp_command(argv: Sequence[str] | None = None) -> bool:
    """Whether this interpreter runs ``python [options] -m raycomp...`` or the ``raycomp`` console script."""
    argv = list(sys.orig_argv if argv is None else argv)
    if "-m" in argv:
        index = argv.index("-m")
        return index + 1 < len(argv) and argv[index + 1].split(".")[0] == "raycomp"
    return any(os.path.basename(arg) == "raycomp" for arg in argv[:2])


def quiet_interrupts() -> None:
    """In a raycomp command, an uncaught ``KeyboardInterrupt`` prints ``interrupted`` (installed once)."""
    if not is_raycomp_command() or getattr(sys.excepthook, "raycomp_quiet_interrupts", False):
        return
    previous = sys.excepthook

    def hook(kind: type[BaseException], value: BaseException, traceback: TracebackType | None) -> None:
        if issubclass(kind, KeyboardInterrupt):
            print(INTERRUPTED, file=sys.stderr)
            return
        previous(kind, value, traceback)

    hook.raycomp_quiet_interrupts = True  # type: ignore[attr-defined]
    sys.excepthook = hook
