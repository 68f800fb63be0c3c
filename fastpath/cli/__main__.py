"""``python -m fastpath.cli``: the ``hdpbn`` command line."""

import sys

from ._main import main

if __name__ == "__main__":
    sys.exit(main())
