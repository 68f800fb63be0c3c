"""Discriminative weights on a Bayesian network classifier's log-probabilities.

The generative classifier's log-posterior is a sum of the class prior's and each attribute's
log-probability (paper, section 2.1)::

    log P(y | x) = log P(y) + sum_i log P(x_i | y, pa_i) - log Z(x).

The layer weighs every term (Zaidi, Cerquides, Carman & Webb, *Alleviating naive Bayes
attribute independence assumption by attribute weighting*, JMLR 14, 2013, "WANBIA-C"; Zaidi,
Webb, Carman, Petitjean, Buntine, Hynes & De Sterck, *Efficient parameter learning of Bayesian
network classifiers*, Machine Learning 106, 2017, the same for kDB)::

    log P_w(y | x) = w_(0,y) log P(y) + sum_i w_(i,y) log P(x_i | y, pa_i) - log Z_w(x),

the normaliser ``Z_w`` summing the numerator over the classes, so the probabilities are proper
for any weights. ``w = 1`` is the generative model. The granularity ties the weights:
``"attribute"`` one weight per term (``w_(i,y) = w_i``, WANBIA-C's), ``"attribute_class"`` one
per term and class.

The weights minimise the mean conditional log loss of ``n`` rows plus a ridge towards the
generative model::

    f(w) = (1/n) sum_r [log Z_w(x_r) - log P_w-numerator(y_r, x_r)] + (lam / 2n) |w - 1|^2,

whose gradient in ``w_(i,c)`` (summed over the entries a tied weight covers) is
``(1/n) sum_r (P_w(c | x_r) - [y_r = c]) T_(r,i,c) + (lam / n) (w_(i,c) - 1)``, ``T`` the terms.
The ridge's weight relative to the data falls as ``1/n``: few rows keep the weights near the
generative model, many let the data move them. ``lam -> infinity`` gives ``w = 1``. The weights
are kept at or above 0 (a negative weight would turn a probability's evidence round; at 0 a
term is ignored). The problem is smooth and convex; the compiled L-BFGS
(:func:`~fastpath.estimate._lbfgs.lbfgs_minimizer`) minimises it from ``w = 1``.

The terms ``T`` are given: :mod:`fastpath.pipeline._weights` reads them for the training rows
from tables that leave each row out (a term fitted on the rows that estimated it would reward
the deepest, most over-fitted tables).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._lbfgs import lbfgs_minimizer

__all__ = ["GRANULARITIES", "choose_penalty", "fit_term_weights", "mean_log_loss", "weight_index"]

#: how the weights are tied (module docstring)
GRANULARITIES: tuple[str, ...] = ("attribute", "attribute_class")
#: the most L-BFGS iterations of one member's weights
WEIGHTS_MAX_ITER: int = 500
#: stop when every component of the (per-row) gradient is below this (on the layers of five
#: datasets, 1e-5 took 30-45 % more iterations to lower the objective by at most 4e-5)
WEIGHTS_GTOL: float = 1e-4
#: or when an iteration decreases the objective by at most this fraction of it
WEIGHTS_FTOL: float = 1e-12
#: the (s, y) pairs L-BFGS keeps
WEIGHTS_MEMORY: int = 10
#: the ridges a fit chooses among (:func:`choose_penalty`), and the folds it chooses by
PENALTY_GRID: tuple[float, ...] = (1.0, 10.0, 100.0, 1000.0)
PENALTY_FOLDS: int = 3


def weight_index(n_terms: int, n_classes: int, granularity: str) -> np.ndarray:
    """The weight of every (term, class): an int64 array (n_terms, n_classes) of positions
    in the weight vector (``"attribute"``: the term's number; ``"attribute_class"``: term
    times classes plus class)."""
    if granularity == "attribute":
        return np.repeat(np.arange(n_terms, dtype=np.int64)[:, None], n_classes, axis=1)
    if granularity == "attribute_class":
        return np.arange(n_terms * n_classes, dtype=np.int64).reshape(n_terms, n_classes)
    raise ValueError(f"granularity must be one of {GRANULARITIES}, got {granularity!r}")


@njit(cache=True, nogil=True)
def _objective(w, terms, y, index, lam):
    """``f(w)`` and its gradient (module docstring); ``terms`` (rows, terms, classes).

    The tied weights are spread into a dense (terms, classes) table first and the gradient
    gathered from one: the loops over the classes then read contiguous memory, which the
    compiler vectorises (an indexed gather in the innermost loop ran 1.3-1.7x slower)."""
    n_rows, n_terms, n_classes = terms.shape
    dense_w = np.empty((n_terms, n_classes))
    for a in range(n_terms):
        for c in range(n_classes):
            dense_w[a, c] = w[index[a, c]]
    dense_g = np.zeros((n_terms, n_classes))
    z = np.empty(n_classes)
    f = 0.0
    for r in range(n_rows):
        for c in range(n_classes):
            z[c] = 0.0
        for a in range(n_terms):  # terms[r] is read in memory order
            for c in range(n_classes):
                z[c] += dense_w[a, c] * terms[r, a, c]
        top = z[0]
        for c in range(1, n_classes):
            top = max(top, z[c])
        total = 0.0
        for c in range(n_classes):
            z[c] = np.exp(z[c] - top)
            total += z[c]
        f += np.log(total) - np.log(z[y[r]])
        for c in range(n_classes):  # z becomes the residual P_w(c | x_r) - [y_r = c]
            z[c] = z[c] / total - (1.0 if c == y[r] else 0.0)
        for a in range(n_terms):
            for c in range(n_classes):
                dense_g[a, c] += z[c] * terms[r, a, c]
    g = np.zeros(w.size)
    for a in range(n_terms):
        for c in range(n_classes):
            g[index[a, c]] += dense_g[a, c]
    scale = 1.0 / max(n_rows, 1)
    penalty = 0.0
    for p in range(w.size):
        d = w[p] - 1.0
        penalty += d * d
        g[p] = g[p] * scale + lam * scale * d
    return f * scale + 0.5 * lam * scale * penalty, g


_minimize = lbfgs_minimizer(_objective, "term_weights")


def _finite(terms: np.ndarray) -> np.ndarray:
    """``terms`` as C-contiguous float64, a term of -inf (a zero probability, m = 0) at the
    log of the smallest normal number: f would be infinite at every w."""
    terms = np.ascontiguousarray(terms, dtype=np.float64)
    if not np.isfinite(terms).all():
        terms = np.where(np.isfinite(terms), terms, np.log(np.finfo(float).tiny))
    return terms


def _fit(terms: np.ndarray, y: np.ndarray, index: np.ndarray, lam: float,
         start: np.ndarray | None = None) -> np.ndarray:
    """The weights minimising ``f`` from ``start`` (default ``w = 1``); the minimum is the
    same from any start (``f`` is convex), the iterations are fewer from a near one."""
    n_weights = int(index.max()) + 1 if index.size else 0
    w = np.ones(n_weights) if start is None else np.array(start, dtype=np.float64)
    if terms.shape[0] and n_weights and terms.shape[2] > 1:
        lower, upper = np.zeros(n_weights), np.full(n_weights, np.inf)
        w, _, _ = _minimize(w, (terms, y, index, float(lam)), lower, upper, WEIGHTS_MAX_ITER,
                            WEIGHTS_GTOL, WEIGHTS_FTOL, WEIGHTS_MEMORY)
    return w


def fit_term_weights(terms: np.ndarray, y: np.ndarray, granularity: str, lam: float
                     ) -> np.ndarray:
    """The weights of the module docstring for ``terms`` (rows, terms, classes; term 0 the
    class prior's) and the rows' classes ``y``: an array (terms, classes), tied as
    ``granularity`` says. ``lam`` (> 0) the ridge; no rows give ``w = 1``."""
    _, n_terms, n_classes = terms.shape
    index = weight_index(n_terms, n_classes, granularity)
    return _fit(_finite(terms), np.asarray(y, np.int64), index, lam)[index]


def mean_log_loss(terms: np.ndarray, y: np.ndarray, weights: np.ndarray) -> float:
    """The mean conditional log loss of ``P_w(y | x)`` over the rows of ``terms``."""
    z = np.einsum("rac,ac->rc", terms, weights)
    top = z.max(axis=1, keepdims=True)
    log_z = np.log(np.exp(z - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(log_z - z[np.arange(z.shape[0]), y])) if z.shape[0] else 0.0


def choose_penalty(terms: np.ndarray, y: np.ndarray, granularity: str,
                   grid: tuple[float, ...] = PENALTY_GRID, folds: int = PENALTY_FOLDS) -> float:
    """The ridge of ``grid`` whose weights predict held-out rows best: ``folds``-fold
    cross-validation of the mean log loss, row ``r`` in fold ``r mod folds`` (the rows in the
    order given, so a function of the rows alone).

    The ridges are tried from the largest down (the regularisation path): each fold's weights
    start from that fold's weights at the ridge before, near the next minimum, and the path
    stops at the first ridge whose loss exceeds the best so far (the held-out loss of a ridge
    path is taken to fall then rise). Among equal losses the smallest ridge wins."""
    terms, y = _finite(terms), np.asarray(y, np.int64)
    n_rows, n_terms, n_classes = terms.shape
    if n_rows < 2 * folds or n_classes < 2:
        return float(max(grid))
    index = weight_index(n_terms, n_classes, granularity)
    fold = np.arange(n_rows) % folds
    fitted = [np.ascontiguousarray(terms[fold != k]) for k in range(folds)]
    starts: list[np.ndarray | None] = [None] * folds
    best_loss, best = np.inf, float(max(grid))
    for lam in sorted(grid, reverse=True):
        loss = 0.0
        for k in range(folds):
            held = fold == k
            starts[k] = _fit(fitted[k], y[~held], index, lam, starts[k])
            loss += mean_log_loss(terms[held], y[held], starts[k][index]) * held.sum()
        loss /= n_rows
        if loss > best_loss:
            break
        best_loss, best = loss, float(lam)
    return best
