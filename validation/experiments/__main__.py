"""``python -m validation.experiments``: see :mod:`validation.experiments.cli`."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
