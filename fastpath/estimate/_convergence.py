"""Convergence statistics of MCMC draws: rank-normalised split R-hat, bulk ESS, MCSE of the mean.

Vehtari, Gelman, Simpson, Carpenter & Bürkner (2021), "Rank-normalization, folding, and
localization: an improved R-hat for assessing convergence of MCMC", Bayesian Analysis 16.
:func:`split_rhat` and :func:`effective_sample_size` take the draws of one quantity shaped
``(chains, draws)`` (or one chain as a 1-D array) and return NaN when the draws are too few,
constant or not finite; :func:`mcse_mean` takes any number of quantities at once,
``(chains, draws, ...)``. :func:`split_rhat_ess` computes both statistics of many series at
once (the diagnostics of a fit: a few per tree, hundreds of trees), with the numbers of the
one-series functions. The thresholds the project warns on are :data:`RHAT_MAX` and
:data:`ESS_PER_CHAIN_MIN`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

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


# ---------------------------------------------------------------------- many series at once
#: Most values one vectorised pass holds (series x chains x draws): bounds the temporaries
#: (a dozen arrays of this size) of a fit with long traces.
_BATCH_VALUES = 1 << 20
#: Below this size a series' spectrum is multiplied out of place by :func:`_ess_raw` too (numpy
#: elides temporaries of 256 KiB and more, and multiplies those in place).
_ELIDE_SAFE_BYTES = 1 << 16


def _average_ranks_rows(x: np.ndarray) -> np.ndarray:
    """:func:`average_ranks` of every row of the 2-D ``x`` (the same, exact, numbers)."""
    b, n = x.shape
    order = np.argsort(x, axis=1, kind="mergesort")
    ordered = np.take_along_axis(x, order, axis=1)
    differs = ordered[:, 1:] != ordered[:, :-1]
    pos = np.broadcast_to(np.arange(n), (b, n))
    # a tie group spanning sorted positions lo..hi-1 gets (lo + 1 + hi) / 2: lo is the last
    # group start at or before a position, hi the first group end after it
    starts = np.concatenate([np.ones((b, 1), dtype=bool), differs], axis=1)
    lo = np.maximum.accumulate(np.where(starts, pos, 0), axis=1)
    ends = np.concatenate([differs, np.ones((b, 1), dtype=bool)], axis=1)
    hi = np.minimum.accumulate(np.where(ends, pos + 1, n)[:, ::-1], axis=1)[:, ::-1]
    ranks = np.empty((b, n))
    np.put_along_axis(ranks, order, 0.5 * (lo + 1 + hi), axis=1)
    return ranks


def _z_scale_rows(s: np.ndarray) -> np.ndarray:
    """:func:`_z_scale` of every series of ``s`` shaped (series, chains, draws)."""
    flat = s.reshape(s.shape[0], -1)
    r = _average_ranks_rows(flat).reshape(s.shape)
    return ndtri((r - 0.375) / (flat.shape[1] + 0.25))


def _rhat_basic_rows(x: np.ndarray) -> np.ndarray:
    """:func:`_rhat_basic` of every series of ``x`` shaped (series, chains, draws), the same
    reductions along the same (last) axes."""
    _, m, n = x.shape
    if n < 2 or m < 2:
        return np.full(x.shape[0], math.nan)
    w = x.var(axis=2, ddof=1).mean(axis=1)
    b = n * x.mean(axis=2).var(axis=1, ddof=1)
    var_hat = (n - 1) / n * w + b / n
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.sqrt(var_hat / w)
    return np.where(w > 0, out, math.nan)


@njit(cache=True)
def _geyer_rows(rho_all: np.ndarray) -> np.ndarray:
    """:func:`_geyer_sequence` of every row of ``rho_all``, in one compiled loop."""
    b, n = rho_all.shape
    out = np.empty((b, n + 1))
    for i in range(b):
        out[i] = _geyer_sequence(rho_all[i], n)
    return out


def _tau_rows(rho_all: np.ndarray, total: int) -> np.ndarray:
    """The integrated autocorrelation time of :func:`_ess_raw` of every row of ``rho_all``."""
    geyer = _geyer_rows(rho_all)
    n = rho_all.shape[1]
    max_t = geyer[:, n].astype(np.int64)
    rho = geyer[:, :n]
    tau = np.empty(rho.shape[0])
    # the rows that stop at the same lag sum the same slice, row by row: numpy's pairwise order
    # of the one-series function, so the ESS is the same to the last bit
    for t in np.unique(max_t):
        rows = max_t == t
        tau[rows] = (-1.0 + 2.0 * rho[rows, : t + 1].sum(axis=1)
                     + rho[rows, t + 1: t + 2].sum(axis=1))
    return np.maximum(tau, 1.0 / math.log10(total))


def _ess_raw_rows(x: np.ndarray) -> np.ndarray:
    """:func:`_ess_raw` of every series of ``x`` shaped (series, chains, draws)."""
    b, m, n = x.shape
    if n < 4:
        return np.full(b, math.nan)
    xc = x - x.mean(axis=2, keepdims=True)
    size = 1 << (2 * n - 1).bit_length()
    f = np.fft.rfft(xc, size, axis=2)
    conj = np.conjugate(f)
    if f[0].nbytes < _ELIDE_SAFE_BYTES:
        power = f * conj  # out of place, as the one-series function multiplies
    else:
        # a large one-series ``f * np.conjugate(f)`` is computed in place (numpy elides the
        # temporary), whose complex product may round differently: the same expression per
        # series keeps its numbers
        power = np.stack([f[i] * np.conjugate(f[i]) for i in range(b)])
    acov = np.fft.irfft(power, size, axis=2)[:, :, :n] / n
    chain_var = acov[:, :, 0] * n / (n - 1.0)
    mean_var = chain_var.mean(axis=1)
    var_plus = mean_var * (n - 1.0) / n
    if m > 1:
        var_plus += x.mean(axis=2).var(axis=1, ddof=1)
    ok = var_plus > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        rho_all = 1.0 - (mean_var[:, None] - acov.mean(axis=1)) / var_plus[:, None]
    rho_all[:, 0] = 1.0
    rho_all[~ok] = 0.0  # no ESS there; any finite sequence keeps the loop short
    tau = _tau_rows(rho_all, m * n)
    return np.where(ok, m * n / tau, math.nan)


def _split_rhat_ess_block(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_rhat_ess` of one block of series of the same shape."""
    b, _, n = x.shape
    rhat = np.full(b, math.nan)
    ess = np.full(b, math.nan)
    flat = x.reshape(b, -1)
    with np.errstate(invalid="ignore"):
        moves = np.isfinite(flat).all(axis=1) & (np.ptp(flat, axis=1) > 0)
    if n < 4 or not moves.any():
        return rhat, ess
    idx = np.flatnonzero(moves)
    x = x[idx]
    half = n // 2
    s = np.concatenate([x[:, :, :half], x[:, :, n - half:]], axis=1)
    z = _z_scale_rows(s)
    bulk = _rhat_basic_rows(z)
    folded = np.abs(s - np.median(s.reshape(len(idx), -1), axis=1)[:, None, None])
    tail = np.full(len(idx), math.nan)
    spread = np.ptp(folded.reshape(len(idx), -1), axis=1) > 0
    if spread.any():
        tail[spread] = _rhat_basic_rows(_z_scale_rows(folded[spread]))
    rhat[idx] = np.fmax(bulk, tail)  # np.nanmax of the pair
    if n >= 8:
        ess[idx] = _ess_raw_rows(z)
    return rhat, ess


def split_rhat_ess(series: Sequence[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`split_rhat` and :func:`effective_sample_size` of many series at once.

    The series are grouped by shape and every group is computed with vectorised numpy
    operations (the Geyer truncation in one compiled loop), so a fit's diagnostics cost a few
    array passes rather than a few dozen numpy calls per trace. The numbers are those of the
    one-series functions, bit for bit: the same operations and reductions along the same
    (contiguous) axes.

    Parameters
    ----------
    series : sequence of array_like
        Draws of one quantity each, shaped (chains, draws) or (draws,) (one chain).

    Returns
    -------
    rhat, ess : ndarray of shape (len(series),)
        The rank-normalised split R-hat and bulk ESS of each series (NaN where the one-series
        functions give NaN: too few draws, constant or not finite).
    """
    arrays = []
    for x in series:
        a = np.asarray(x, dtype=float)
        arrays.append(a[None, :] if a.ndim == 1 else a)
    rhat = np.full(len(arrays), math.nan)
    ess = np.full(len(arrays), math.nan)
    by_shape: dict[tuple[int, ...], list[int]] = {}
    for i, a in enumerate(arrays):
        if a.ndim != 2:
            raise ValueError(f"a series must be shaped (chains, draws), got shape {a.shape}")
        by_shape.setdefault(a.shape, []).append(i)
    for shape, members in by_shape.items():
        if shape[1] < 4:  # too short for either statistic
            continue
        per_block = max(1, _BATCH_VALUES // max(1, shape[0] * shape[1]))
        for lo in range(0, len(members), per_block):
            block = members[lo:lo + per_block]
            r, e = _split_rhat_ess_block(np.stack([arrays[i] for i in block]))
            rhat[block] = r
            ess[block] = e
    return rhat, ess


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
