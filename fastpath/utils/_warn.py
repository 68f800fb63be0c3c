"""One way to warn: :func:`warn` points a warning at the first frame outside fastpath.

Python 3.12's ``warnings.warn(..., skip_file_prefixes=...)`` skips every frame of the package,
so a warning raised several helpers deep still names the user's line, with no ``stacklevel``
counted by hand.
"""

from __future__ import annotations

import os
import warnings

#: The directory of the fastpath package (with a trailing separator): frames under it are
#: skipped when a warning is attributed to a line.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` as ``category`` (a ``Warning`` instance carries its own class),
    attributed to the caller's first frame outside fastpath."""
    warnings.warn(message, category, skip_file_prefixes=(PACKAGE_DIR,))
