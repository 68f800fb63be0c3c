"""The bottom layer: checks and conversions every other folder shares (imports no other folder).

Private to fastpath but for :class:`DataWarning` (the class of what the data warns about, the
one switch that silences it), :class:`Progress` (a progress bar the validation runner shares),
:func:`limit_threads` (the one thread knob, for callers of the kernels outside an estimator) and
the crash-safe writers every package's files go through (:func:`atomic_write`,
:func:`write_csv`, :func:`write_text`, :func:`save_figure`: a file is replaced whole or left as
it was; :func:`refuse_overwriting_inputs` for an output path that names an input).
"""

from ._files import (
    atomic_write,
    refuse_overwriting_inputs,
    save_figure,
    write_csv,
    write_text,
)
from ._progress import Progress
from ._threads import limit_threads
from ._warn import DataWarning

__all__ = [
    "DataWarning",
    "Progress",
    "atomic_write",
    "limit_threads",
    "refuse_overwriting_inputs",
    "save_figure",
    "write_csv",
    "write_text",
]
