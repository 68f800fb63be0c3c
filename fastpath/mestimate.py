"""m-estimates with back-off: the baseline the paper compares HDP estimates with.

The paper ("Experimental design and setting") estimates

.. math:: \\hat p(x_i \\mid \\Pi(i)) = \\frac{\\mathrm{count}(x_i, \\Pi(i)) + m/|X_i|}
          {\\mathrm{count}(\\Pi(i)) + m}

and, "if zero counts are found, we back off as many levels in the tree as necessary to find at
least one count. For instance, if count(x4, x0, x3) is equal to zero, then p(x4 | x0) is
considered instead of p(x4 | x0, x3)". So the back-off is per child value: a value's
estimate at a node comes from the deepest node on the path (the node itself or an ancestor) where
that value was counted at least once. A path never observed at all ends, at prediction time, at
the deepest existing node (:meth:`ContextTree.find`), where the same rule applies.

A value never counted anywhere in the tree (a declared category absent from the training data)
gets ``(m/K) / (N + m)`` at the root — for ``m = 0`` that would be zero for every class alike,
so it gets ``1/K`` instead: the factor is the same for all classes (it comes from the root, which
all classes share) and cancels in P(y | x).

The value of ``m`` is chosen from ``M_GRID`` by RMSE on a holdout (see
:class:`fastpath.BayesNetClassifier`).
"""

from __future__ import annotations

import numpy as np

from .context_tree import ContextTree

__all__ = ["M_GRID", "m_estimate_table"]

#: the paper's candidate values of m
M_GRID: tuple[float, ...] = (0.0, 0.05, 0.2, 1.0, 5.0, 20.0)


def m_estimate_table(tree: ContextTree, m: float) -> np.ndarray:
    """m-estimate of P(child | path) at every node, with per-value back-off.

    Parameters
    ----------
    tree : ContextTree
    m : float
        Non-negative pseudo-count mass, spread uniformly (``m / K`` per value).

    Returns
    -------
    ndarray of float64, shape (n_nodes, K)
        Row ``i`` is the estimate used for a query ending at node ``i``. Rows need not sum to
        one when values back off to different levels (the paper's rule).
    """
    m = float(m)
    if not np.isfinite(m) or m < 0:
        raise ValueError(f"m must be a finite non-negative number, got {m}")
    counts = tree.counts.astype(np.float64)
    k = tree.n_values
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        own = (counts + m / k) / (totals + m)
    table = np.empty_like(own)
    root_fallback = (m / k) / (totals[0, 0] + m) if m > 0 else 1.0 / k
    table[0] = np.where(counts[0] > 0, own[0], root_fallback)
    for d in range(1, tree.depth + 1):
        lo, hi = int(tree.level_offsets[d]), int(tree.level_offsets[d + 1])
        inherited = table[tree.parent[lo:hi]]
        table[lo:hi] = np.where(counts[lo:hi] > 0, own[lo:hi], inherited)
    return table
