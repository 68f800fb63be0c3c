"""One way to warn: :func:`warn` points a warning at the first frame outside fastpath.

Python 3.12's ``warnings.warn(..., skip_file_prefixes=...)`` skips every frame of the package,
so a warning raised several helpers deep still names the user's line, with no ``stacklevel``
counted by hand. Inside :func:`recording` (a fit), every message is also kept, once, whatever
the warnings filters show: the fitted model records what its data and sampler warned about
(``fit_warnings_``, saved in model files, printed by ``hdpbn diagnose``).

**What the data says, said once.** The warnings about the data itself (identifiers and dates
left out, stray tokens read as missing, empty columns, a file that looks read with the wrong
separator) are one class, :class:`DataWarning` (a ``UserWarning``): the switch that silences
them all is ``warnings.filterwarnings("ignore", category=fastpath.DataWarning)``. Each distinct
message is shown once per process under Python's usual actions (``"default"``, ``"module"``,
``"once"``); messages that differ only in their counts (the same column of another fold's rows,
:func:`message_kind`) are one message. Python's own once-per-line registry does not do it: every
``warnings.catch_warnings`` block resets it, and scikit-learn's cross-validation enters one
for every fit, so that a grid search over the clones of one estimator said the same three
messages at every fit (57 times for 18 fits). Here a process-wide record of what was shown
holds the message back instead; a filter of action ``"always"`` or ``"error"`` still sees each
one, and the fit's record (``fit_warnings_``) keeps each one whatever is shown. A process
started by joblib for ``n_jobs > 1`` keeps its own record: each worker says a message once.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import re
import sys
import threading
import warnings
from collections.abc import Iterator

#: The directory of the fastpath package (with a trailing separator): frames under it are
#: skipped when a warning is attributed to a line.
PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


#: the messages of the :func:`recording` active in this context (None: none is)
_RECORD: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "fastpath_warning_record", default=None)


class DataWarning(UserWarning):
    """What the data says: a column left out (an identifier, dates), values read as missing
    (stray tokens in a numeric column), a column missing everywhere, a file that looks read
    with the wrong separator. Each distinct message is shown once per process (module doc);
    ``warnings.filterwarnings("ignore", category=fastpath.DataWarning)`` silences them all,
    and the fitted model keeps them in ``fit_warnings_`` all the same."""


#: the (class, :func:`message_kind`) of every DataWarning shown in this process (module doc)
_SHOWN: set[tuple[type[Warning], str]] = set()
_SHOWN_LOCK = threading.Lock()

#: the actions under which Python itself would show a message once (per line, module or
#: process): with them a DataWarning already shown is held back
_ONCE_ACTIONS = frozenset({"default", "module", "once"})


#: a quoted name or token in a message (``repr`` of a column name, a token)
_QUOTED = re.compile(r"'(?:[^'\\]|\\.)*'" + r'|"(?:[^"\\]|\\.)*"')


def message_kind(text: str) -> str:
    """``text`` with every number outside quotes made ``#``: the messages of one column that
    differ only in their counts (the rows of a fold) are one kind; quoted column names and
    tokens are kept as they are (``'x1'`` and ``'x2'`` stay two columns)."""
    parts, end = [], 0
    for match in _QUOTED.finditer(text):
        parts.append(re.sub(r"\d+(\.\d+)?", "#", text[end:match.start()]))
        parts.append(match.group())
        end = match.end()
    parts.append(re.sub(r"\d+(\.\d+)?", "#", text[end:]))
    return "".join(parts)


def _caller() -> tuple[str, int]:
    """The module name and line of the first frame outside fastpath (the one ``warnings``
    attributes a warning to, ``skip_file_prefixes``)."""
    frame = sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "sys", 0
    return frame.f_globals.get("__name__", "<string>"), frame.f_lineno


def _action(text: str, category: type[Warning]) -> str:
    """The action of the first of ``warnings.filters`` that matches this warning, as
    ``warnings.warn_explicit`` finds it (``"default"`` when none does)."""
    module, lineno = _caller()
    for action, msg, cat, mod, ln in warnings.filters:
        if ((msg is None or msg.match(text)) and issubclass(category, cat)
                and (mod is None or mod.match(module)) and (ln == 0 or ln == lineno)):
            return action
    return getattr(warnings, "defaultaction", "default")


def warn(message: str | Warning, category: type[Warning] = UserWarning) -> None:
    """Emit ``message`` as ``category`` (a ``Warning`` instance carries its own class),
    attributed to the caller's first frame outside fastpath (and kept by the active
    :func:`recording`); a :class:`DataWarning` already shown in this process is held back
    (module doc)."""
    text = str(message)
    record = _RECORD.get()
    if record is not None and text not in record:
        record.append(text)
    kind = type(message) if isinstance(message, Warning) else category
    if issubclass(kind, DataWarning) and _action(text, kind) in _ONCE_ACTIONS:
        key = (kind, message_kind(text))
        with _SHOWN_LOCK:
            if key in _SHOWN:
                return
            _SHOWN.add(key)
    warnings.warn(message, category, skip_file_prefixes=(PACKAGE_DIR,))


def forget_shown() -> None:
    """Forget which data warnings were shown (as a fresh process would; for tests)."""
    with _SHOWN_LOCK:
        _SHOWN.clear()


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
