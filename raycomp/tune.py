"""``python -m raycomp.tune``: see ``raycomp.cli.tune``."""

import sys

from raycomp.cli.tune import main

if __name__ == "__main__":
    sys.exit(main())
