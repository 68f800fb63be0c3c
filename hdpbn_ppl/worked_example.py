"""The paper's worked example, settled by deterministic numerical integration.

Paper, section "Worked example": a naive-Bayes tree for P(X1 | Y), both binary, with counts

    dataset 1:  n(X1 | Y=0) = [2, 0],  n(X1 | Y=1) = [20, 5]
    dataset 2:  n(X1 | Y=0) = [2, 0],  n(X1 | Y=1) = [4, 9]

Under the model of section 4.1 (root phi ~ Dir(alpha0 / K); leaves theta_y ~ Dir(alpha phi); one
concentration alpha for depth 1), with the reference code's alpha0 = 2 and prior
alpha ~ Gamma(2, 1) (the paper gives no alpha0 and uses the improper nu_0 = mu_0 = 0; see
:func:`concentration_profile` for any prior), the posterior is two-dimensional once the leaves
are integrated out analytically (paper, eq. 6):

    p(phi, alpha | n) ∝ Beta(phi_0; alpha0/2, alpha0/2) Gamma(alpha; 2, 1)
                        prod_y Gamma(alpha) / Gamma(alpha + N_y)
                               prod_k Gamma(alpha phi_k + n_yk) / Gamma(alpha phi_k)

and E[theta_y | n] = E[(n_y + alpha phi) / (N_y + alpha)]. :func:`exact_posterior` integrates it
with adaptive Gauss-Kronrod cubature (``scipy.integrate.cubature``, error-controlled) over
phi_0 = (1 + tanh x) / 2 and alpha = e^s.

:func:`table_posterior` computes the same numbers by a second, independent route -- the one the
collapsed Gibbs sampler follows: enumerate every configuration of the table counts t_yk
(paper, eq. 9; 1 <= t_yk <= n_yk), integrate phi out against its Dirichlet prior,
and integrate alpha numerically (one dimension). With ``root="reference"`` it evaluates the
reference implementation's shortcut instead (the root's table counts fixed at min(1, n)),
which is what the Java code samples; that is the origin of its 0.8756 / 0.8359.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from scipy import integrate
from scipy.special import gammaln

__all__ = [
    "DATASETS",
    "PAPER_HDP",
    "REFERENCE_CODE_HDP",
    "ExactPosterior",
    "concentration_profile",
    "exact_posterior",
    "m_estimate",
    "mle",
    "table_posterior",
    "worked_example_tree",
]

#: counts n(X1 | Y=y), rows y = 0, 1
DATASETS: dict[str, np.ndarray] = {
    "DS1": np.array([[2, 0], [20, 5]]),
    "DS2": np.array([[2, 0], [4, 9]]),
}
#: HDP estimates printed in the paper's table (P(X1 = 0 | Y = y))
PAPER_HDP = {"DS1": (0.89, 0.79), "DS2": (0.86, 0.34)}
#: reference (Java) code, defaults (5,000 iterations, level tying), mean of 20 seeds
REFERENCE_CODE_HDP = {"DS1": (0.8753, 0.7945), "DS2": (0.8357, 0.3375)}


@dataclass(frozen=True)
class ExactPosterior:
    """Posterior means of a depth-1 tree with one concentration.

    Attributes
    ----------
    theta : (Y, K) posterior means of the leaves
    phi : (K,) posterior mean of the root
    alpha : posterior mean of the concentration
    error : bound on the absolute integration error of every number above
    method : "quadrature" or "tables"
    """

    theta: np.ndarray
    phi: np.ndarray
    alpha: float
    error: float
    method: str


def worked_example_tree(name: str):
    """The context tree of dataset ``name`` ("DS1" or "DS2")."""
    from fastpath.counts import ContextTree

    counts = DATASETS[name]
    return ContextTree.from_leaf_counts(
        np.arange(counts.shape[0])[:, None], counts, [counts.shape[0]], counts.shape[1],
        child_name="X1", conditioning_names=["Y"],
    )


def mle(counts) -> np.ndarray:
    """Maximum likelihood n / N per row."""
    counts = np.asarray(counts, dtype=float)
    return counts / counts.sum(axis=1, keepdims=True)


def m_estimate(counts, m: float = 1.0) -> np.ndarray:
    """(n + m / K) / (N + m) per row (the paper's m-estimate; m = 1 in the worked example)."""
    counts = np.asarray(counts, dtype=float)
    k = counts.shape[1]
    return (counts + m / k) / (counts.sum(axis=1, keepdims=True) + m)


def _log_gamma_prior(a, shape, rate):
    return shape * np.log(rate) - gammaln(shape) + (shape - 1) * np.log(a) - rate * a


def exact_posterior(
    counts,
    *,
    alpha0: float = 2.0,
    concentration_shape: float = 2.0,
    concentration_rate: float = 1.0,
    epsrel: float = 1e-10,
) -> ExactPosterior:
    """Posterior means of a depth-1, K = 2 tree by 2-D adaptive quadrature.

    Parameters
    ----------
    counts : array (Y, 2)
        Leaf counts n(X | Y = y).
    alpha0 : float
        Root concentration (base measure uniform): phi_0 ~ Beta(alpha0 / 2, alpha0 / 2).
    concentration_shape, concentration_rate : float
        Gamma prior of the single concentration.
    epsrel : float
        Relative tolerance of the cubature (every moment).
    """
    counts = np.asarray(counts, dtype=float)
    if counts.ndim != 2 or counts.shape[1] != 2:
        raise ValueError("exact_posterior handles K = 2 (a one-dimensional root)")
    n_tot = counts.sum(axis=1)
    h = alpha0 / 2.0

    def log_density(x, s):
        # phi_0 = (1 + tanh x) / 2 and alpha = e^s, Jacobians included
        log_p = (-np.logaddexp(0.0, -2.0 * x), -np.logaddexp(0.0, 2.0 * x))
        a = np.exp(s)
        # Beta(h, h) density of phi_0 times d phi_0 / dx = 2 phi_0 phi_1; times d alpha / ds
        lp = gammaln(alpha0) - 2 * gammaln(h) + h * (log_p[0] + log_p[1]) + np.log(2.0)
        lp = lp + _log_gamma_prior(a, concentration_shape, concentration_rate) + s
        for y in range(counts.shape[0]):
            lp = lp + gammaln(a) - gammaln(a + n_tot[y])
            for k in range(2):
                if counts[y, k] > 0:
                    ak = np.exp(s + log_p[k])
                    lp = lp + gammaln(ak + counts[y, k]) - gammaln(ak)
        return lp, a, np.exp(log_p[0])

    # the integrand is negligible (< 1e-17 of its peak) outside this box for the default prior
    lo, hi = np.array([-20.0, -40.0]), np.array([20.0, 10.0])
    xs, ss = np.meshgrid(np.linspace(lo[0], hi[0], 201), np.linspace(lo[1], hi[1], 251))
    ref = float(np.max(log_density(xs, ss)[0]))

    def moments(points):
        lp, a, p0 = log_density(points[:, 0], points[:, 1])
        w = np.exp(lp - ref)
        theta = (counts[None, :, 0] + a[:, None] * p0[:, None]) / (n_tot[None, :] + a[:, None])
        return w[:, None] * np.column_stack([np.ones_like(a), a, p0, theta])

    res = integrate.cubature(moments, lo, hi, rtol=epsrel, atol=0.0)
    if res.status != "converged":
        raise RuntimeError(f"quadrature did not converge: {res.status}")
    z = res.estimate[0]
    m = res.estimate / z
    rel_err = res.error / np.abs(res.estimate)
    error = float(np.max(np.abs(m) * (rel_err + rel_err[0])))
    theta = np.stack([m[3:], 1.0 - m[3:]], axis=1)
    return ExactPosterior(theta, np.array([m[2], 1.0 - m[2]]), float(m[1]), error, "quadrature")


def _log_stirling_table(n_max: int) -> np.ndarray:
    """log of unsigned Stirling numbers of the first kind, S(n, t) for 0 <= t <= n <= n_max."""
    out = np.full((n_max + 1, n_max + 1), -np.inf)
    out[0, 0] = 0.0
    for n in range(n_max):
        # S(n + 1, t) = n S(n, t) + S(n, t - 1)
        prev = out[n]
        shifted = np.concatenate([[-np.inf], prev[:-1]])
        with np.errstate(divide="ignore"):
            out[n + 1] = np.logaddexp(np.log(n) + prev if n > 0 else -np.inf, shifted)
    return out


def _table_weights(counts: np.ndarray, root: str, alpha0: float):
    """Every table-count configuration of a depth-1 tree, weighted with alpha factored out.

    Returns ``lw`` (C,), the log of prod S(n_yk, t_yk) times the root factor R(T); ``t_dot``
    (C,), the total table count (the power of alpha); ``phi_hat`` (C, K), E[phi | t].
    """
    if root not in ("exact", "reference"):
        raise ValueError("root must be 'exact' or 'reference'")
    n_y, k = counts.shape
    log_s = _log_stirling_table(int(counts.max()))
    ranges = [range(1, n + 1) if n > 0 else range(0, 1) for n in counts.ravel()]
    configs = np.array(list(itertools.product(*ranges)), dtype=np.int64).reshape(-1, n_y, k)
    if configs.shape[0] > 2_000_000:
        raise ValueError("too many table-count configurations to enumerate")
    big_t = configs.sum(axis=1)  # (C, K)
    t_dot = configs.sum(axis=(1, 2))  # (C,)
    lw = log_s[counts[None], configs].sum(axis=(1, 2))
    lw += gammaln(alpha0) - gammaln(alpha0 + big_t.sum(axis=1))
    if root == "exact":
        lw += (gammaln(alpha0 / k + big_t) - gammaln(alpha0 / k)).sum(axis=1)
    else:
        lw += np.where(big_t > 0, gammaln(np.maximum(big_t, 1)), 0.0).sum(axis=1)
    phi_hat = (big_t + alpha0 / k) / (big_t.sum(axis=1, keepdims=True) + alpha0)  # (C, K)
    return lw, t_dot, phi_hat


def concentration_profile(counts, alphas, *, root: str = "exact", alpha0: float = 2.0
                          ) -> tuple[np.ndarray, np.ndarray]:
    """The marginal likelihood of the concentration and the estimates given it, on a grid.

    With phi and the leaves integrated out and the table counts summed over (enumeration, as in
    :func:`table_posterior`), the data's likelihood is a function of alpha alone, L(alpha) =
    sum_t p(n, t | alpha). Any prior p(alpha), proper or not, and any cap then give the
    posterior p(alpha | n) ∝ p(alpha) L(alpha) on (0, cap]: this is how the worked example's
    sensitivity to the prior and to the cap is computed (docs/theory.md, examples/teaching.ipynb).

    Parameters
    ----------
    counts : array (Y, K)
    alphas : array (A,), positive
    root, alpha0 : as in :func:`table_posterior`

    Returns
    -------
    log_lik : (A,) log L(alpha), up to a constant
    theta : (A, Y, K) E[theta_y | n, alpha]
    """
    counts = np.asarray(counts, dtype=np.int64)
    alphas = np.asarray(alphas, dtype=float)
    lw, t_dot, phi_hat = _table_weights(counts, root, alpha0)
    n_tot = counts.sum(axis=1)
    log_lik = np.empty(alphas.shape)
    theta = np.empty(alphas.shape + counts.shape)
    for i, a in enumerate(alphas):
        lws = lw + t_dot * np.log(a) + sum(gammaln(a) - gammaln(a + n) for n in n_tot)
        top = lws.max()
        w = np.exp(lws - top)
        log_lik[i] = top + np.log(w.sum())
        th = (counts[None] + a * phi_hat[:, None, :]) / (n_tot[None, :, None] + a)
        theta[i] = np.tensordot(w, th, axes=1) / w.sum()
    return log_lik, theta


def table_posterior(
    counts,
    *,
    root: str = "exact",
    alpha0: float = 2.0,
    concentration_shape: float = 2.0,
    concentration_rate: float = 1.0,
    epsrel: float = 1e-11,
) -> ExactPosterior:
    """Posterior means of a depth-1 tree by enumerating the table counts (any K, small counts).

    The joint of the table counts t and the concentration, with phi integrated out, is
    (paper, eqs. 9 and 11)

        p(t, alpha | n) ∝ Gamma(alpha; shape, rate) prod_y [alpha^{t_y.} Gamma(alpha) /
                          Gamma(alpha + N_y) prod_k S(n_yk, t_yk)] * R(T)

    with T_k = sum_y t_yk and the root factor R(T) = Gamma(alpha0) / Gamma(alpha0 + T.)
    prod_k Gamma(alpha0 / K + T_k) / Gamma(alpha0 / K) (``root="exact"``), or, for the
    reference implementation's shortcut (root table counts fixed at 1), R(T) = Gamma(alpha0) /
    Gamma(alpha0 + T.) prod_{k: T_k > 0} (T_k - 1)! (``root="reference"``). Given t and alpha,
    E[phi_k] = (T_k + alpha0 / K) / (T. + alpha0) and E[theta_yk] = (n_yk + alpha E[phi_k]) /
    (N_y + alpha) (the estimates of the paper's eqs. 12-14).
    """
    counts = np.asarray(counts, dtype=np.int64)
    n_y, k = counts.shape
    lw, t_dot, phi_hat = _table_weights(counts, root, alpha0)
    n_tot = counts.sum(axis=1)

    def log_w(s):
        a = np.exp(s)
        base = _log_gamma_prior(a, concentration_shape, concentration_rate) + s
        base += sum(gammaln(a) - gammaln(a + n) for n in n_tot)
        return lw + t_dot * s + base, a

    grid = np.linspace(-40, 10, 501)
    ref = max(float(np.max(log_w(s)[0])) for s in grid)

    def moments(s):
        lws, a = log_w(s)
        w = np.exp(lws - ref)
        theta = (counts[None] + a * phi_hat[:, None, :]) / (n_tot[None, :, None] + a)
        return np.concatenate([[w.sum(), (w * a).sum()], w @ phi_hat,
                               np.tensordot(w, theta, axes=1).ravel()])

    total, err = integrate.quad_vec(moments, -40.0, 10.0, epsrel=epsrel, epsabs=0.0,
                                    limit=400)
    z = total[0]
    m = total / z
    return ExactPosterior(
        theta=m[2 + k:].reshape(n_y, k),
        phi=m[2 : 2 + k],
        alpha=float(m[1]),
        error=float(2 * epsrel + 2 * err / z),
        method="tables" if root == "exact" else "tables (reference root)",
    )
