"""``python -m raycomp.train``: see ``raycomp.cli.train``."""

import sys

from raycomp.cli.main import run_command

if __name__ == "__main__":
    sys.exit(run_command("train"))
