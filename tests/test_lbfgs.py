"""The compiled L-BFGS with bounds (fastpath.estimate._lbfgs) against scipy's L-BFGS-B."""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
from numba import njit
from scipy import optimize

from fastpath.estimate._lbfgs import lbfgs_minimizer

# one worker of pytest-xdist runs them all: each process compiles the minimiser below
pytestmark = pytest.mark.xdist_group("lbfgs")


ROSENBROCK, QUADRATIC, WELL = 0, 1, 2


@njit
def _objective(x, kind, a, b):
    """The tests' objectives in one function, so that the minimiser is compiled once (about
    8 s a compilation): ``ROSENBROCK`` scaled by ``a[0]``; ``QUADRATIC`` centred at ``a`` with
    curvatures ``b``; ``WELL``, ``-exp(-|x|^2 / a[0])``, concave away from its centre."""
    f = 0.0
    g = np.zeros_like(x)
    if kind == ROSENBROCK:
        scale = a[0]
        for i in range(x.shape[0] - 1):
            u = x[i + 1] - x[i] * x[i]
            v = 1.0 - x[i]
            f += scale * (100.0 * u * u + v * v)
            g[i] += scale * (-400.0 * x[i] * u - 2.0 * v)
            g[i + 1] += scale * 200.0 * u
    elif kind == QUADRATIC:
        d = x - a
        f = 0.5 * np.sum(b * d * d)
        g = b * d
    else:
        e = np.exp(-np.sum(x * x) / a[0])
        f = -e
        g = 2.0 * x * e / a[0]
    return f, g


def _rosenbrock(scale=1.0):
    return (ROSENBROCK, np.array([scale]), np.zeros(0))


@pytest.fixture(scope="module")
def minimize():
    """The minimiser of the tests' objective, compiled once per process by this set-up (not
    cached: the objective lives here, where numba's cache of fastpath.estimate._lbfgs would not
    see it change), so that make test-fast sees a long set-up (tests/_fast_subset.py)."""
    compiled = lbfgs_minimizer(_objective, "test_objective", cache=False)
    inf = np.full(2, np.inf)
    compiled(np.zeros(2), _rosenbrock(), -inf, inf, 1, 1e-10, 0.0, 10)
    return compiled


def _scipy(fun, x0, args, lower, upper):
    return optimize.minimize(lambda x: fun.py_func(x, *args), x0, jac=True, method="L-BFGS-B",
                             bounds=list(zip(lower, upper, strict=True)),
                             options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000})


@pytest.mark.parametrize("n", [2, 5, 10])
def test_unbounded_rosenbrock_reaches_its_minimum(minimize, n):
    inf = np.full(n, np.inf)
    x, f, n_iter = minimize(np.full(n, -1.2), _rosenbrock(), -inf, inf, 5000, 1e-10, 0.0, 10)
    np.testing.assert_allclose(x, np.ones(n), atol=1e-8)
    assert f < 1e-16 and 0 < n_iter < 5000


def test_bounds_hold_variables_where_the_gradient_pushes_out(minimize):
    # the minimum (1, ..., 1) lies outside the box: the answer is the box's best point,
    # as scipy's L-BFGS-B finds it
    n = 4
    lower, upper = np.full(n, -2.0), np.array([0.5, 2.0, 2.0, 0.7])
    x, f, _ = minimize(np.zeros(n), _rosenbrock(), lower, upper, 5000, 1e-10, 0.0, 10)
    reference = _scipy(_objective, np.zeros(n), _rosenbrock(), lower, upper)
    assert np.all(x >= lower) and np.all(x <= upper)
    np.testing.assert_allclose(x, reference.x, atol=1e-6)
    assert f == pytest.approx(reference.fun, abs=1e-10)


def test_a_start_outside_the_box_is_clipped_and_a_flat_direction_is_harmless(minimize):
    centre = np.array([3.0, -1.0, 0.0])
    curvature = np.array([2.0, 0.5, 0.0])  # the last variable does not move f
    lower, upper = np.full(3, -1.5), np.full(3, 2.0)
    x, f, _ = minimize(np.array([10.0, 10.0, 1.0]), (QUADRATIC, centre, curvature),
                        lower, upper, 100, 1e-12, 0.0, 10)
    np.testing.assert_allclose(x[:2], [2.0, -1.0], atol=1e-10)
    assert x[2] == 1.0 and f == pytest.approx(0.5 * 2.0 * 1.0)


def test_a_non_convex_start_takes_long_steps(minimize):
    # a start on the concave side of a well: no (s, y) pair is stored there, and the line
    # search's doubling still reaches the minimum within a few iterations
    inf = np.full(2, np.inf)
    x, f, n_iter = minimize(np.array([3.0, 4.0]), (WELL, np.array([30.0]), np.zeros(0)),
                             -inf, inf, 200, 1e-12, 0.0, 10)
    np.testing.assert_allclose(x, 0.0, atol=1e-5)
    assert f == pytest.approx(-1.0) and n_iter < 60


def test_a_copy_is_named_by_its_objective_and_the_digest_of_both_files():
    """numba's cache tells copies apart by name: the same objective gets the same name (one
    cache entry), an edit of either file or another objective another one."""
    from fastpath.estimate import _hls, _lbfgs

    copy = lbfgs_minimizer(_objective, "test_objective", cache=False).py_func
    digest = hashlib.sha256(Path(_lbfgs.__file__).read_bytes() + Path(__file__).read_bytes())
    assert copy.__qualname__ == f"_minimize_test_objective_{digest.hexdigest()[:12]}"
    assert copy.__module__ == "fastpath.estimate._lbfgs"
    assert lbfgs_minimizer(_objective, "test_objective", cache=False).py_func.__qualname__ == (
        copy.__qualname__)
    other = lbfgs_minimizer(_hls._objective, "test_objective", cache=False).py_func
    assert other.__qualname__ != copy.__qualname__


@pytest.mark.parametrize("estimation", ["hls", "hgs"])
def test_the_estimators_minimisers_are_cached_for_every_process(estimation):
    """The library's minimisers take data only (a function argument would key numba's cache by
    this process's dispatcher: a compilation in every process, an index growing by an entry
    each time), and their compilation is on disk."""
    from numba.core import types

    from fastpath import BayesNetClassifier, load_dataset
    from fastpath.estimate import _hgs, _hls

    X, y = load_dataset("car")
    BayesNetClassifier("kdb", k=1, estimation=estimation).fit(X.iloc[::8], y[::8])
    minimize = {"hls": _hls, "hgs": _hgs}[estimation]._minimize
    assert minimize.signatures
    for sig in minimize.signatures:
        assert not any(isinstance(t, (types.Dispatcher, types.FunctionType)) for t in sig)
        assert minimize._cache.load_overload(sig, minimize.targetctx) is not None
