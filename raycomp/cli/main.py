"""``raycomp tune|train|report|find ...``: the console script, one entry for the four ``python -m`` commands."""

from __future__ import annotations

import importlib
import sys

USAGE = """usage: raycomp COMMAND [ARGS...]

commands:
  tune EXPERIMENT.yaml     a sweep against its baseline, with verdicts   (python -m raycomp.tune)
  train EXPERIMENT.yaml    one training run                              (python -m raycomp.train)
  report SWEEP             the speed-up report of a sweep                (python -m raycomp.report)
  find EXPERIMENT.yaml     which speed-up recipe to use on this model    (python -m raycomp.find)

raycomp COMMAND --help shows a command's options."""


COMMANDS = ("tune", "train", "report", "find")
# Commands whose process resumes the collector once its work starts (base/collector.py); a report has no such point.
PAUSED_WHILE_STARTING = frozenset({"tune", "train", "find"})


def main(argv: list[str] | None = None) -> int:
    from raycomp.base.interrupts import quiet_interrupts

    quiet_interrupts()  # Ctrl-C while the command imports its modules: one line (base/interrupts.py)
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    if args[0] not in COMMANDS:
        print(f"raycomp: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return importlib.import_module(f"raycomp.cli.{args[0]}").main(args[1:])


def run_command(name: str | None = None) -> int:
    """A command in a process of raycomp's own: ``python -m raycomp.<name>``, or the ``raycomp`` console script
    (``name`` None: the first argument names it). Such a process pauses the cyclic garbage collector while it
    starts (base/collector.py); ``main`` is for callers in a process of their own, the tests among them."""
    from raycomp.base.collector import freeze_imports, pause_collector
    from raycomp.base.interrupts import quiet_interrupts

    quiet_interrupts()  # before the command's imports, as in main
    argv = sys.argv[1:] if name is None else [name, *sys.argv[1:]]
    if argv[:1] and argv[0] in PAUSED_WHILE_STARTING:
        pause_collector()
        importlib.import_module(f"raycomp.cli.{argv[0]}")  # its imports (torch among them): frozen, no user code yet
        freeze_imports()
    return main(argv)


if __name__ == "__main__":
    sys.exit(run_command())
