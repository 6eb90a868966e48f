"""``python -m raycomp.train``: see ``raycomp.cli.train``."""

import sys

from raycomp.cli.train import main

if __name__ == "__main__":
    sys.exit(main())
