"""``python -m hdpbn_ppl``: see :mod:`hdpbn_ppl.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
