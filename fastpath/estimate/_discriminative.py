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
term is ignored). The problem is smooth and convex. Its Hessian in the weights of term ``a``
and class ``c`` and of term ``b`` and class ``d`` is
``(1/n) sum_r T_(r,a,c) p_(r,c) ([c = d] - p_(r,d)) T_(r,b,d) + (lam / n) [a = b, c = d]``
(``p`` the probabilities ``P_w(c | x_r)``; a tied weight sums its entries' rows and columns).

The minimiser. Where the untied weights are at most :data:`NEWTON_MAX_WEIGHTS` (terms x classes),
projected Newton's method (:func:`_newton`: Bertsekas 1982, the Newton step on the weights not
held at 0, a damped Cholesky factor, backtracking along the projected path) minimises ``f`` from
``w = 1`` in at most :data:`NEWTON_MAX_ITER` iterations; where it has not finished by then
(nearly separable rows, whose weights at 0 change from step to step), or where the weights are
more (a Hessian costs rows x weights^2 a step), the compiled L-BFGS
(:func:`~fastpath.estimate._lbfgs.lbfgs_minimizer`) goes on. Why Newton: an ensemble's members
are weighed with a weak ridge (:mod:`fastpath.pipeline._weights`), where the problem is
ill-conditioned (terms of different scales, strongly correlated trees): L-BFGS took 20 to 250
iterations and stopped short of the minimum at its gradient tolerance (the probabilities up to
0.08 away from the minimum's); Newton's method, invariant to the scaling, takes 2 to 6 on most
layers and reaches it. Measured on members 0-2 of sixteen datasets' layers (one thread, the
fastest of two): 1.3 to 5 times faster where it runs (connect-4, 129 weights, 0.12 s against
0.38-0.44 s; waveform-5000 0.01-0.02 s against 0.07-0.14 s), as fast on kr-vs-kp (capped at
10 iterations: at 20 it was twice as slow as L-BFGS alone, at 100 three times); with more
weights Newton's steps cost more than they save (thyroid, 420 weights: 2.3 s against 1.1 s;
optdigits, 520: 9.5 s against 0.25 s; pendigits, 170: as fast), hence 150.

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
#: the most untied weights (terms x classes) whose problem Newton's method solves (module
#: docstring); above, L-BFGS
NEWTON_MAX_WEIGHTS: int = 150
#: the most Newton iterations; L-BFGS goes on from there (:func:`_fit`)
NEWTON_MAX_ITER: int = 10
#: the sufficient decrease of Newton's backtracking (Armijo's constant) and its most halvings
NEWTON_ARMIJO: float = 1e-4
NEWTON_MAX_HALVINGS: int = 50
#: the widest band above 0 in which a weight whose gradient points below is held (Bertsekas's
#: epsilon-active set, :func:`_newton`)
NEWTON_ACTIVE_EPSILON: float = 1e-3
#: the most times a Newton step is solved again with more weights held (:func:`_newton`)
NEWTON_MAX_RESOLVES: int = 10
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
def _dense_weights(w, index):
    """The weights spread untied into a (terms, classes) table."""
    n_terms, n_classes = index.shape
    dense_w = np.empty((n_terms, n_classes))
    for a in range(n_terms):
        for c in range(n_classes):
            dense_w[a, c] = w[index[a, c]]
    return dense_w


@njit(cache=True, nogil=True)
def _row_exponentials(dense_w, terms, r, z):
    """Row ``r``'s ``exp(z_c - max_c z_c)`` into ``z``, ``z_c = sum_a w_(a,c) T_(r,a,c)``;
    returns their sum (``P_w(c | x_r) = z_c / sum``)."""
    n_terms, n_classes = dense_w.shape
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
    return total


@njit(cache=True, nogil=True)
def _objective(w, terms, y, index, lam):
    """``f(w)`` and its gradient (module docstring); ``terms`` (rows, terms, classes).

    The tied weights are spread into a dense (terms, classes) table first and the gradient
    gathered from one: the loops over the classes then read contiguous memory, which the
    compiler vectorises (an indexed gather in the innermost loop ran 1.3-1.7x slower)."""
    n_rows, n_terms, n_classes = terms.shape
    dense_w = _dense_weights(w, index)
    dense_g = np.zeros((n_terms, n_classes))
    z = np.empty(n_classes)
    f = 0.0
    for r in range(n_rows):
        total = _row_exponentials(dense_w, terms, r, z)
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

#: rows whose outer products a pass of :func:`_hessian` adds to the triangle together
_HESSIAN_BLOCK = 4


@njit(cache=True, nogil=True)
def _hessian(w, terms, index, lam, n_weights):
    """The Hessian of ``f`` at ``w`` (module docstring), (n_weights, n_weights).

    Accumulated untied, ``h[(a,c),(b,d)] = sum_r u_(r,a,c) ([c = d] T_(r,b,d) - u_(r,b,d))``
    with ``u = T p``, in its lower triangle: the outer products of four rows added in one pass
    over it (the triangle is then read and written a quarter as often), the blocks ``c = d``
    apart, class by class (their loops then run over contiguous memory: 20-30 % faster on
    layers of 45 to 420 weights), and gathered into the tied weights at the end."""
    n_rows, n_terms, n_classes = terms.shape
    k = n_terms * n_classes
    dense_w = _dense_weights(w, index)
    h = np.zeros((k, k))
    diagonal = np.zeros((n_classes, n_terms, n_terms))  # the blocks [c = d], by class
    by_class = np.empty((n_classes, n_terms))
    weighted = np.empty((n_classes, n_terms))
    z = np.empty(n_classes)
    u = np.zeros((_HESSIAN_BLOCK, k))
    for start in range(0, n_rows, _HESSIAN_BLOCK):
        for q in range(_HESSIAN_BLOCK):
            r = start + q
            if r >= n_rows:  # the last block's missing rows add nothing
                u[q, :] = 0.0
                continue
            total = _row_exponentials(dense_w, terms, r, z)
            for a in range(n_terms):
                for c in range(n_classes):
                    u[q, a * n_classes + c] = terms[r, a, c] * z[c] / total
            # the blocks [c = d] from the row's terms laid out by class: contiguous loops
            for a in range(n_terms):
                for c in range(n_classes):
                    by_class[c, a] = terms[r, a, c]
                    weighted[c, a] = u[q, a * n_classes + c]
            for c in range(n_classes):
                for a in range(n_terms):
                    ua = weighted[c, a]
                    for b in range(a + 1):
                        diagonal[c, a, b] += ua * by_class[c, b]
        for i in range(k):  # minus u u^T of the block's rows
            u0, u1, u2, u3 = u[0, i], u[1, i], u[2, i], u[3, i]
            for j in range(i + 1):
                h[i, j] -= u0 * u[0, j] + u1 * u[1, j] + u2 * u[2, j] + u3 * u[3, j]
    for c in range(n_classes):
        for a in range(n_terms):
            for b in range(a + 1):
                h[a * n_classes + c, b * n_classes + c] += diagonal[c, a, b]
    out = np.zeros((n_weights, n_weights))
    for i in range(k):
        p = index[i // n_classes, i % n_classes]
        for j in range(i + 1):
            q = index[j // n_classes, j % n_classes]
            out[p, q] += h[i, j]
            if i != j:
                out[q, p] += h[i, j]
    scale = 1.0 / max(n_rows, 1)
    for p in range(n_weights):
        for q in range(n_weights):
            out[p, q] *= scale
        out[p, p] += lam * scale
    return out


@njit(cache=True, nogil=True)
def _damped_solve(h, g):
    """``x`` with ``(h + mu I) x = g``: Cholesky's factor of ``h + mu I``, ``mu`` 0 or, where
    that is not positive definite to rounding (a weight no row informs beside a tiny ridge),
    the least of ``1e-10 max|h_ii| 10^j`` that is."""
    m = g.size
    big = 1e-300
    for i in range(m):
        big = max(big, abs(h[i, i]))
    low = np.zeros((m, m))
    mu = 0.0
    for _ in range(40):
        positive = True
        for i in range(m):
            for j in range(i + 1):
                s = h[i, j] + (mu if i == j else 0.0)
                for q in range(j):
                    s -= low[i, q] * low[j, q]
                if i != j:
                    low[i, j] = s / low[j, j]
                elif s > 0.0:
                    low[i, i] = np.sqrt(s)
                else:
                    positive = False
                    break
            if not positive:
                break
        if positive:
            break
        mu = 1e-10 * big if mu == 0.0 else 10.0 * mu
    x = g.copy()
    for i in range(m):  # low y = g, then low^T x = y
        s = x[i]
        for q in range(i):
            s -= low[i, q] * x[q]
        x[i] = s / low[i, i]
    for i in range(m - 1, -1, -1):
        s = x[i]
        for q in range(i + 1, m):
            s -= low[q, i] * x[q]
        x[i] = s / low[i, i]
    return x


@njit(cache=True, nogil=True)
def _projected_gradient(w, g):
    """The largest component of the projected gradient (0 for a weight at 0 whose gradient
    points below) and ``|w - max(w - g, 0)|``, how far ``w`` is from stationary."""
    largest = 0.0
    distance = 0.0
    for p in range(w.size):
        moved = w[p] - max(w[p] - g[p], 0.0)
        distance += moved * moved
        if not (w[p] <= 0.0 and g[p] > 0.0):
            largest = max(largest, abs(g[p]))
    return largest, np.sqrt(distance)


@njit(cache=True, nogil=True)
def _newton_direction(w, g, h, epsilon, direction):
    """The projected Newton direction (Bertsekas 1982) into ``direction``: a weight within
    ``epsilon`` of 0 whose gradient points below is held, moved by its own curvature only
    (``-g_p / h_pp``: it reaches 0 in one step); the others take the Newton step of the
    Hessian restricted to them; a weight near 0 whose Newton step points below is held too
    and the step solved again (else the set at 0 changes at every iteration, and the steps
    cut at 0 are no longer Newton's)."""
    n_weights = w.size
    held = np.zeros(n_weights, np.bool_)
    free = np.empty(n_weights, np.int64)
    for p in range(n_weights):
        held[p] = w[p] <= epsilon and g[p] > 0.0
    for _ in range(NEWTON_MAX_RESOLVES):
        m = 0
        for p in range(n_weights):
            if held[p]:
                direction[p] = -g[p] / max(h[p, p], 1e-300)
            else:
                free[m] = p
                m += 1
        h_free = np.empty((m, m))
        g_free = np.empty(m)
        for i in range(m):
            g_free[i] = g[free[i]]
            for j in range(m):
                h_free[i, j] = h[free[i], free[j]]
        step = _damped_solve(h_free, g_free)
        settled = True
        for i in range(m):
            direction[free[i]] = -step[i]
            if w[free[i]] <= epsilon and step[i] > 0.0:
                held[free[i]] = True
                settled = False
        if settled:
            break


@njit(cache=True, nogil=True)
def _projected_backtracking(w, f, g, direction, terms, y, index, lam, trial):
    """The step along the projected path ``trial = max(w + t d, 0)``, ``t`` halved from 1
    until ``f`` decreases by ``NEWTON_ARMIJO`` times the gradient's product with the change
    (Armijo's condition). Returns ``(accepted, f, gradient)`` at ``trial``."""
    t = 1.0
    for _ in range(NEWTON_MAX_HALVINGS):
        change = 0.0
        for p in range(w.size):
            trial[p] = max(w[p] + t * direction[p], 0.0)
            change += g[p] * (trial[p] - w[p])
        f_new, g_new = _objective(trial, terms, y, index, lam)
        if f_new <= f + NEWTON_ARMIJO * change:
            return True, f_new, g_new
        t *= 0.5
    return False, f, g


@njit(cache=True, nogil=True)
def _newton(w0, terms, y, index, lam, max_iter, gtol, ftol):
    """Projected Newton's method on ``f`` from ``w0``, the weights at least 0: at each
    iteration the Hessian (:func:`_hessian`), the direction (:func:`_newton_direction`, the
    weights within ``min(NEWTON_ACTIVE_EPSILON, |w - max(w - g, 0)|)`` of 0 held as
    Bertsekas's epsilon-active set) and the step (:func:`_projected_backtracking`). Stops as
    the compiled L-BFGS does: the projected gradient's components at most ``gtol``, a decrease
    of at most ``ftol`` times ``max(|f|, 1)``, ``max_iter`` iterations, or no decrease found.
    Returns ``(w, f, iterations)``."""
    n_weights = w0.size
    w = w0.copy()
    f, g = _objective(w, terms, y, index, lam)
    direction = np.zeros(n_weights)
    trial = np.empty(n_weights)
    iterations = 0
    while iterations < max_iter:
        largest, distance = _projected_gradient(w, g)
        if largest <= gtol:
            break
        h = _hessian(w, terms, index, lam, n_weights)
        _newton_direction(w, g, h, min(NEWTON_ACTIVE_EPSILON, distance), direction)
        accepted, f_new, g_new = _projected_backtracking(w, f, g, direction, terms, y, index,
                                                         lam, trial)
        if not accepted:
            break
        stall = f - f_new <= ftol * max(abs(f), abs(f_new), 1.0)
        w[:] = trial
        f, g = f_new, g_new
        iterations += 1
        if stall:
            break
    return w, f, iterations


def _finite(terms: np.ndarray) -> np.ndarray:
    """``terms`` as C-contiguous float64, a term of -inf (a zero probability, m = 0) at the
    log of the smallest normal number: f would be infinite at every w."""
    terms = np.ascontiguousarray(terms, dtype=np.float64)
    if not np.isfinite(terms).all():
        terms = np.where(np.isfinite(terms), terms, np.log(np.finfo(float).tiny))
    return terms


def _fit(terms: np.ndarray, y: np.ndarray, index: np.ndarray, lam: float,
         start: np.ndarray | None = None) -> np.ndarray:
    """The weights minimising ``f`` from ``start`` (default ``w = 1``), by Newton's method or
    L-BFGS (module docstring); the minimum is the same from any start (``f`` is convex), the
    iterations are fewer from a near one."""
    n_weights = int(index.max()) + 1 if index.size else 0
    w = np.ones(n_weights) if start is None else np.array(start, dtype=np.float64)
    if not (terms.shape[0] and n_weights and terms.shape[2] > 1):
        return w
    if index.size <= NEWTON_MAX_WEIGHTS:
        w, _, iterations = _newton(w, terms, y, index, float(lam), NEWTON_MAX_ITER,
                                   WEIGHTS_GTOL, WEIGHTS_FTOL)
        if iterations < NEWTON_MAX_ITER:
            return w
    # many weights, or a problem Newton's method did not finish (nearly separable rows, whose
    # weights at 0 change at every step): L-BFGS, from where Newton's method stopped
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
