"""``python -m raycomp.report``: see ``raycomp.cli.report``."""

import sys

from raycomp.cli.report import main

if __name__ == "__main__":
    sys.exit(main())
