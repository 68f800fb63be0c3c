"""A node's estimate with one training row's count removed, for every node of many trees.

Each node's estimate is its counts ``n`` shrunk towards a base ``b`` by a concentration ``c``,
``phi_k = (n_k + c b_k) / (N + c)`` (HDP: the parent's estimate and the node's posterior-mean
concentration, paper eq. 14; m-estimates: the uniform ``1/K`` and ``m``). With one row of value
``x`` removed the estimate of ``x`` reads

    phi^(-r)_x = phi_x (n_x - 1 + c b_x) / (n_x + c b_x) * (N + c) / (N - 1 + c),

the estimate's ratio applied to the table as estimated (:mod:`fastpath.pipeline._weights` says
why and where it is read). A value no row counted, the root, a node whose concentration is
infinite (its estimate is its base) or that one row alone reached with ``c = 0`` keep their
estimate; a value counted once whose base gives it nothing reads the smallest normal number
(probability 0, kept finite for the log).

The trees are laid out flat, as a prediction packs them (:mod:`fastpath.predict._inference`):
tree ``a``'s nodes ``node_start[a] .. node_start[a + 1] - 1`` and its ``nodes x values`` entries,
row-major, from ``entry_start[a]``; one compiled call for all of them (per tree, the array
operations cost more than the arithmetic on small data).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numba import njit

from ..counts._context_tree import ContextTree

__all__ = ["left_out_tables"]


@njit(cache=True, nogil=True)
def _left_out(counts, table, concentration, parent, node_start, n_values, entry_start,
              uniform_base, out):
    """The module docstring's ``phi^(-r)`` of every entry into ``out`` (laid out as
    ``table``); the base the parent's estimate, or ``1/K`` with ``uniform_base``."""
    tiny = np.finfo(np.float64).tiny
    for a in range(n_values.size):
        kv = n_values[a]
        first = node_start[a]
        for v in range(node_start[a + 1] - first):
            row = entry_start[a] + v * kv
            p = parent[first + v]
            c = concentration[first + v]
            total = 0.0
            for x in range(kv):
                total += counts[row + x]
            keep = p < 0 or not (total - 1.0 + c > 0.0) or not np.isfinite(c)
            for x in range(kv):
                phi = table[row + x]
                n = float(counts[row + x])
                if not keep and n >= 1.0:
                    b = 1.0 / kv if uniform_base else table[entry_start[a] + p * kv + x]
                    shrunk = n + c * b
                    phi = phi * ((shrunk - 1.0) / shrunk * (total + c) / (total - 1.0 + c))
                out[row + x] = max(phi, tiny)


def left_out_tables(trees: Sequence[ContextTree], tables: Sequence[np.ndarray],
                    concentrations: Sequence[np.ndarray], uniform_base: bool) -> np.ndarray:
    """The tables of ``trees`` (each (nodes, values)) with a row's own count removed (module
    docstring), each node shrunk by its ``concentrations[t]`` towards its parent's estimate
    or, with ``uniform_base``, ``1/K``: one flat array, the trees' tables ravelled in order."""
    if not trees:
        return np.empty(0)
    n_values = np.array([tree.n_values for tree in trees], dtype=np.int64)
    node_start = np.zeros(len(trees) + 1, np.int64)
    node_start[1:] = np.cumsum([tree.n_nodes for tree in trees])
    entry_start = np.zeros(len(trees) + 1, np.int64)
    entry_start[1:] = np.cumsum([np.asarray(t).size for t in tables])
    flat = np.concatenate([np.asarray(t, dtype=np.float64).ravel() for t in tables])
    out = np.empty_like(flat)
    _left_out(np.concatenate([tree.counts.ravel() for tree in trees]).astype(np.int64),
              flat, np.concatenate(concentrations).astype(np.float64),
              np.concatenate([tree.parent for tree in trees]).astype(np.int64), node_start,
              n_values, entry_start, bool(uniform_base), out)
    return out
