"""The bottom layer: checks and conversions every other folder shares (imports no other folder).

Private to fastpath but for :class:`Progress` (a progress bar the validation runner shares) and
:func:`limit_threads` (the one thread knob, for callers of the kernels outside an estimator).
"""

from ._progress import Progress
from ._threads import limit_threads

__all__ = ["Progress", "limit_threads"]
