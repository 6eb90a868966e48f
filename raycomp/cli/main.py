"""``raycomp tune|train|report|find ...``: the console script, one entry for the four ``python -m`` commands."""

from __future__ import annotations

import sys
from collections.abc import Callable

USAGE = """usage: raycomp COMMAND [ARGS...]

commands:
  tune EXPERIMENT.yaml     a sweep against its baseline, with verdicts   (python -m raycomp.tune)
  train EXPERIMENT.yaml    one training run                              (python -m raycomp.train)
  report SWEEP             the speed-up report of a sweep                (python -m raycomp.report)
  find EXPERIMENT.yaml     which speed-up recipe to use on this model    (python -m raycomp.find)

raycomp COMMAND --help shows a command's options."""


def _commands() -> dict[str, Callable[[list[str]], int]]:
    from raycomp.cli import find, report, train, tune

    return {"tune": tune.main, "train": train.main, "report": report.main, "find": find.main}


def main(argv: list[str] | None = None) -> int:
    from raycomp.base.interrupts import quiet_interrupts

    quiet_interrupts()  # Ctrl-C while the command imports its modules: one line (base/interrupts.py)
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] in ("-h", "--help"):
        print(USAGE)
        return 0 if args else 2
    commands = _commands()
    if args[0] not in commands:
        print(f"raycomp: unknown command {args[0]!r}\n\n{USAGE}", file=sys.stderr)
        return 2
    return commands[args[0]](args[1:])


if __name__ == "__main__":
    sys.exit(main())
