"""``python -m raycomp.find``: see ``raycomp.cli.find``."""

import sys

from raycomp.cli.main import run_command

if __name__ == "__main__":
    sys.exit(run_command("find"))
