"""Convergence statistics of MCMC draws: rank-normalised split R-hat and bulk ESS.

Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16. Both
functions take draws shaped ``(chains, draws)`` (or one chain as a 1-D array) and return NaN when
the draws are too few, constant or not finite. The thresholds the project warns on are
:data:`RHAT_MAX` and :data:`ESS_PER_CHAIN_MIN`.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtri
from scipy.stats import rankdata

__all__ = ["ESS_PER_CHAIN_MIN", "RHAT_MAX", "effective_sample_size", "split_rhat"]

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


def _z_scale(x: np.ndarray) -> np.ndarray:
    r = rankdata(x, method="average").reshape(x.shape)
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
    rho = np.zeros(n)
    rho_even = 1.0
    rho[0] = rho_even
    rho_odd = 1.0 - (mean_var - acov[:, 1].mean()) / var_plus
    rho[1] = rho_odd
    t = 1
    while t < n - 3 and rho_even + rho_odd > 0.0:
        rho_even = 1.0 - (mean_var - acov[:, t + 1].mean()) / var_plus
        rho_odd = 1.0 - (mean_var - acov[:, t + 2].mean()) / var_plus
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
