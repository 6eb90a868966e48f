"""raycomp's errors: one base class that carries its CLI exit code, and the one-line error format.

Every error a user can cause (a bad config, a checkpoint that does not fit, a store that does not
answer, a sweep or run that is not there) is a ``RaycompError``; the CLIs map it to ``exit_code`` in
one place (``raycomp.cli.common``). ``__reduce__`` keeps the message across Ray's process boundaries.
"""

from __future__ import annotations

from collections.abc import Sequence

from raycomp.base.redaction import redacted

# Exit codes of the CLIs (besides 0, done).
EXIT_FAILED = 1  # a trial failed, or the machine did (Ray did not start, a full disk, a port taken)
EXIT_USAGE = 2  # the input is wrong: config, checkpoint, a sweep or run that is not there
EXIT_STORE_DOWN = 3  # the MLflow store does not answer
EXIT_INTERRUPTED = 130  # Ctrl-C; the sweep can be resumed

_MAX_LINE = 300


class RaycompError(Exception):
    """An error the user can fix; ``problems`` holds one line per problem, the message joins them."""

    exit_code = EXIT_USAGE

    def __init__(self, problems: str | Sequence[str]) -> None:
        self.problems: list[str] = [problems] if isinstance(problems, str) else list(problems)
        super().__init__("\n".join(self.problems))

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:  # keeps `problems` across Ray's process boundaries
        return type(self), (self.problems,)


class ConfigError(RaycompError, ValueError):
    """An invalid experiment config; each problem reads ``source: key.path: message``."""


class CheckpointError(RaycompError, RuntimeError):
    """A checkpoint that cannot be loaded into this run, with the reason and the fix."""


class NotFound(RaycompError, LookupError):
    """A sweep, run or checkpoint that is not where the user pointed."""


class StorageUnwritable(RaycompError, RuntimeError):
    """``storage_path`` or ``TMPDIR`` cannot be written: found at start, not after the first epoch."""


class RunConflict(RaycompError, RuntimeError):
    """The name's run folder is in use by another process, or holds checkpoints of another training config."""


class FrontierOutOfOrder(RaycompError, RuntimeError):
    """A frontier whose arms did not train more steps the larger their budget: nothing is judged against it."""


class TrackingUnavailable(RaycompError, RuntimeError):
    """The MLflow store cannot be reached or opened."""

    exit_code = EXIT_STORE_DOWN


class MachineFailure(RaycompError, RuntimeError):
    """The machine failed, not the input: Ray did not start, the disk is full, a port is taken. The CLIs say it in
    one line with what to do, and name a file holding the traceback (``raycomp.base.failures``)."""

    exit_code = EXIT_FAILED


def one_line(error: BaseException, *, with_type: bool = True, limit: int = _MAX_LINE, separator: str = " ") -> str:
    """An exception as one short line, with no URI's password: for warnings printed while work goes on,
    and for trial errors.

    ``separator`` joins the message's lines (`` | `` keeps a ConfigError's problems apart in a table).
    """
    lines = [line.strip() for line in redacted(str(error)).splitlines() if line.strip()]
    text = separator.join(" ".join(line.split()) for line in lines) or type(error).__name__
    if with_type:
        text = f"{type(error).__name__}: {text}"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_line(error: BaseException, *, limit: int = _MAX_LINE) -> str:
    """An exception's type and the first line of its message, with no URI's password: what a failed
    configuration says of why (``one_line`` joins every line, and the trials' table keeps that)."""
    lines = [line for line in redacted(str(error)).splitlines() if line.strip()]
    text = f"{type(error).__name__}: {' '.join(lines[0].split())}" if lines else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."
