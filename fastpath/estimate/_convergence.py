"""Convergence statistics of MCMC draws: rank-normalised split R-hat, bulk ESS, MCSE of the mean.

Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16.
:func:`split_rhat` and :func:`effective_sample_size` take the draws of one quantity shaped
``(chains, draws)`` (or one chain as a 1-D array) and return NaN when the draws are too few,
constant or not finite; :func:`mcse_mean` takes any number of quantities at once,
``(chains, draws, ...)``. The thresholds the project warns on are :data:`RHAT_MAX` and
:data:`ESS_PER_CHAIN_MIN`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit
from scipy.special import ndtri

#: largest R-hat of a converged chain (Vehtari et al. 2021)
RHAT_MAX = 1.01
#: smallest bulk ESS per chain of a converged fit (Vehtari et al. recommend 400 for 4 chains)
ESS_PER_CHAIN_MIN = 100.0


def _split(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    n = x.shape[1]
    half = n // 2
    return np.concatenate([x[:, :half], x[:, n - half:]], axis=0)


def average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of the flattened ``x``, ties given their average rank (``scipy.stats.
    rankdata(x, method="average")``, the same numbers, without its per-call overhead: the
    diagnostics of a fit rank a few hundred short traces)."""
    flat = np.ravel(x)
    order = np.argsort(flat, kind="mergesort")
    ordered = flat[order]
    first = np.r_[True, ordered[1:] != ordered[:-1]]
    group = np.cumsum(first) - 1
    bounds = np.r_[np.flatnonzero(first), flat.size]
    ranks = np.empty(flat.size)
    # a tie group spanning sorted positions lo..hi-1 gets (lo + 1 + hi) / 2
    ranks[order] = 0.5 * (bounds[group] + 1 + bounds[group + 1])
    return ranks


def _z_scale(x: np.ndarray) -> np.ndarray:
    r = average_ranks(x).reshape(x.shape)
    return ndtri((r - 0.375) / (x.size + 0.25))


def _rhat_basic(x: np.ndarray) -> float:
    m, n = x.shape
    if n < 2 or m < 2:
        return math.nan
    w = x.var(axis=1, ddof=1).mean()
    b = n * x.mean(axis=1).var(ddof=1)
    if w <= 0:
        return math.nan
    var_hat = (n - 1) / n * w + b / n
    return float(math.sqrt(var_hat / w))


def split_rhat(x: np.ndarray) -> float:
    """Rank-normalised split R-hat (Vehtari et al. 2021) of draws shaped (chains, draws)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.shape[1] < 4 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return math.nan
    s = _split(x)
    bulk = _rhat_basic(_z_scale(s))
    folded = np.abs(s - np.median(s))
    tail = _rhat_basic(_z_scale(folded)) if np.ptp(folded) > 0 else math.nan
    return float(np.nanmax([bulk, tail]))


@njit(cache=True)
def _geyer_sequence(rho_all: np.ndarray, n: int) -> np.ndarray:
    """Truncated, monotone autocorrelations (Geyer 1992, as in Vehtari et al. 2021 and ArviZ);
    the last element holds the truncation lag ``max_t``."""
    rho = np.zeros(n + 1)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = rho_all[1]
    rho[1] = rho_odd
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even = rho_all[t + 1]
        rho_odd = rho_all[t + 2]
        if rho_even + rho_odd >= 0:
            rho[t + 1] = rho_even
            rho[t + 2] = rho_odd
        t += 2
    max_t = t - 2
    if rho_even > 0:
        rho[max_t + 1] = rho_even
    t = 1
    while t <= max_t - 2:
        if rho[t + 1] + rho[t + 2] > rho[t - 1] + rho[t]:
            rho[t + 1] = (rho[t - 1] + rho[t]) / 2.0
            rho[t + 2] = rho[t + 1]
        t += 2
    rho[n] = max_t
    return rho


def _ess_raw(x: np.ndarray) -> float:
    m, n = x.shape
    if n < 4:
        return math.nan
    xc = x - x.mean(axis=1, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(xc, size, axis=1)
    acov = np.fft.irfft(f * np.conjugate(f), size, axis=1)[:, :n] / n
    chain_var = acov[:, 0] * n / (n - 1.0)
    mean_var = chain_var.mean()
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += x.mean(axis=1).var(ddof=1)
    if var_plus <= 0:
        return math.nan
    # Geyer's initial monotone sequence on the chain-averaged autocorrelations, one lag pair
    # at a time; the autocovariances are averaged over chains once, up front (a numpy call
    # per lag made this loop most of the cost of a diagnostic)
    rho_all = 1.0 - (mean_var - acov.mean(axis=0)) / var_plus
    rho_all[0] = 1.0
    rho = _geyer_sequence(rho_all, n)
    max_t = int(rho[-1])
    rho = rho[:-1]
    total = m * n
    tau = -1.0 + 2.0 * rho[: max_t + 1].sum() + rho[max_t + 1: max_t + 2].sum()
    tau = max(tau, 1.0 / math.log10(total))
    return float(total / tau)


def effective_sample_size(x: np.ndarray) -> float:
    """Rank-normalised bulk ESS (Vehtari et al. 2021) of draws shaped (chains, draws)."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.shape[1] < 8 or not np.all(np.isfinite(x)) or np.ptp(x) == 0:
        return math.nan
    return _ess_raw(_z_scale(_split(x)))


def mcse_mean(x: np.ndarray) -> np.ndarray:
    """Monte-Carlo standard error of the posterior mean of every quantity in ``x``.

    The estimator of ArviZ's ``mcse(method="mean")`` (Vehtari et al. 2021):
    ``sd / sqrt(ESS)``, with ``sd`` the standard deviation of all draws and ``ESS`` the
    split-chain effective sample size of the draws themselves -- not rank-normalised, because
    the error of a mean depends on the values, not only on their order.

    Parameters
    ----------
    x : array_like, shape (chains, draws, ...)
        Draws of any number of quantities (trailing axes); a 1-D array is one chain of one
        quantity.

    Returns
    -------
    ndarray, shape ``x.shape[2:]``
        The MCSE of each quantity's mean: 0 where its draws are constant (the mean is exact),
        NaN where they are not finite or fewer than 8 per chain.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x[None, :]
    if x.ndim < 2:
        raise ValueError(f"draws must be shaped (chains, draws, ...), got shape {x.shape}")
    chains, draws = x.shape[:2]
    flat = x.reshape(chains, draws, -1)
    out = np.zeros(flat.shape[2])
    # one quantity at a time: the autocorrelation sum stops at a different lag for each
    for i in range(flat.shape[2]):
        d = flat[:, :, i]
        if not np.all(np.isfinite(d)):
            out[i] = math.nan
        elif np.ptp(d) > 0:
            out[i] = d.std(ddof=1) / math.sqrt(_ess_raw(_split(d)))
    return out.reshape(x.shape[2:])
