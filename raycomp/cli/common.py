"""What every raycomp CLI shares: loading the experiment, and one mapping from errors to exit codes.

Importing it makes Ctrl-C one line for the rest of a raycomp command's start-up (``base/interrupts.py``).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from raycomp.base.errors import EXIT_INTERRUPTED, ConfigError, MachineFailure, RaycompError, TrackingUnavailable
from raycomp.base.failures import machine_failure, traceback_file
from raycomp.base.interrupts import INTERRUPTED, quiet_interrupts
from raycomp.base.redaction import redacted
from raycomp.config import ExperimentConfig
from raycomp.config.user_code import user_code_on_path
from raycomp.preflight.experiment import WorkloadFacts, load_checked_experiment

quiet_interrupts()  # only in a raycomp command; raycomp/__init__.py may have installed it already

_HINTS: dict[type[RaycompError], str] = {
    TrackingUnavailable: "start the server, set tracking.tracking_uri, or tracking.enabled: false",
}


def add_experiment_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("experiment", help="experiment YAML (see experiments/)")
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE", help="override a config key"
    )
    parser.add_argument("--address", help="Ray cluster address (default: RAY_ADDRESS, else a private local Ray)")


def load_experiment_or_exit(path: str, overrides: list[str]) -> tuple[ExperimentConfig, WorkloadFacts]:
    """The validated config and what its workload check found (``raycomp.preflight``: the model built and run
    once), or every problem on stderr and exit code 2, before anything starts.

    Ctrl-C while reading it (a slow disk, a named pipe) is ``interrupted`` and exit code 130, as later.
    The working directory is put on ``sys.path`` and ``PYTHONPATH`` first, so a ``class_path`` may name a
    package in it, here and in the Ray workers this command starts.
    """
    user_code_on_path()  # the user's packages beside the YAML: importable here and in every Ray worker
    try:
        return load_checked_experiment(path, overrides)
    except ConfigError as error:
        print(redacted(f"error: invalid experiment {path}:"), file=sys.stderr)
        for problem in error.problems:
            print(f"  {redacted(problem)}", file=sys.stderr)
        raise SystemExit(error.exit_code) from None
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        raise SystemExit(EXIT_INTERRUPTED) from None


def exit_code_of(main: Callable[[], int]) -> int:
    """Runs ``main``; a ``RaycompError`` becomes one ``error:`` line and its exit code, Ctrl-C exit 130. A failure
    of the machine (Ray did not start, a full disk, a port taken) also names the file its traceback went to."""
    try:
        return main()
    except RaycompError as error:
        return _said(error, error)
    except OSError as error:
        failure = machine_failure(error)
        if failure is None:
            raise
        return _said(failure, error)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED


def _said(error: RaycompError, raised: BaseException) -> int:
    hint = next((text for kind, text in _HINTS.items() if isinstance(error, kind)), None)
    line = f"error: {error}" + (f" ({hint})" if hint else "")
    if isinstance(error, MachineFailure):
        line += f" (the traceback: {traceback_file(raised)})"
    print(redacted(line), file=sys.stderr)
    return error.exit_code
