"""A teaching sampler: the paper's Algorithms 1-5 in plain NumPy, to read beside the paper.

Petitjean, Buntine, Webb, Zaidi (2018), "Accurate parameter estimation for Bayesian network
classifiers using hierarchical Dirichlet processes", Machine Learning 107,
doi:10.1007/s10994-018-5718-0. Equation, section and algorithm numbers below are the paper's.

This module is the collapsed Gibbs sampler of section 4, written for reading, not for speed:
one function per algorithm, one Python loop per (node, value), every formula with its equation
number. It samples the model the paper *states* (section 4.1), with two choices where the paper
contradicts itself (docs/theory.md, "Where the paper contradicts itself"):

* **Exact root.** The root probability phi_root ~ Dir(alpha_0 / K) is integrated out (the base
  case of section 4.4.1); the root has no table counts. Algorithms 2 and 3 instead fix the
  root's table counts at min(1, n), the reference code's shortcut (``fastpath``'s
  ``root="reference"``).
* **Full range.** A table count is drawn from its full conditional on its whole feasible range,
  not from a window of +-10 around its current value (the window is not a Gibbs step). The
  paper's window is there to compare with: ``gibbs(..., window=10)``.

and the two typos of the paper corrected: the root's factor uses the *root's* counts
(Gamma(n_k + alpha_0/K) / Gamma(n_. + alpha_0), n the root's sums of its children's table
counts, eq. 10), and the parent's rising factorial in Algorithm 4 runs over the parent's *total*
n_. (eq. 11), not over n[k].

It targets the same posterior as ``fastpath.estimate.hdp.estimate_tree`` with
``HDPOptions(root="exact", update="exact")`` and the same prior
(tests/test_teaching.py checks both against the exact posterior of the worked example, and
against each other on small trees). Use fastpath for anything but teaching: it is about 10^4
times faster.

Conventions (docs/theory.md, notation table): nodes are numbered so that ``parent[j] < j``
(root 0); ``n[j, k]`` is node j's count of value k (data at a leaf, the sum of the children's
table counts at an internal node, eq. 10), ``t[j, k]`` its table count, ``N[j] = n[j].sum()``
and ``T[j] = t[j].sum()`` the totals; ``alpha[g]`` the concentration of tying group g.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import digamma, gammaln

__all__ = [
    "TeachingRun",
    "crd_probabilities",
    "estimate",
    "gibbs",
    "init_table_counts",
    "log_stirling_table",
    "sample_concentrations",
    "sweep",
    "table_count_conditional",
]


def log_stirling_table(n_max: int) -> np.ndarray:
    """log S(n, t), unsigned Stirling numbers of the first kind, for 0 <= t <= n <= n_max.

    They are the coefficients of eq. (7), Gamma(a + n) / Gamma(a) = sum_t a^t S(n, t), and
    follow the recurrence S(n + 1, t) = n S(n, t) + S(n, t - 1) (a new customer joins one of
    the n seated ones or opens a table). Entry ``[n, t]`` is -inf where S(n, t) = 0. Memory is
    (n_max + 1)^2 doubles: fine for teaching; fastpath's ``LogStirlingTable`` scales.
    """
    out = np.full((n_max + 1, n_max + 1), -np.inf)
    out[0, 0] = 0.0
    for n in range(n_max):
        join = out[n, 1:] + (np.log(n) if n > 0 else -np.inf)  # n S(n, t)
        out[n + 1, 1:] = np.logaddexp(join, out[n, :-1])  # + S(n, t - 1)
    return out


def crd_probabilities(n: int, alpha: float, log_s: np.ndarray) -> np.ndarray:
    """P(t | n, alpha) for t = 0..n, the Chinese restaurant distribution of eq. (8).

    P(t) = Gamma(alpha) / Gamma(alpha + n) alpha^t S(n, t): the number of tables that n
    customers of a Chinese restaurant process with concentration alpha occupy.
    """
    t = np.arange(n + 1)
    logp = gammaln(alpha) - gammaln(alpha + n) + t * np.log(alpha) + log_s[n, : n + 1]
    return np.exp(logp)


@dataclass
class _Tree:
    """What the sampler reads of a context tree: parents, leaf data, tying groups."""

    parent: np.ndarray  # (n_nodes,), parent[0] = -1
    data: np.ndarray  # (n_nodes, K), the data counts at the leaves, 0 elsewhere
    group: np.ndarray  # (n_nodes,), tying group of each non-root node, -1 at the root
    n_groups: int


def _read_tree(tree, tying: str) -> _Tree:
    from fastpath.counts import tying_groups

    data = np.zeros_like(np.asarray(tree.counts, dtype=np.int64))
    data[tree.leaves] = tree.counts[tree.leaves]
    group = tying_groups(tree, tying)
    return _Tree(np.asarray(tree.parent), data, group, int(group.max()) + 1)


def init_table_counts(tr: _Tree, alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 2 (initParametersRecursively): n and t from the leaves up, by eq. (15).

    A node's table count starts at the expected number of tables of a CRP with its
    concentration c and its count n, rounded down: E[t] = c (psi(c + n) - psi(c)), at least 1
    (and at most n). Its parent's count is then the sum of its children's table counts, eq. (10).
    The root gets no table counts (exact root: phi_root is integrated out, not seated).
    """
    n = tr.data.copy()
    t = np.zeros_like(n)
    for j in range(len(tr.parent) - 1, 0, -1):  # parent[j] < j: children before parents
        c = alpha[tr.group[j]]
        expected = np.floor(c * (digamma(c + n[j]) - digamma(c)))  # eq. (15)
        t[j] = np.where(n[j] <= 1, n[j], np.clip(expected, 1, n[j]).astype(np.int64))
        n[tr.parent[j]] += t[j]  # eq. (10)
    return n, t


def table_count_conditional(j: int, k: int, n: np.ndarray, t: np.ndarray, tr: _Tree,
                            alpha: np.ndarray, alpha0: float, log_s: np.ndarray,
                            window: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Full conditional of t[j, k] (section 4.4.1; Algorithm 4 on every candidate).

    From eq. (11), the factors that depend on t = t[j, k] are node j's own alpha_j^t S(n_jk, t),
    and its parent p's, through n_pk = m + t and N_p = M + t (m, M: the parent's counts without
    this table count):

    * p not the root: S(m + t, t_pk) / alpha_p^(M + t), i.e. S(m + t, t_pk) / Gamma(alpha_p + M + t)
      up to a constant -- the rising factorial over the parent's *total* (Algorithm 4 writes
      n[k], a typo);
    * p the root, phi_root ~ Dir(alpha_0 / K) integrated out (the Dirichlet integral):
      Gamma(m + t + alpha_0 / K) / Gamma(M + t + alpha_0) -- the root's counts (the paper's
      display writes the child's, a typo).

    t ranges over [lo, n_jk]; lo = max(1, t_pk - m) keeps the parent's t_pk <= n_pk.

    ``window``: None (the default) keeps that whole range. An integer w keeps only the
    candidates within +-w of the current value, [max(lo, t_jk - w), min(n_jk, t_jk + w)], as
    Algorithm 3 does with w = 10 (section 4.4.1). The candidate set then moves with the state,
    so the draw is not a Gibbs step: a chain run with a window samples a different distribution
    when the conditional is wider than the window (docs/sampler.md, "The table-count update").

    Returns
    -------
    candidates, probabilities : arrays of the same length
    """
    p = tr.parent[j]
    K = n.shape[1]
    m = n[p, k] - t[j, k]
    M = n[p].sum() - t[j, k]
    lo = 1 if p == 0 else max(1, t[p, k] - m)
    hi = n[j, k]
    if window is not None:  # Algorithm 3's minTk, maxTk
        lo, hi = max(lo, t[j, k] - window), min(hi, t[j, k] + window)
    ts = np.arange(lo, hi + 1)
    logw = log_s[n[j, k], ts] + ts * np.log(alpha[tr.group[j]])
    if p == 0:
        logw += gammaln(m + ts + alpha0 / K) - gammaln(M + ts + alpha0)
    else:
        logw += log_s[m + ts, t[p, k]] - gammaln(alpha[tr.group[p]] + M + ts)
    w = np.exp(logw - logw.max())
    return ts, w / w.sum()


def sweep(n: np.ndarray, t: np.ndarray, tr: _Tree, alpha: np.ndarray, alpha0: float,
          log_s: np.ndarray, rng: np.random.Generator, window: int | None = None) -> None:
    """Algorithm 3 (sampleNode) for every node, leaves to root: a Gibbs draw of each t[j, k].

    Values with n[j, k] <= 1 are fixed (t = n, Algorithm 3's footnote). After a draw the
    parent's count moves with it (eq. 10), as Algorithm 4 does. ``n`` and ``t`` change in place.
    ``window``: see :func:`table_count_conditional` (None: the whole range, a Gibbs draw).
    """
    for j in range(len(tr.parent) - 1, 0, -1):
        p = tr.parent[j]
        for k in range(n.shape[1]):
            if n[j, k] <= 1:
                continue
            ts, prob = table_count_conditional(j, k, n, t, tr, alpha, alpha0, log_s, window)
            new = ts[np.searchsorted(np.cumsum(prob), rng.random() * prob.sum())]  # inverse cdf
            n[p, k] += new - t[j, k]
            t[j, k] = new


def sample_concentrations(n: np.ndarray, t: np.ndarray, tr: _Tree, alpha: np.ndarray,
                          shape0: float, rate0: float, cap: float,
                          rng: np.random.Generator) -> None:
    """Algorithm 5 (sampleConcentration) for every tying group, section 4.4.2.

    The likelihood of a concentration in eq. (11) is prod_j alpha^T_j / alpha^(N_j) over its
    tied nodes j. With q_j ~ Beta(alpha, N_j) added, alpha's conditional is a Gamma:
    alpha ~ Gamma(shape0 + sum_j T_j, rate0 + sum_j log 1/q_j). The paper's experiments use
    shape0 = rate0 = 0 (empirical Bayes, an improper prior); the draw is capped at ``cap``.
    ``alpha`` changes in place.

    Nodes with N_j = 0 are skipped: Algorithm 5's Beta(alpha, 0) is undefined, and such a node's
    factor alpha^0 / alpha^(0) = 1 carries nothing about alpha (the limit q_j = 1 adds nothing
    to the rate; fastpath takes q_j = 1). No tree built from data has one below the root.
    """
    N = n.sum(axis=1)
    T = t.sum(axis=1)
    for g in range(tr.n_groups):
        nodes = np.flatnonzero((tr.group == g) & (N > 0))
        q = rng.beta(alpha[g], N[nodes])
        shape = shape0 + T[nodes].sum()
        rate = rate0 - np.log(q).sum()
        alpha[g] = min(rng.gamma(shape, 1.0 / rate), cap)


def estimate(n: np.ndarray, tr: _Tree, alpha: np.ndarray, alpha0: float) -> np.ndarray:
    """Eqs. (12)-(14): E[phi | t, alpha] top-down (recordProbabilityRecursively's summand).

    Root: (n_k + alpha_0 / K) / (N + alpha_0); every other node:
    (n_jk + alpha_j phi_parent,k) / (N_j + alpha_j) -- its counts shrunk towards its parent's
    estimate by the weight alpha_j / (N_j + alpha_j).
    """
    K = n.shape[1]
    N = n.sum(axis=1)
    phi = np.empty(n.shape)
    phi[0] = (n[0] + alpha0 / K) / (N[0] + alpha0)  # eq. (12)
    for j in range(1, len(tr.parent)):  # parents before children
        a = alpha[tr.group[j]]
        phi[j] = (n[j] + a * phi[tr.parent[j]]) / (N[j] + a)  # eqs. (13), (14)
    return phi


@dataclass
class TeachingRun:
    """What :func:`gibbs` returns.

    Attributes
    ----------
    probabilities : (n_nodes, K) posterior means: the average of the kept estimates
    estimates : (n_iter, n_nodes, K) the estimate of eqs. (12)-(14) after every iteration
    alpha : (n_iter, G) the concentrations after every iteration
    table_counts : (n_iter, n_nodes, K) the table counts after every iteration
    burn_in : int, the number of leading iterations left out of ``probabilities``
    """

    probabilities: np.ndarray
    estimates: np.ndarray
    alpha: np.ndarray
    table_counts: np.ndarray
    burn_in: int


def gibbs(tree, n_iter: int = 2000, burn_in: int | None = None, *, tying: str = "level",
          alpha0: float = 2.0, shape0: float = 2.0, rate0: float = 1.0, cap: float = 4000.0,
          alpha_init: float = 2.0, fix_concentrations: bool = False,
          window: int | None = None, seed: int | None = 0) -> TeachingRun:
    """Algorithm 1 (EstimateProbHDB): initialise, then sweep, sample concentrations, record.

    The concentrations are sampled after every sweep, as in Algorithm 1 and fastpath's
    ``HDPOptions()`` (``HDPOptions.preset("paper")`` after every 5th, the reference code's
    schedule: ``concentration_every``). The concentrations exist before the table counts are
    initialised (Algorithm 1 calls Algorithm 2, which reads them, before it creates them).

    Parameters
    ----------
    tree : fastpath.counts.ContextTree
        Its leaf counts are the data.
    n_iter, burn_in : int
        Iterations, and those left out of the average (default ``n_iter // 10``).
    tying : str
        "level" (Algorithm 1's choice), "same-parent", "single" or "none".
    alpha0 : float
        The root's concentration, fixed (the paper never gives its value; 2 as in the
        reference code).
    shape0, rate0 : float
        Gamma prior of each concentration (nu_0, mu_0 in section 4.4.2). The defaults are
        fastpath's (the reference code's); the paper's experiments use 0 and 0.
    cap : float
        Upper bound of every concentration draw (needed for the improper prior).
    alpha_init : float
        Start value of every concentration (eq. 15 uses it).
    fix_concentrations : bool
        Keep ``alpha_init`` instead of running Algorithm 5.
    window : int or None
        None (default): each table count is drawn from its whole range (a Gibbs step). An
        integer w: from the candidates within +-w of its current value, as the paper's
        Algorithm 3 does with w = 10 -- not a Gibbs step (:func:`table_count_conditional`).
    seed : int or None
        Seed of ``numpy.random.default_rng``.
    """
    if window is not None and (int(window) != window or window < 1):
        raise ValueError(f"window must be None or a positive integer, got {window!r}")
    rng = np.random.default_rng(seed)
    tr = _read_tree(tree, tying)
    burn_in = n_iter // 10 if burn_in is None else burn_in
    log_s = log_stirling_table(int(tr.data.sum(axis=0).max()))
    alpha = np.full(tr.n_groups, float(alpha_init))
    n, t = init_table_counts(tr, alpha)  # Algorithm 2
    estimates = np.empty((n_iter, *n.shape))
    alphas = np.empty((n_iter, tr.n_groups))
    tables = np.empty((n_iter, *n.shape), dtype=np.int64)
    for it in range(n_iter):
        sweep(n, t, tr, alpha, alpha0, log_s, rng, window)  # Algorithms 3-4
        if not fix_concentrations:
            sample_concentrations(n, t, tr, alpha, shape0, rate0, cap, rng)  # Algorithm 5
        estimates[it] = estimate(n, tr, alpha, alpha0)  # eqs. (12)-(14)
        alphas[it] = alpha
        tables[it] = t
    return TeachingRun(estimates[burn_in:].mean(axis=0), estimates, alphas, tables, burn_in)
