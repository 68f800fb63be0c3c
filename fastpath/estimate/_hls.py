"""Hierarchical linear smoothing (HLS): each table a multinomial logistic regression on the
indicators of the context-tree nodes on a row's path.

Cooper, Webb & Schmidt, *Efficient Parameter Estimation for Bayesian Network Classifiers using
Hierarchical Linear Smoothing*, arXiv:2505.23320 (2025): a log-linear model that approximates
HDP smoothing, whose design matrix is built from the tree of the conditional probability table
and which is learned as a multinomial logistic regression with a ridge (L2) penalty (C = 1 in
the authors' experiments). Implemented from that description (issue 27); no code of the authors
was read or copied. Their Bayesian shrinkage variants are not implemented.

Definition
----------
A context tree for a child of ``K`` values; a row at leaf ``L`` has one indicator per non-root
node on its path (its class, its class and first parent, ..., its leaf). The model has an
intercept ``b`` in R^K at the root and a vector ``w_v`` in R^K for every non-root node ``v``; the
score of node ``v`` is the sum along its path and its estimate the softmax::

    s_v = b + sum_{u on the path of v, u != root} w_u
    p_{v,k} = exp(s_{v,k}) / sum_j exp(s_{v,j})

Fitted on the counts as weights (a (leaf, value) pair's rows are identical, so no row is
expanded; out of core it is the in-memory fit), by minimising, with ``C`` the penalty
(:class:`~fastpath.estimate.HLSOptions`)::

    C * sum_L sum_k n_{L,k} (-log p_{L,k})  +  0.5 * sum_{v != root} ||w_v||^2

The intercept ``b`` is not penalised; every ``w_v``, all ``K`` components, is. This is
scikit-learn's ``LogisticRegression(C=C)`` (lbfgs, multinomial) on the expanded rows, whose
intercept is not penalised and whose multinomial model has ``K`` symmetric coefficient vectors
(for ``K >= 3``; for ``K = 2`` scikit-learn fits one binomial vector, which is this model with
``C`` doubled). The loss is invariant to adding a constant to all of ``b``'s components, which
only the intercept's unpenalised direction feels: the probabilities are unique (the penalty
makes ``w`` unique, with components summing to 0). A query for an unseen context is answered
at the deepest existing node of its path (:meth:`~fastpath.counts.ContextTree.find`), whose
score is the sum along the part of the path that exists.

A value of the child never counted in the tree (a declared category absent from the training
rows) would have ``b_k -> -inf`` and probability 0; it is left out of the regression and gets
``1/K`` at every node, the others ``K'/K`` times their softmax (``K'`` values counted), so
that rows sum to 1 and the factor of the unseen value, like the constant ``K'/K``, cancels in
P(y | x) -- the m-estimates' rule (:func:`~fastpath.estimate.m_estimate_table`). With one
counted value every entry is ``1/K``. A tree without rows gets ``1/K`` everywhere.

The optimiser is L-BFGS (:func:`~fastpath.estimate._lbfgs.lbfgs_minimizer`, compiled: an
ensemble fits hundreds of small trees, each in about a hundred iterations, where scipy's
per-iteration Python calls cost thirty times the arithmetic; memory :data:`HLS_MEMORY`) with
the exact gradient (a leaf's gradient in its score, summed from the leaves up: a node's is its
subtree's), on the objective divided by the tree's rows, from ``w = 0`` and ``b`` = the
centred log frequencies at the root (the optimum of the intercept alone), for at most
:data:`HLS_MAX_ITER` iterations or until every component of the gradient is below
:data:`HLS_GTOL` (or, a stall at the level of rounding, the relative decrease of the
objective below :data:`HLS_FTOL`). The problem is smooth and convex, so any such method
reaches the same optimum.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import njit
from scipy.special import softmax

from ..counts._context_tree import ContextTree
from ..utils._validation import check_float
from ._hls_options import HLS_C
from ._lbfgs import lbfgs_minimizer

#: the most iterations of L-BFGS per tree
HLS_MAX_ITER: int = 1000
#: stop when every component of the gradient of the objective per row is below (1e-8: the
#: probabilities within about 1e-5 of the optimum on an ensemble's trees, where scipy's
#: L-BFGS-B stop at 1e-7 left 1e-4; 1e-9 is below what rounding lets large trees reach)
HLS_GTOL: float = 1e-8
#: or when an iteration decreases the objective by at most this fraction of it: progress at
#: the level of rounding (a tree of a thousand nodes reaches it before any gradient tolerance)
HLS_FTOL: float = 1e-15
#: the (s, y) pairs L-BFGS keeps (scipy's default)
HLS_MEMORY: int = 10


@dataclass(frozen=True)
class HLSFit:
    """One tree's HLS estimates.

    Attributes
    ----------
    table : ndarray of float64, shape (n_nodes, K)
        ``p`` at every node (module docstring).
    intercept : ndarray of float64, shape (K',)
        ``b``, over the ``K'`` counted values (``values``), centred to sum to 0.
    coef : ndarray of float64, shape (n_nodes - 1, K')
        ``w_v`` of every non-root node, in node order (row ``v - 1`` is node ``v``).
    values : ndarray of int64, shape (K',)
        The child values in the regression (those counted in the tree).
    n_iter : int
        L-BFGS's iterations.
    """

    table: np.ndarray
    intercept: np.ndarray
    coef: np.ndarray
    values: np.ndarray
    n_iter: int


@njit(cache=True, nogil=True)
def _scores(b, w, parent):
    """The score of every node: ``s_0 = b``, ``s_v = s_parent + w_v`` (parents come first)."""
    n_nodes = parent.shape[0]
    k = b.shape[0]
    s = np.empty((n_nodes, k))
    for j in range(k):
        s[0, j] = b[j]
    for v in range(1, n_nodes):
        p = parent[v]
        for j in range(k):
            s[v, j] = s[p, j] + w[v - 1, j]
    return s


@njit(cache=True, nogil=True)
def _loss_grad(x, counts, parent, first_leaf, c):
    """The penalised loss and its gradient in ``x = [b, w_1, ..., w_{n-1}]`` (module
    docstring; not divided by the rows). A leaf's gradient in its score is
    ``C (N_L softmax(s_L) - n_L)``; a node's is the sum over its subtree's leaves, gathered
    from the leaves up (children come after their parent)."""
    n_nodes, k = counts.shape
    b = x[:k]
    w = x[k:].reshape((n_nodes - 1, k))
    s = _scores(b, w, parent)
    g = np.zeros((n_nodes, k))
    loss = 0.0
    for v in range(first_leaf, n_nodes):
        top = s[v, 0]
        for j in range(1, k):
            top = max(top, s[v, j])
        z = 0.0
        total = 0.0
        for j in range(k):
            z += np.exp(s[v, j] - top)
            total += counts[v, j]
        lse = top + np.log(z)
        for j in range(k):
            loss += c * counts[v, j] * (lse - s[v, j])
            g[v, j] = c * (total * np.exp(s[v, j] - lse) - counts[v, j])
    for v in range(n_nodes - 1, 0, -1):
        p = parent[v]
        for j in range(k):
            g[p, j] += g[v, j]
    grad = np.empty_like(x)
    for j in range(k):
        grad[j] = g[0, j]
    for v in range(1, n_nodes):
        for j in range(k):
            wv = w[v - 1, j]
            loss += 0.5 * wv * wv
            grad[k + (v - 1) * k + j] = g[v, j] + wv
    return loss, grad


@njit(cache=True, nogil=True)
def _objective(x, counts, parent, first_leaf, c, scale):
    """The penalised loss per row and its gradient (the minimiser's objective)."""
    loss, grad = _loss_grad(x, counts, parent, first_leaf, c)
    return loss * scale, grad * scale


#: L-BFGS compiled for :func:`_objective` (cached: fastpath.estimate._lbfgs)
_minimize = lbfgs_minimizer(_objective, "hls")


def hls_fit(tree: ContextTree, C: float = HLS_C, *, max_iter: int = HLS_MAX_ITER,
            gtol: float = HLS_GTOL, ftol: float = HLS_FTOL) -> HLSFit:
    """HLS estimates of ``tree`` with the penalty ``C`` (module docstring)."""
    C = check_float("C", C, positive=True)
    n_values = tree.n_values
    root = tree.counts[0]
    values = np.flatnonzero(root > 0)
    n_nodes = tree.n_nodes
    table = np.full((n_nodes, n_values), 1.0 / n_values)
    if values.size < 2:  # no row, or one value: nothing to tell apart
        zero = np.zeros((n_nodes - 1, values.size))
        return HLSFit(table, np.zeros(values.size), zero, values, 0)
    counts = np.ascontiguousarray(tree.counts[:, values], dtype=np.float64)
    k = values.size
    parent = np.ascontiguousarray(tree.parent, dtype=np.int64)
    first_leaf = int(tree.leaves.start)
    scale = 1.0 / counts[0].sum()
    x0 = np.zeros(k * n_nodes)
    x0[:k] = np.log(counts[0]) - np.log(counts[0]).mean()
    unbounded = np.full(x0.size, np.inf)
    x, _, n_iter = _minimize(x0, (counts, parent, first_leaf, float(C), scale), -unbounded,
                             unbounded, int(max_iter), float(gtol), float(ftol), HLS_MEMORY)
    b, w = x[:k], x[k:].reshape(-1, k)
    b = b - b.mean()
    proba = softmax(_scores(b, np.ascontiguousarray(w), parent), axis=1)
    table[:, values] = proba * (k / n_values)
    return HLSFit(table, b, w, values, int(n_iter))


def hls_table(tree: ContextTree, C: float = HLS_C) -> np.ndarray:
    """HLS estimate of P(child | path) at every node of ``tree``, shape (n_nodes, K)."""
    return hls_fit(tree, C).table


def hls_tables(trees: Sequence[ContextTree], C: float = HLS_C) -> list[np.ndarray]:
    """:func:`hls_table` of every tree."""
    return [hls_fit(t, C).table for t in trees]
