"""Hierarchical gradient smoothing (HGS): every node smoothed towards all of its ancestors, with
weights fitted by gradient descent on the leave-one-out log loss.

Zhang, Petitjean & Buntine, *Hierarchical Gradient Smoothing for Probability Estimation
Trees*, PAKDD 2020 (LNAI 12084, 222-234): "HGS smooths leaf nodes up to all the ancestors,
instead of recursively smoothing to the parent used by HDP", and its weights are fitted by
"optimizing the Leave-One-Out Cross-Validation (LOOCV) loss measure using gradient descent,
instead of sampling used in HDP". Implemented from that description (issue 27); no code of the
authors was read or copied.

Definition
----------
A context tree of depth ``D`` for a child of ``K`` values; node ``v`` at depth ``d`` has the
counts ``n_{v,k}``, ``N_v = sum_k n_{v,k}``, and the ancestors ``a_0`` (the root), ...,
``a_{d-1}`` (its parent). The weights are tied per level, as HDP ties its concentrations
(``tying="level"``): ``beta > 0`` pulls the root towards the uniform ``1/K``, and ``alpha_j > 0``
(``j = 0..D-1``) is the weight of an ancestor at depth ``j`` in the estimate of any of its
descendants::

    p_{root,k} = (n_{root,k} + beta / K) / (N_root + beta)
    p_{v,k}    = (n_{v,k} + sum_{j<d} alpha_j p_{a_j,k}) / (N_v + sum_{j<d} alpha_j)    (d >= 1)

so ``D + 1`` weights per tree (one, ``beta``, for the class prior). ``p_{a,k}`` is the
ancestor's own HGS estimate (the issue's formula, read recursively): it is defined for every
node, also when leaving a row out empties a node, and it is never 0, since ``beta / K > 0``
reaches every node through the root. Every row sums to 1 (both sums of the numerator add up
to the denominator). A query for an unseen context is answered at the deepest existing node
of its path (:meth:`~fastpath.counts.ContextTree.find`), with that node's ``p``.

The weights minimise the leave-one-out log loss of the tree's training rows: row ``i`` at leaf
``L`` with child value ``k`` is predicted from the counts without it, i.e. ``n_{v,k} - 1`` and
``N_v - 1`` at every node ``v`` on ``L``'s path, root included::

    LOO(w) = - sum_L sum_k n_{L,k} log p^{(-L,k)}_{L,k}(w)

The rows of a (leaf, value) pair are identical, so the loss needs only the counts: out of core
and with ``partial_fit`` it is the same as in memory. Its gradient is computed exactly, forward
along each path (:func:`hgs_loo_loss`); the optimiser works on ``log w`` (so the weights stay
positive) with L-BFGS with bounds (a quasi-Newton gradient descent, compiled:
:func:`~fastpath.estimate._lbfgs.lbfgs_minimizer`), starting from every weight
at 1 (``log w = 0``), on the loss divided by the tree's rows, within
``log w in [log HGS_MIN_WEIGHT, log HGS_MAX_WEIGHT]`` (a weight at a bound: the data wants no
smoothing at that level, or total smoothing to its ancestors), for at most
:data:`HGS_MAX_ITER` iterations or until the projected gradient is below :data:`HGS_GTOL`.
A tree without rows gets ``1/K`` everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit

from ..counts._context_tree import ContextTree
from ._lbfgs import lbfgs_minimizer

#: the most iterations of L-BFGS per tree
HGS_MAX_ITER: int = 200
#: stop when every component of the projected gradient of the loss per row (in log w) is below
HGS_GTOL: float = 1e-6
#: the bounds of every weight (the optimiser's box in log w)
HGS_MIN_WEIGHT: float = 1e-6
HGS_MAX_WEIGHT: float = 1e6
#: the (s, y) pairs L-BFGS keeps
HGS_MEMORY: int = 10


@dataclass(frozen=True)
class HGSFit:
    """One tree's HGS estimates.

    Attributes
    ----------
    table : ndarray of float64, shape (n_nodes, K)
        ``p`` at every node (module docstring).
    weights : ndarray of float64, shape (depth + 1,)
        ``(beta, alpha_0, ..., alpha_{D-1})``.
    loo_loss : float
        The leave-one-out log loss (a sum over the rows) at ``weights``.
    n_iter : int
        L-BFGS's iterations (0 for a tree with at most one row).
    """

    table: np.ndarray
    weights: np.ndarray
    loo_loss: float
    n_iter: int


def leaf_paths(tree: ContextTree) -> np.ndarray:
    """The nodes on every leaf's path, shape (n_leaves, depth + 1): column ``d`` is the
    ancestor at depth ``d`` (column 0 the root, the last column the leaf)."""
    leaves = np.arange(tree.leaves.start, tree.leaves.stop, dtype=np.int64)
    out = np.empty((leaves.size, tree.depth + 1), dtype=np.int64)
    out[:, tree.depth] = leaves
    for d in range(tree.depth, 0, -1):
        out[:, d - 1] = tree.parent[out[:, d]]
    return out


@njit(cache=True, nogil=True)
def _loo_loss_grad(weights, counts, totals, paths, n_values):
    """The leave-one-out log loss (a sum over rows) and its gradient in ``weights``.

    Forward along each path of a (leaf, value) pair, with ``T_d = sum_{j<d} alpha_j p_j`` and
    ``A_d = sum_{j<d} alpha_j``: ``p_d = (n_d - 1 + T_d) / (N_d - 1 + A_d)``, and the derivative
    of every quantity in every weight carried along (``D + 1`` of them).
    """
    n_leaves, width = paths.shape
    n_par = weights.shape[0]
    beta = weights[0]
    u = 1.0 / n_values
    loss = 0.0
    grad = np.zeros(n_par)
    dp = np.zeros(n_par)
    dt = np.zeros(n_par)
    for row in range(n_leaves):
        leaf = paths[row, width - 1]
        for k in range(n_values):
            n = counts[leaf, k]
            if n == 0:
                continue
            # the root, with the row left out
            root = paths[row, 0]
            den = totals[root] - 1.0 + beta
            p = (counts[root, k] - 1.0 + beta * u) / den
            for q in range(n_par):
                dp[q] = 0.0
                dt[q] = 0.0
            dp[0] = (u - p) / den
            t = 0.0
            a = 0.0
            for d in range(1, width):
                alpha = weights[d]  # alpha_{d-1}, the weight of the ancestor at depth d - 1
                # T_d = T_{d-1} + alpha_{d-1} p_{d-1}: its derivatives first (they read p_{d-1})
                for q in range(n_par):
                    dt[q] += alpha * dp[q]
                dt[d] += p
                t += alpha * p
                a += alpha
                node = paths[row, d]
                den = totals[node] - 1.0 + a
                p = (counts[node, k] - 1.0 + t) / den
                # dA_d / d alpha_j = 1 for j < d (weights 1..d), 0 for beta
                for q in range(n_par):
                    dp[q] = (dt[q] - (p if 1 <= q <= d else 0.0)) / den
            loss -= n * np.log(p)
            for q in range(n_par):
                grad[q] -= n * dp[q] / p
    return loss, grad


@njit(cache=True, nogil=True)
def _log_weight_objective(theta, counts, totals, paths, n_values, n_rows):
    """The leave-one-out loss per row in ``log w`` and its gradient (``d/d log w = w d/dw``):
    the minimiser's objective."""
    w = np.exp(theta)
    loss, grad = _loo_loss_grad(w, counts, totals, paths, n_values)
    return loss / n_rows, grad * w / n_rows


#: L-BFGS compiled for :func:`_log_weight_objective` (cached: fastpath.estimate._lbfgs)
_minimize = lbfgs_minimizer(_log_weight_objective, "hgs")


def hgs_loo_loss(tree: ContextTree, weights: np.ndarray) -> tuple[float, np.ndarray]:
    """The leave-one-out log loss of ``tree``'s training rows under HGS with ``weights``
    (``(beta, alpha_0, ..., alpha_{D-1})``, all positive), a sum over the rows, and its gradient
    in ``weights`` (module docstring)."""
    weights = np.ascontiguousarray(weights, dtype=np.float64)
    if weights.shape != (tree.depth + 1,) or not (weights > 0).all():
        raise ValueError(f"weights must be {tree.depth + 1} positive numbers, got {weights}")
    counts = np.ascontiguousarray(tree.counts, dtype=np.float64)
    loss, grad = _loo_loss_grad(weights, counts, counts.sum(axis=1), leaf_paths(tree),
                                tree.n_values)
    return float(loss), grad


def hgs_table_from_weights(tree: ContextTree, weights: np.ndarray) -> np.ndarray:
    """``p`` at every node of ``tree`` with the given weights (every row counted), shape
    (n_nodes, K)."""
    weights = np.asarray(weights, dtype=np.float64)
    counts = tree.counts.astype(np.float64)
    totals = counts.sum(axis=1, keepdims=True)
    k = tree.n_values
    table = np.empty_like(counts)
    table[0] = (counts[0] + weights[0] / k) / (totals[0] + weights[0])
    # T_v = T_parent + alpha_{d-1} p_parent, level by level
    pulled = np.zeros_like(counts)
    mass = 0.0
    for d in range(1, tree.depth + 1):
        lo, hi = int(tree.level_offsets[d]), int(tree.level_offsets[d + 1])
        parent = tree.parent[lo:hi]
        alpha = weights[d]
        pulled[lo:hi] = pulled[parent] + alpha * table[parent]
        mass += alpha
        table[lo:hi] = (counts[lo:hi] + pulled[lo:hi]) / (totals[lo:hi] + mass)
    return table


def hgs_fit(tree: ContextTree, *, max_iter: int = HGS_MAX_ITER,
            gtol: float = HGS_GTOL) -> HGSFit:
    """HGS estimates of ``tree``: the weights that minimise the leave-one-out log loss, then
    the table with every row counted (module docstring)."""
    n_par = tree.depth + 1
    n_rows = tree.n_rows
    start = np.ones(n_par)
    if n_rows == 0:
        table = np.full((tree.n_nodes, tree.n_values), 1.0 / tree.n_values)
        return HGSFit(table, start, 0.0, 0)
    counts = np.ascontiguousarray(tree.counts, dtype=np.float64)
    totals = counts.sum(axis=1)
    paths = leaf_paths(tree)
    if n_rows < 2:  # nothing to leave out: every weight keeps its start
        loss, _ = _loo_loss_grad(start, counts, totals, paths, tree.n_values)
        return HGSFit(hgs_table_from_weights(tree, start), start, float(loss), 0)

    lower = np.full(n_par, np.log(HGS_MIN_WEIGHT))
    upper = np.full(n_par, np.log(HGS_MAX_WEIGHT))
    theta, loss, n_iter = _minimize(
        np.zeros(n_par), (counts, totals, paths, int(tree.n_values), float(n_rows)), lower,
        upper, int(max_iter), float(gtol), 0.0, HGS_MEMORY)
    weights = np.exp(theta)
    return HGSFit(hgs_table_from_weights(tree, weights), weights, float(loss) * n_rows,
                  int(n_iter))


def hgs_table(tree: ContextTree) -> np.ndarray:
    """HGS estimate of P(child | path) at every node of ``tree``, shape (n_nodes, K)."""
    return hgs_fit(tree).table


def hgs_tables(trees: Sequence[ContextTree]) -> list[np.ndarray]:
    """:func:`hgs_table` of every tree."""
    return [hgs_fit(t).table for t in trees]
