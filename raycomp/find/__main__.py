"""``python -m raycomp.find``: see ``raycomp.cli.find``."""

import sys

from raycomp.cli.find import main

if __name__ == "__main__":
    sys.exit(main())
