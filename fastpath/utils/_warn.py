"""One way to warn: :func:`warn` points a warning at the first frame outside fastpath.

Python 3.12's ``warnings.warn(..., skip_file_prefixes=...)`` skips every frame of the package,
so a warning raised several helpers deep still names the user's line, with no ``stacklevel``
counted by hand. Inside :func:`recording` (a fit), every message is also kept, once, whatever
the warnings filters show: the fitted model records what its data and sampler warned about
(``fit_warnings_``, saved in model files, printed by ``hdpbn diagnose``).
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import warnings
from collections.abc import Iterator

#: The directory of the fastpath package (with a trailing separator): frames under it are
#: skipped when a warning is attributed to a line.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


#: the messages of the :func:`recording` active in this context (None: none is)
_RECORD: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "fastpath_warning_record", default=None)


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` as ``category`` (a ``Warning`` instance carries its own class),
    attributed to the caller's first frame outside fastpath (and kept by the active
    :func:`recording`)."""
    record = _RECORD.get()
    if record is not None and str(message) not in record:
        record.append(str(message))
    warnings.warn(message, category, skip_file_prefixes=(PACKAGE_DIR,))


@contextlib.contextmanager
def recording() -> Iterator[list[str]]:
    """Keep the messages :func:`warn` emits in this context (each once, in order), shown or
    not: the list it yields is a fit's record. A recording inside another keeps its own."""
    record: list[str] = []
    token = _RECORD.set(record)
    try:
        yield record
    finally:
        _RECORD.reset(token)
