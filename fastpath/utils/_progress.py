"""What long work says while it runs: a tqdm bar (:class:`Progress`) and stage lines
(:class:`FitLog`), on standard error.

The command lines (``hdpbn``, the experiment runner) show them on a terminal only; a classifier
shows them when fitted with ``verbose=1``. A bar redraws its line with carriage returns, which
only a terminal reads as such: on a file or a pipe a fit's bar is one line instead, written when
its work is done (:class:`Progress`'s ``line``), so that a log holds one line per stage.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from collections.abc import Callable

from tqdm import TqdmWarning

with warnings.catch_warnings():
    # in a Jupyter kernel without ipywidgets, tqdm.auto falls back to the text bar (what is
    # wanted here) with a TqdmWarning at import, which every notebook importing fastpath printed
    warnings.simplefilter("ignore", TqdmWarning)
    from tqdm.auto import tqdm


class Progress:
    """A progress bar on standard error, called as ``progress(done, total, note="")``.

    Shown only when ``enabled`` (default: when standard error is a terminal), so piped output
    and ``--quiet`` / ``--json`` runs stay clean. ``total`` may change between calls (the most
    the work can still come to); the bar closes when ``done`` reaches it. ``line``: where
    standard error is not a terminal, no bar is drawn and ``line`` (e.g. :meth:`FitLog.stage`)
    is called once, with ``"<label>: <done> of <total> <unit>s done"``, when the work is done.
    """

    def __init__(self, label: str, *, enabled: bool | None = None, unit: str = "it",
                 line: Callable[[str], None] | None = None) -> None:
        self.label = label
        self.unit = unit
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        # a line, not a bar, where standard error is a file or a pipe
        self._line = line if line is not None and not sys.stderr.isatty() else None
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if not self.enabled:
            return
        if self._line is not None:
            if done >= total:
                unit = self.unit if total == 1 or self.unit == "it" else self.unit + "s"
                self._line(f"{self.label}: {done} of {total} {unit} done")
                self._line = lambda _: None  # said once
            return
        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr,
                             dynamic_ncols=True, mininterval=0.2)
        self._bar.total = total
        self._bar.n = done
        if note:
            self._bar.set_postfix_str(note[:30], refresh=False)
        self._bar.refresh()
        if done >= total:
            self.close()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


#: what the first fit of a process says first (when verbose): it waits for numba's kernels
FIRST_FIT_NOTE = ("first fit in this process: loading the numba kernels from numba's cache "
                  "(a second or two), or compiling them when the cache is cold (after an "
                  "install or upgrade: a minute or two, once)")
#: what it says when numba's cache is known to be cold (:func:`~fastpath.utils._numba_cache.
#: none_cached`): the kernels compile now
COMPILE_NOTE = ("first fit in this process: compiling the numba kernels, once after an install "
                "or upgrade (a minute or two; the first prediction compiles its own); later "
                "processes load them from numba's cache")
_first_fit = [True]
#: one stage line at a time: the members of an ensemble, learned in threads, each say theirs
_LINE_LOCK = threading.Lock()


class FitLog:
    """The voice of a fit: ``stage("learning the structure")`` prints
    ``[hdpbn   0.4 s] learning the structure`` on standard error, and :meth:`progress` gives a
    bar (done / total, rate, ETA) for the sampler; both silent unless ``verbose``. The first
    fit of a process says first that it loads or compiles the numba kernels
    (:data:`FIRST_FIT_NOTE`; :data:`COMPILE_NOTE` when ``cold()`` says numba's cache is cold),
    the pause a first fit makes."""

    def __init__(self, verbose: int | bool = 0, cold: Callable[[], bool] | None = None
                 ) -> None:
        self.enabled = bool(verbose)
        self.t0 = time.perf_counter()
        if _first_fit[0]:
            _first_fit[0] = False
            # cold: whether the kernels will compile (asked only when it will be said)
            if self.enabled:
                self.stage(COMPILE_NOTE if cold is not None and cold() else FIRST_FIT_NOTE)

    def stage(self, message: str) -> None:
        if self.enabled:  # one write of the whole line, under a lock: never two run together
            line = f"[hdpbn {time.perf_counter() - self.t0:6.1f} s] {message}\n"
            with _LINE_LOCK:
                sys.stderr.write(line)
                sys.stderr.flush()

    def progress(self, label: str, unit: str = "it") -> Progress | None:
        """A :class:`Progress` bar when verbose, else None (the sampler then reports nothing);
        on a file or a pipe, one stage line when the work is done instead of a bar."""
        if not self.enabled:
            return None
        return Progress(label, enabled=True, unit=unit, line=self.stage)
