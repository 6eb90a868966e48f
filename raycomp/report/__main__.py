"""``python -m raycomp.report``: see ``raycomp.cli.report``."""

import sys

from raycomp.cli.main import run_command

if __name__ == "__main__":
    sys.exit(run_command("report"))
