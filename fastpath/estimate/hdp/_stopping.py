"""When a tree's chains have sampled enough: the rule behind ``HDPOptions(n_iter="auto")``.

At every block boundary (``min_iter``, then every ``check_every`` iterations) the chains of one
tree stop together when

1. the Monte-Carlo standard error -- batch means of
   :data:`~fastpath.estimate.hdp._options.AUTO_BATCH` iterations, pooled over the chains -- is
   at most ``mcse_tolerance``: with ``mcse_weighting="rows"`` (the default) its root mean
   square over the training rows, each row weighing the probability it reads at its leaf
   (``sqrt(sum_{leaf,k} n_leaf,k MCSE_leaf,k^2 / N)``); with ``"max"`` every probability of
   every node;
   with two or more chains, the rows' MCSE is also at least the between-chain standard error
   of what the rows read (:func:`rows_mcse`), so chains that disagree by more than the
   tolerance keep running; and
2. with ``convergence_checks=True`` only (the ``"strict"`` preset), the post-burn-in traces of
   the concentrations and of the log joint pass the checks the fit's diagnostics apply
   (:mod:`fastpath.estimate._diagnostics`): split R-hat <= 1.01 and bulk ESS >= 100 per chain,
   and with two or more chains the split R-hat of the rows' probability trace
   (:attr:`~fastpath.estimate.hdp._results.HDPTrace.rows_probability`) is at most 1.01 too.
   A trace that never moves (NaN statistics) needs no check.

Both read only the tree's own chains at the boundary, never the clock or the other trees, so
the iterations a tree runs are a function of the seed alone. When the rule is unmet,
:func:`next_length` predicts the length that would meet it (an MCSE falls as 1/sqrt(n), an ESS
grows as n) and the chains run there in one go, instead of being checked every block: the
R-hat and ESS of a check cost about as much as a few hundred iterations of a small tree.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from .._convergence import ESS_PER_CHAIN_MIN, RHAT_MAX, effective_sample_size, split_rhat

#: why a tree's chains stopped: ``"n_iter"`` (a fixed length), ``"tolerance"`` (the rule was
#: met), ``"max_iter"`` (adaptive, the rule still unmet at ``max_iter``)
STOP_REASONS: tuple[str, ...] = ("n_iter", "tolerance", "max_iter")


class StopCheck(NamedTuple):
    """The stopping rule evaluated on one tree at one block boundary.

    Attributes
    ----------
    stop : bool
        Every condition holds.
    max_mcse : float
        Largest batch-means MCSE over the tree's probabilities (inf with fewer than two
        batches per chain).
    max_rhat : float
        Largest split R-hat over the concentrations and the log joint (NaN: no trace moves).
    min_ess : float
        Smallest bulk ESS over the same traces (NaN: no trace moves).
    unmet : str
        What is still out of bounds ("" when ``stop``).
    rows_rhat : float
        Split R-hat of the rows' probability trace (NaN with one chain or a trace that never
        moves).
    """

    stop: bool
    max_mcse: float
    max_rhat: float
    min_ess: float
    unmet: str
    rows_rhat: float = math.nan


def batch_means_mcse(s1: np.ndarray, s2: np.ndarray, n_batches: int) -> np.ndarray:
    """Batch-means MCSE of a mean from the sums of ``n_batches`` batch means and of their squares.

    ``var = (s2 - s1^2 / m) / (m - 1)`` is the variance of the batch means, and the MCSE of the
    grand mean is ``sqrt(var / m)``; with fewer than two batches it is infinite.
    """
    s1 = np.asarray(s1, dtype=float)
    s2 = np.asarray(s2, dtype=float)
    m = int(n_batches)
    if m < 2:
        return np.full(s1.shape, np.inf)
    var = np.maximum(s2 - s1 * s1 / m, 0.0) / (m - 1)
    return np.sqrt(var / m)


def rows_mcse(tree, mcse: np.ndarray, chain_probabilities: np.ndarray | None = None) -> float:
    """Monte-Carlo standard error of what the training rows read, in one number.

    The root mean square over the training rows of the MCSE of the probability each row reads
    at its leaf, ``sqrt(sum_{leaf, k} n_leaf,k MCSE_leaf,k^2 / N)``, from the batch-means
    ``mcse`` of shape (n_nodes, K) (NaN where it is not estimated). With two or more chains
    (``chain_probabilities`` of shape (n_chains, n_nodes, K)) it is the larger of that and the
    same root mean square of the between-chain standard error ``sd_c(p_c) / sqrt(C)``: chains
    that settled on different values (a mode one chain never left, which batch means within a
    chain cannot see) count at their face value. ``tree`` is the
    :class:`~fastpath.counts.ContextTree` the MCSEs belong to: its deepest level's counts weigh
    them.
    """
    leaf_start = int(tree.level_offsets[-2])
    leaf_counts = tree.counts[leaf_start:]
    weights = leaf_counts / max(int(leaf_counts.sum()), 1)
    with np.errstate(invalid="ignore"):
        within = float(np.sqrt(np.sum(weights * np.asarray(mcse)[leaf_start:] ** 2)))
        if chain_probabilities is None or len(chain_probabilities) < 2:
            return within
        p = np.asarray(chain_probabilities, dtype=float)[:, leaf_start:]
        se2 = p.var(axis=0, ddof=1) / p.shape[0]
        between = float(np.sqrt(np.sum(weights * se2)))
    return max(within, between) if math.isfinite(within) else within


def _finite(values: list[float], worst) -> float:
    a = np.asarray(values, dtype=float)
    a = a[np.isfinite(a)]
    return float(worst(a)) if a.size else math.nan


def check_stop(
    mcse: np.ndarray,
    concentrations: np.ndarray,
    log_joint: np.ndarray,
    *,
    tolerance: float,
    rows_probability: np.ndarray | None = None,
    rhat_max: float = RHAT_MAX,
    ess_min_per_chain: float = ESS_PER_CHAIN_MIN,
) -> StopCheck:
    """Evaluate the stopping rule on one tree.

    Parameters
    ----------
    mcse : ndarray
        The MCSEs that must be within ``tolerance`` (any shape; the rows' root mean square is
        one value).
    concentrations : ndarray of shape (n_chains, n_draws, n_groups)
        Post-burn-in trace of the sampled concentrations (``n_groups = 0`` when fixed).
    log_joint : ndarray of shape (n_chains, n_draws)
        Post-burn-in trace of the log joint.
    tolerance : float
        Largest MCSE allowed.
    rows_probability : ndarray of shape (n_chains, n_kept), optional
        The rows' probability trace; with two or more chains its split R-hat must be
        <= ``rhat_max``.
    rhat_max, ess_min_per_chain : float
        The diagnostics' thresholds (R-hat <= 1.01, bulk ESS >= 100 per chain).
    """
    conc = np.asarray(concentrations, dtype=float)
    lj = np.asarray(log_joint, dtype=float)
    if conc.ndim != 3 or lj.ndim != 2 or conc.shape[:2] != lj.shape:
        raise ValueError("concentrations must be (chains, draws, groups) and log_joint "
                         f"(chains, draws), got {conc.shape} and {lj.shape}")
    mcse = np.asarray(mcse, dtype=float)
    max_mcse = float(mcse.max()) if mcse.size else 0.0
    if lj.shape[1] == 0:  # no trace to judge (R-hat and ESS of no draws are NaN)
        max_rhat = min_ess = math.nan
    else:
        series = [conc[:, :, g] for g in range(conc.shape[2])] + [lj]
        max_rhat = _finite([split_rhat(x) for x in series], np.max)
        min_ess = _finite([effective_sample_size(x) for x in series], np.min)
    ess_min = ess_min_per_chain * lj.shape[0]
    rows_rhat = math.nan
    if rows_probability is not None:
        rows = np.asarray(rows_probability, dtype=float)
        if rows.ndim != 2:
            raise ValueError(f"rows_probability must be (chains, draws), got {rows.shape}")
        if rows.shape[0] >= 2 and rows.shape[1] >= 4:
            rows_rhat = split_rhat(rows)
    unmet = []
    if not max_mcse <= tolerance:
        unmet.append(f"MCSE {max_mcse:.4f} > {tolerance}")
    if math.isfinite(rows_rhat) and rows_rhat > rhat_max:
        unmet.append(f"rows' probability R-hat {rows_rhat:.3f} > {rhat_max}")
    if math.isfinite(max_rhat) and max_rhat > rhat_max:
        unmet.append(f"R-hat {max_rhat:.3f} > {rhat_max}")
    if math.isfinite(min_ess) and min_ess < ess_min:
        unmet.append(f"ESS {min_ess:.0f} < {ess_min:.0f}")
    return StopCheck(not unmet, max_mcse, max_rhat, min_ess, "; ".join(unmet), rows_rhat)


def next_length(
    check: StopCheck,
    n_run: int,
    burn_in: int,
    *,
    tolerance: float,
    ess_min: float,
    step: int,
    max_iter: int,
    rhat_max: float = RHAT_MAX,
) -> int:
    """Iterations per chain at the next check of a tree whose rule ``check`` is unmet.

    The kept iterations are scaled by what each unmet condition needs -- ``(MCSE /
    tolerance)^2`` and ``ess_min / ESS``, with 10 % to spare; an unmet R-hat alone (of the
    concentrations, the log joint or the rows' probabilities), or an MCSE not yet estimable,
    doubles them -- then rounded up to a multiple of ``step`` past ``n_run`` (at least one
    ``step``) and capped at ``max_iter``.
    """
    kept = max(n_run - burn_in, 1)
    ratio = 2.0 if not math.isfinite(check.max_mcse) else 1.0
    if math.isfinite(check.max_mcse) and check.max_mcse > tolerance:
        ratio = max(ratio, (check.max_mcse / tolerance) ** 2)
    if math.isfinite(check.min_ess) and check.min_ess < ess_min:
        ratio = max(ratio, ess_min / max(check.min_ess, 1.0))
    if any(math.isfinite(r) and r > rhat_max for r in (check.max_rhat, check.rows_rhat)):
        ratio = max(ratio, 2.0)
    extra = burn_in + math.ceil(kept * ratio * 1.1) - n_run
    blocks = max(1, math.ceil(extra / step))
    return int(min(max_iter, n_run + blocks * step))
