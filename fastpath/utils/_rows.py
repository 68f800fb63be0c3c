"""Seeded samples of row *positions*: a row is picked when its hash is among the smallest.

A sample drawn as a permutation would need every row in memory. Here row ``i`` (its position in
the whole data) has a seeded 64-bit hash, and a sample of ``n_pick`` rows is the rows with the
``n_pick`` smallest hashes: a stream picks them chunk by chunk (a row is in when its hash is at
most a threshold that depends only on N, ``n_pick`` and the key), so a fit in memory, one that
reads the data in chunks of any size, and ``partial_fit`` pick the very same rows. Used by the
m holdout (:mod:`fastpath.pipeline._holdout`) and the sampled leave-one-out selection
(:func:`fastpath.structure._selective.loo_scores`).
"""

from __future__ import annotations

import numpy as np
from numba import njit


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


def row_hashes(start: int, stop: int, key: int) -> np.ndarray:
    """Seeded 64-bit hashes of the row indices ``start..stop-1`` (all distinct)."""
    return _splitmix_rows(np.int64(start), np.int64(max(stop - start, 0)), np.int64(key))


def hash_threshold(n_rows: int, n_pick: int, key: int, block: int = 1 << 20) -> np.uint64:
    """Largest hash of the ``n_pick`` smallest among rows ``0..n_rows-1`` (O(n_pick) memory):
    row ``i`` is picked when ``row_hashes(i, i + 1, key) <= hash_threshold(...)``."""
    if not 1 <= n_pick <= n_rows:
        raise ValueError(f"n_pick must lie in [1, {n_rows}], got {n_pick}")
    best = np.empty(0, dtype=np.uint64)
    for s in range(0, n_rows, block):
        cand = np.concatenate([best, row_hashes(s, min(s + block, n_rows), key)])
        if cand.size > n_pick:
            cand = np.partition(cand, n_pick - 1)[:n_pick]
        best = cand
    return np.uint64(best.max())


def picked_rows(n_rows: int, n_pick: int, key: int) -> np.ndarray:
    """Indices (sorted) of the ``n_pick`` rows of ``0..n_rows-1`` with the smallest hashes."""
    if not 1 <= n_pick <= n_rows:
        raise ValueError(f"n_pick must lie in [1, {n_rows}], got {n_pick}")
    h = row_hashes(0, n_rows, key)
    return np.sort(np.argpartition(h, n_pick - 1)[:n_pick]).astype(np.int64)
