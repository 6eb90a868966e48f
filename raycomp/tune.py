"""``python -m raycomp.tune``: see ``raycomp.cli.tune``."""

import sys

from raycomp.cli.main import run_command

if __name__ == "__main__":
    sys.exit(run_command("tune"))
