"""The one progress display of the command lines (``hdpbn`` and the experiment runner): tqdm."""

from __future__ import annotations

import sys

from tqdm.auto import tqdm

__all__ = ["Progress"]


class Progress:
    """A progress bar on standard error, called as ``progress(done, total, note="")``.

    Shown only when ``enabled`` (default: when standard error is a terminal), so piped output
    and ``--quiet`` / ``--json`` runs stay clean. The bar closes when ``done`` reaches ``total``.
    """

    def __init__(self, label: str, *, enabled: bool | None = None, unit: str = "it") -> None:
        self.label = label
        self.unit = unit
        self.enabled = sys.stderr.isatty() if enabled is None else bool(enabled)
        self._bar: tqdm | None = None

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if not self.enabled:
            return
        if self._bar is None:
            self._bar = tqdm(total=total, desc=self.label, unit=self.unit, file=sys.stderr,
                             dynamic_ncols=True, mininterval=0.2)
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
