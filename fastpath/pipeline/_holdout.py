"""The m holdout: which training rows score the candidate values of m.

The paper chooses m on a holdout of ``min(N/10, 5000)`` rows. The holdout here is a seeded hash of
the row *index*, not a permutation: the ``n_hold`` rows with the smallest hashes. A stream can
select it chunk by chunk (a row is held out when its hash is at most a threshold that depends only
on N and the key) and ``partial_fit`` can keep the candidates in a reservoir, so the in-memory fit,
the out-of-core passes and ``partial_fit`` hold out the very same rows.
"""

from __future__ import annotations

import numpy as np
from numba import njit

#: largest m holdout (paper: min(N/10, 5000) rows)
MAX_HOLDOUT = 5000


# The holdout that chooses m is a seeded hash of the row *index*, not a permutation: a stream
# can select it chunk by chunk (a row is held out when its hash is below a threshold that only
# depends on N), and the in-memory fit selects the very same rows.
@njit(cache=True, nogil=True)
def _splitmix_rows(start, n, key):
    out = np.empty(n, dtype=np.uint64)
    k = np.uint64(key)
    for i in range(n):
        # splitmix64 (Steele, Lea & Flood 2014) of key + (index + 1) * golden: a bijection of
        # the index for a fixed key, so no two rows share a hash
        z = k + np.uint64(start + i + 1) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        out[i] = z ^ (z >> np.uint64(31))
    return out


def holdout_key(rng: np.random.Generator) -> int:
    """The hash key of the m holdout, drawn from the fit's random generator."""
    return int(rng.integers(0, 2**63 - 1, dtype=np.int64))


def holdout_size(n_rows: int) -> int:
    """``min(N // 10, 5000)``, the paper's holdout size."""
    return min(int(n_rows) // 10, MAX_HOLDOUT)


def row_hashes(start: int, stop: int, key: int) -> np.ndarray:
    """Seeded 64-bit hashes of the row indices ``start..stop-1`` (all distinct)."""
    return _splitmix_rows(np.int64(start), np.int64(max(stop - start, 0)), np.int64(key))


def holdout_threshold(n_rows: int, n_hold: int, key: int, block: int = 1 << 20) -> np.uint64:
    """Largest hash of the ``n_hold`` smallest among rows ``0..n_rows-1`` (O(n_hold) memory)."""
    if not 1 <= n_hold <= n_rows:
        raise ValueError(f"n_hold must lie in [1, {n_rows}], got {n_hold}")
    best = np.empty(0, dtype=np.uint64)
    for s in range(0, n_rows, block):
        cand = np.concatenate([best, row_hashes(s, min(s + block, n_rows), key)])
        if cand.size > n_hold:
            cand = np.partition(cand, n_hold - 1)[:n_hold]
        best = cand
    return np.uint64(best.max())


def holdout_rows(n_rows: int, n_hold: int, key: int) -> np.ndarray:
    """Indices (sorted) of the ``n_hold`` rows of ``0..n_rows-1`` with the smallest hashes."""
    if not 1 <= n_hold <= n_rows:
        raise ValueError(f"n_hold must lie in [1, {n_rows}], got {n_hold}")
    h = row_hashes(0, n_rows, key)
    return np.sort(np.argpartition(h, n_hold - 1)[:n_hold]).astype(np.int64)
