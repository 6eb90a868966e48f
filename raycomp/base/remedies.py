"""How a message tells the user to go on, in the words of the interface they called (issue 32 item 7).

A run folder's conflicts (a name that holds a sweep already, a resume with nothing to resume) are found deep in
``launch/``, the same for the command line and the Python API. Their remedies are said in the words of whichever
the user called: ``--resume`` on the command line, ``resume=True`` from ``raycomp.api``. The entry point sets
them once (``speaking``); the messages read them (``remedies()``).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Remedies:
    """The words for continuing a run (``resume``), adding to a sweep (``extend``, empty for a find, which has no
    such thing) and picking another name; ``kind``: what the run folder holds, in the messages' words."""

    resume: str
    extend: str
    rename: str
    kind: str = "sweep"

    @property
    def on_the_command_line(self) -> bool:
        return self.resume == "--resume"

    def for_a_find(self) -> Remedies:
        """The same words for a find: it resumes and renames as a sweep does, and cannot be extended."""
        return replace(self, extend="", kind="find")


COMMAND_LINE = Remedies(resume="--resume", extend="--extend", rename="--set name=...")
PYTHON = Remedies(resume="resume=True", extend="extend=True", rename="overrides=['name=...']")

_current: contextvars.ContextVar[Remedies] = contextvars.ContextVar("raycomp_remedies", default=COMMAND_LINE)


def remedies() -> Remedies:
    """The words of the interface this command was called through (the command line unless said otherwise)."""
    return _current.get()


@contextlib.contextmanager
def speaking(words: Remedies) -> Iterator[None]:
    """Messages raised in the block name their remedies in ``words``."""
    token = _current.set(words)
    try:
        yield
    finally:
        _current.reset(token)
