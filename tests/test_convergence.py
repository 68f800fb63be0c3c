"""MCSE of the mean (fastpath.estimate._convergence.mcse_mean), shared by hdpbn_ppl and validation.

* on AR(1) chains it is the spread of the chain mean over independent replications (the
  definition, with no library in between);
* it is ArviZ's ``mcse(method="mean")`` to rounding (an independent implementation);
* shapes and edges: any number of quantities in trailing axes, one chain as a 1-D array,
  0 for constant draws, NaN for non-finite or too few draws.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.estimate import mcse_mean


def _ar1(rng: np.random.Generator, shape: tuple[int, ...], rho: float) -> np.ndarray:
    """Stationary AR(1) draws with unit variance along axis 1 of ``shape``."""
    x = np.empty(shape)
    x[:, 0] = rng.standard_normal((shape[0], *shape[2:]))
    innovation = math.sqrt(1 - rho**2)
    for t in range(1, shape[1]):
        x[:, t] = rho * x[:, t - 1] + innovation * rng.standard_normal((shape[0], *shape[2:]))
    return x


def test_mcse_is_the_spread_of_the_mean_over_replications():
    rng = np.random.default_rng(0)
    rho, chains, draws, reps = 0.8, 4, 1000, 400
    x = _ar1(rng, (chains, draws, reps), rho)  # reps independent quantities
    spread = x.mean(axis=(0, 1)).std(ddof=1)
    # the asymptotic value: sd * sqrt((1 + rho) / (1 - rho) / N)
    assert spread == pytest.approx(math.sqrt((1 + rho) / (1 - rho) / (chains * draws)), rel=0.1)
    assert np.median(mcse_mean(x)) == pytest.approx(spread, rel=0.1)


def test_mcse_matches_arviz():
    az = pytest.importorskip("arviz")
    rng = np.random.default_rng(1)
    x = _ar1(rng, (4, 500, 2, 3), 0.5) * [[1.0, 3.0, 0.1]] + 7.0
    ours = mcse_mean(x)
    theirs = np.asarray(az.mcse(x, method="mean", chain_axis=0, draw_axis=1))
    assert ours.shape == (2, 3)
    np.testing.assert_allclose(ours, theirs, rtol=1e-9)


def test_mcse_shapes_and_edges():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((2, 200))
    assert mcse_mean(x).shape == ()
    assert float(mcse_mean(x)) == pytest.approx(float(mcse_mean(x.reshape(2, 200, 1))[0]))
    assert float(mcse_mean(x[0])) == pytest.approx(float(mcse_mean(x[:1])))  # one chain
    draws = np.stack([x, np.full_like(x, 0.3), x], axis=-1)
    draws[0, 5, 2] = np.nan
    out = mcse_mean(draws)
    assert out[0] > 0 and out[1] == 0.0 and np.isnan(out[2])
    assert np.isnan(mcse_mean(x[:, :7]))  # fewer than 8 draws per chain
    with pytest.raises(ValueError, match="chains, draws"):
        mcse_mean(np.float64(1.0))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 6), min_size=1, max_size=80), st.integers(1, 4))
def test_average_ranks_are_scipys(values, n_rows):
    from scipy.stats import rankdata

    from fastpath.estimate._convergence import average_ranks

    x = np.asarray(values[: len(values) - len(values) % n_rows] or values[:1], dtype=float)
    x = x.reshape(n_rows, -1) if x.size % n_rows == 0 and x.size >= n_rows else x
    np.testing.assert_array_equal(average_ranks(x), rankdata(x, method="average"))


def _series_of_many_shapes(rng: np.random.Generator) -> list[np.ndarray]:
    """Traces of 1 to 4 chains and 0 to 9000 draws: random walks, ties, constant traces (NaN),
    chains each constant at a different level, a non-finite draw, and one 1-D chain."""
    out: list[np.ndarray] = []
    for m in (1, 2, 3, 4):
        for n in (0, 1, 3, 4, 5, 7, 8, 9, 16, 33, 100, 257, 1000):
            out += [rng.standard_normal((m, n)).cumsum(axis=1) for _ in range(3)]
            out.append(_ar1(rng, (m, n), 0.9) if n else np.zeros((m, 0)))
            out.append(np.full((m, n), 2.5))
            out.append(rng.integers(0, 3, size=(m, n)).astype(float))
            if n:
                out.append(np.repeat(rng.standard_normal((m, 1)), n, axis=1))
                bad = rng.standard_normal((m, n))
                bad[0, -1] = np.inf
                out.append(bad)
    # long traces: one series' spectrum alone is large enough for numpy to multiply it in place
    out += [rng.standard_normal((2, 5000)).cumsum(axis=1), _ar1(rng, (1, 9000), 0.5)]
    out += [rng.standard_normal(50), np.array([0.0, 0, 1, 1]),
            np.array([[0.0, 0, 0, 0], [1, 1, 1, 1]])]
    return out


def test_split_rhat_ess_is_the_one_series_functions():
    """The batched statistics are :func:`split_rhat` and :func:`effective_sample_size` of each
    series (NaN where they are NaN), whatever the series' shapes and order."""
    import warnings

    from fastpath.estimate._convergence import (
        effective_sample_size,
        split_rhat,
        split_rhat_ess,
    )

    series = _series_of_many_shapes(np.random.default_rng(3))
    perm = np.random.default_rng(4).permutation(len(series))
    series = [series[i] for i in perm]  # shapes interleaved: grouping must scatter back
    rhat, ess = split_rhat_ess(series)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # nanmax of two NaN
        want_rhat = np.array([split_rhat(x) for x in series])
    want_ess = np.array([effective_sample_size(x) for x in series])
    assert np.isfinite(want_rhat).sum() > 100 and np.isfinite(want_ess).sum() > 80
    np.testing.assert_allclose(rhat, want_rhat, rtol=1e-12, atol=0)
    np.testing.assert_allclose(ess, want_ess, rtol=1e-12, atol=0)
    assert [a.shape for a in split_rhat_ess([])] == [(0,), (0,)]


def test_split_rhat_ess_in_blocks(monkeypatch):
    """A group larger than one vectorised pass is computed in blocks, with the same numbers."""
    from fastpath.estimate import _convergence

    rng = np.random.default_rng(5)
    series = [rng.standard_normal((2, 40)).cumsum(axis=1) for _ in range(25)]
    whole = _convergence.split_rhat_ess(series)
    monkeypatch.setattr(_convergence, "_BATCH_VALUES", 200)  # 2 series a block
    blocks = _convergence.split_rhat_ess(series)
    np.testing.assert_array_equal(whole[0], blocks[0])
    np.testing.assert_array_equal(whole[1], blocks[1])
    with pytest.raises(ValueError, match="chains, draws"):
        _convergence.split_rhat_ess([np.zeros((1, 2, 3))])
