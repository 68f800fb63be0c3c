"""The teaching sampler (hdpbn_ppl/teaching.py) samples the paper's model.

Checked against (1) exact values: Stirling numbers and the Chinese restaurant distribution of
eqs. (7)-(8); (2) the exact posterior of the worked example (enumeration over table counts and
quadrature over alpha, hdpbn_ppl.worked_example.table_posterior), with a power check that the
test tells the exact root from the reference code's shortcut; (3) fastpath's collapsed Gibbs
sampler on small trees, node by node. Seeds are fixed, so every run is deterministic; the
tolerances are a few Monte-Carlo standard errors (batch means) and each test also bounds the
MCSE so that it cannot pass by being noisy.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import digamma, gammaln

from hdpbn_ppl import teaching
from hdpbn_ppl.worked_example import table_posterior, worked_example_tree


def _mcse(x: np.ndarray, n_batches: int = 20) -> np.ndarray:
    """Batch-means MCSE of the mean of x (iterations on axis 0)."""
    b = x.shape[0] // n_batches
    means = x[: b * n_batches].reshape((n_batches, b, *x.shape[1:])).mean(axis=1)
    return means.std(axis=0, ddof=1) / math.sqrt(n_batches)


def test_stirling_table_exact_values_and_eq7():
    log_s = teaching.log_stirling_table(12)
    s4 = np.exp(log_s[4, :5])
    np.testing.assert_allclose(s4, [0, 6, 11, 6, 1], rtol=1e-12)
    assert np.exp(log_s[10, 1]) == pytest.approx(math.factorial(9), rel=1e-12)
    # eq. (7): Gamma(a + n) / Gamma(a) = sum_t a^t S(n, t)
    for a in (0.3, 2.0, 17.5):
        for n in (1, 5, 12):
            lhs = gammaln(a + n) - gammaln(a)
            rhs = np.logaddexp.reduce(np.arange(n + 1) * np.log(a) + log_s[n, : n + 1])
            assert rhs == pytest.approx(lhs, rel=1e-12)


def test_crd_is_a_distribution_with_the_crp_mean():
    log_s = teaching.log_stirling_table(50)
    for a in (0.5, 2.0, 30.0):
        p = teaching.crd_probabilities(50, a, log_s)
        assert p.sum() == pytest.approx(1.0, abs=1e-12)
        assert p[0] == 0.0
        # E[t] = a (psi(a + n) - psi(a)): the number of tables of a CRP, the origin of eq. (15)
        assert (np.arange(51) * p).sum() == pytest.approx(a * (digamma(a + 50) - digamma(a)),
                                                          rel=1e-10)


def test_invariants_after_sweeps():
    tree = worked_example_tree("DS1")
    run = teaching.gibbs(tree, 200, seed=3)
    leaves = tree.counts[tree.leaves]
    t = run.table_counts
    assert np.all(t[:, 0] == 0)  # exact root: no tables at the root
    assert np.all((t[:, 1:] >= 1) == (leaves[None] >= 1))
    assert np.all(t[:, 1:] <= leaves[None])
    np.testing.assert_allclose(run.estimates.sum(axis=2), 1.0, atol=1e-12)


@pytest.mark.parametrize("name", ["DS1", "DS2"])
def test_worked_example_matches_exact_posterior(name):
    tree = worked_example_tree(name)
    run = teaching.gibbs(tree, 6000, burn_in=500, seed=2018)
    kept = run.estimates[run.burn_in:, 1:, 0]  # P(X1 = 0 | Y = y), y = 0, 1
    exact = table_posterior(tree.counts[tree.leaves])
    err = _mcse(kept)
    assert np.all(err < 0.004)
    np.testing.assert_array_less(np.abs(kept.mean(axis=0) - exact.theta[:, 0]), 4 * err + 1e-4)
    a = run.alpha[run.burn_in:, 0]
    assert abs(a.mean() - exact.alpha) < 4 * _mcse(a) + 1e-3
    # power: the same run is far from the reference code's root shortcut (0.8756 / 0.8359)
    ref = table_posterior(tree.counts[tree.leaves], root="reference").theta[0, 0]
    assert abs(kept[:, 0].mean() - ref) > 4 * err[0]


def _small_tree():
    from fastpath.counts import ContextTree

    rng = np.random.default_rng(7)
    paths = np.array([[y, x] for y in range(2) for x in range(3)])
    counts = np.array([rng.multinomial(n, [0.6, 0.3, 0.1]) for n in (3, 12, 0, 25, 1, 6)])
    keep = counts.sum(axis=1) > 0
    return ContextTree.from_leaf_counts(paths[keep], counts[keep], [2, 3])


def test_agrees_with_fastpath_on_a_small_tree(tying="level"):
    from fastpath.estimate.hdp import HDPOptions, estimate_tree

    tree = _small_tree()
    run = teaching.gibbs(tree, 3000, burn_in=300, tying=tying, seed=11)
    kept = run.estimates[run.burn_in:]
    fast = estimate_tree(tree, HDPOptions(n_iter=20000, burn_in=1000, n_chains=4, tying=tying,
                                          root="exact", update="exact",
                                          concentration_every=1), seed=11)
    err = np.sqrt(_mcse(kept) ** 2 + fast.mcse**2)
    assert err.max() < 0.01
    z = (kept.mean(axis=0) - fast.probabilities) / np.maximum(err, 1e-12)
    assert np.abs(z).max() < 5


def test_concentration_profile_reproduces_the_exact_posterior():
    """L(alpha) on a grid, times the Gamma(2, 1) prior, integrates to table_posterior's means."""
    from hdpbn_ppl.worked_example import DATASETS, concentration_profile

    counts = DATASETS["DS2"]
    s = np.linspace(-12.0, np.log(4000.0), 3000)
    a = np.exp(s)
    log_lik, theta = concentration_profile(counts, a)
    lp = log_lik + np.log(a) - a + s  # Gamma(2, 1) prior, density of log alpha
    w = np.exp(lp - lp.max())
    est = np.trapezoid(w[:, None, None] * theta, s, axis=0) / np.trapezoid(w, s)
    np.testing.assert_allclose(est, table_posterior(counts).theta, atol=1e-6)


def test_window_restricts_each_move_and_a_wide_one_changes_nothing():
    """``window=w`` (the paper's Algorithm 3, w = 10) moves each table count by at most w per
    sweep; a window wider than every range is the full-range Gibbs draw, the same chain."""
    tree = _small_tree()
    full = teaching.gibbs(tree, 150, seed=4)
    wide = teaching.gibbs(tree, 150, seed=4, window=1000)
    np.testing.assert_array_equal(wide.table_counts, full.table_counts)
    narrow = teaching.gibbs(tree, 150, seed=4, window=1)
    steps = np.abs(np.diff(narrow.table_counts, axis=0))
    assert steps.max() == 1  # moves, by one at most
    assert np.abs(np.diff(full.table_counts, axis=0)).max() > 1  # the full range jumps further
    with pytest.raises(ValueError, match="window"):
        teaching.gibbs(tree, 10, window=0)
