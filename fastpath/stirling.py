"""Log unsigned Stirling numbers of the first kind, ``log S(n, t)``.

``S(n, t)`` is defined by ``Gamma(a + n) / Gamma(a) = sum_t a**t S(n, t)`` (paper, eq. eq-si); it is
the number of permutations of ``n`` elements with ``t`` cycles and enters the HDP collapsed Gibbs
sampler (paper, section 4, Algorithms 3-4) through ratios such as ``S(n + 1, t + 1) / S(n, t)``.

One :class:`LogStirlingTable` is shared by all context trees of a model and grown on demand with
:meth:`LogStirlingTable.ensure`.  Numba kernels call :func:`log_stirling` with
``table.kernel_args``.

This first version stores the exact rows (log-space recurrence
``S(n + 1, t) = n S(n, t) + S(n, t - 1)``) for every ``n <= n_max``; the large-``n`` asymptotic
evaluation that bounds the memory replaces the rows above ``N_EXACT`` in the next revision.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["N_EXACT", "LogStirlingTable", "log_stirling"]

#: Rows ``n <= N_EXACT`` are stored exactly (triangular array of doubles).
N_EXACT = 2048

_NEG_INF = -np.inf


@njit(cache=True, nogil=True)
def _fill_rows(flat: np.ndarray, n_lo: int, n_hi: int) -> None:
    """Fill rows ``n_lo..n_hi`` (inclusive) of the triangular table, row ``n_lo - 1`` given.

    Row ``n`` occupies ``flat[n (n + 1) / 2 : n (n + 1) / 2 + n + 1]`` and holds ``log S(n, t)`` for
    ``t = 0..n``.
    """
    for n in range(n_lo, n_hi + 1):
        off = n * (n + 1) // 2
        if n == 0:
            flat[0] = 0.0
            continue
        prev = (n - 1) * n // 2
        m = n - 1  # S(n, t) = m S(m, t) + S(m, t - 1)
        logm = math.log(m) if m > 0 else -np.inf
        flat[off] = -np.inf  # S(n, 0) = 0 for n > 0
        for t in range(1, n):
            x = logm + flat[prev + t]
            y = flat[prev + t - 1]
            if x == -np.inf:
                flat[off + t] = y
            elif y == -np.inf:
                flat[off + t] = x
            elif x > y:
                flat[off + t] = x + math.log1p(math.exp(y - x))
            else:
                flat[off + t] = y + math.log1p(math.exp(x - y))
        flat[off + n] = 0.0  # S(n, n) = 1


@njit(cache=True, nogil=True)
def log_stirling(n: int, t: int, kernel_args) -> float:
    """``log S(n, t)``; ``kernel_args`` is ``table.kernel_args``.

    Returns ``-inf`` where ``S(n, t) = 0`` (``t > n``, ``t < 0``, or ``t = 0 < n``) and ``NaN`` when
    ``n`` exceeds the table's ``n_max`` or is negative (a programming error: call
    ``table.ensure(n)`` first and pass the *current* ``table.kernel_args``).
    """
    flat = kernel_args[0]
    meta = kernel_args[1]
    if n < 0 or n > meta[0]:
        return np.nan
    if t < 0 or t > n:
        return -np.inf
    return flat[n * (n + 1) // 2 + t]


@njit(cache=True, nogil=True)
def _log_stirling_many(n: np.ndarray, t: np.ndarray, kernel_args) -> np.ndarray:
    out = np.empty(n.size)
    for i in range(n.size):
        out[i] = log_stirling(n[i], t[i], kernel_args)
    return out


class LogStirlingTable:
    """Growable table of log S(n, t), shared by all trees of a model.

    ``table.ensure(n)`` makes every ``n' <= n`` evaluable; earlier values never change when the
    table grows.  ``table.kernel_args`` is a tuple of numpy arrays for :func:`log_stirling`; it is
    replaced when the table grows, so fetch it again after every :meth:`ensure`.
    """

    def __init__(self, n_max: int = 0) -> None:
        self._flat = np.empty(1)
        self._flat[0] = 0.0
        self._rows = 0  # rows 0.._rows are filled
        self._n_max = 0
        self._meta = np.zeros(2, dtype=np.int64)
        self.ensure(n_max)

    def ensure(self, n_max: int) -> None:
        """Grow so that any ``n <= n_max`` can be evaluated."""
        n_max = int(n_max)
        if n_max < 0:
            raise ValueError("n_max must be >= 0")
        if n_max <= self._n_max:
            return
        rows = n_max
        if rows > self._rows:
            need = (rows + 1) * (rows + 2) // 2
            if need > self._flat.size:
                cap_rows = max(rows, 2 * self._rows)
                new = np.empty((cap_rows + 1) * (cap_rows + 2) // 2)
                used = (self._rows + 1) * (self._rows + 2) // 2
                new[:used] = self._flat[:used]
                self._flat = new
            _fill_rows(self._flat, self._rows + 1, rows)
            self._rows = rows
        self._n_max = n_max
        self._meta = np.array([self._n_max, self._rows], dtype=np.int64)

    @property
    def n_max(self) -> int:
        return self._n_max

    @property
    def kernel_args(self) -> tuple[np.ndarray, ...]:
        return (self._flat, self._meta)

    @property
    def nbytes(self) -> int:
        return int(self._flat.nbytes + self._meta.nbytes)

    def __call__(self, n, t):
        """``log S(n, t)``, vectorised over (broadcast) arrays; ensures ``max(n)`` first."""
        n_arr, t_arr = np.broadcast_arrays(np.asarray(n, dtype=np.int64),
                                           np.asarray(t, dtype=np.int64))
        if n_arr.size and int(n_arr.max()) > self._n_max:
            self.ensure(int(n_arr.max()))
        out = _log_stirling_many(np.ascontiguousarray(n_arr).ravel(),
                                 np.ascontiguousarray(t_arr).ravel(), self.kernel_args)
        if n_arr.ndim == 0:
            return float(out[0])
        return out.reshape(n_arr.shape)
