"""The compiled L-BFGS with bounds (fastpath.estimate._lbfgs) against scipy's L-BFGS-B."""

from __future__ import annotations

import numpy as np
import pytest
from numba import njit
from scipy.optimize import minimize

from fastpath.estimate._lbfgs import lbfgs_minimizer

# one worker of pytest-xdist runs them all: each process compiles the minimisers below
pytestmark = pytest.mark.xdist_group("lbfgs")


@njit
def _rosenbrock(x, scale):
    f = 0.0
    g = np.zeros_like(x)
    for i in range(x.shape[0] - 1):
        a = x[i + 1] - x[i] * x[i]
        b = 1.0 - x[i]
        f += scale * (100.0 * a * a + b * b)
        g[i] += scale * (-400.0 * x[i] * a - 2.0 * b)
        g[i + 1] += scale * 200.0 * a
    return f, g


@njit
def _quadratic(x, centre, curvature):
    d = x - centre
    return 0.5 * np.sum(curvature * d * d), curvature * d


# the minimisers of the tests' objectives, compiled once per process (not cached: the objectives
# live here, where numba's cache of fastpath.estimate._lbfgs would not see them change)
_ROSENBROCK = lbfgs_minimizer(_rosenbrock, "test_rosenbrock", cache=False)
_QUADRATIC = lbfgs_minimizer(_quadratic, "test_quadratic", cache=False)


def _scipy(fun, x0, args, lower, upper):
    return minimize(lambda x: fun.py_func(x, *args), x0, jac=True, method="L-BFGS-B",
                    bounds=list(zip(lower, upper, strict=True)),
                    options={"gtol": 1e-12, "ftol": 0.0, "maxiter": 10_000})


@pytest.mark.parametrize("n", [2, 5, 10])
def test_unbounded_rosenbrock_reaches_its_minimum(n):
    inf = np.full(n, np.inf)
    x, f, n_iter = _ROSENBROCK(np.full(n, -1.2), (1.0,), -inf, inf, 5000,
                                  1e-10, 0.0, 10)
    np.testing.assert_allclose(x, np.ones(n), atol=1e-8)
    assert f < 1e-16 and 0 < n_iter < 5000


def test_bounds_hold_variables_where_the_gradient_pushes_out():
    # the minimum (1, ..., 1) lies outside the box: the answer is the box's best point,
    # as scipy's L-BFGS-B finds it
    n = 4
    lower, upper = np.full(n, -2.0), np.array([0.5, 2.0, 2.0, 0.7])
    x, f, _ = _ROSENBROCK(np.zeros(n), (1.0,), lower, upper, 5000, 1e-10, 0.0, 10)
    reference = _scipy(_rosenbrock, np.zeros(n), (1.0,), lower, upper)
    assert np.all(x >= lower) and np.all(x <= upper)
    np.testing.assert_allclose(x, reference.x, atol=1e-6)
    assert f == pytest.approx(reference.fun, abs=1e-10)


def test_a_start_outside_the_box_is_clipped_and_a_flat_direction_is_harmless():
    centre = np.array([3.0, -1.0, 0.0])
    curvature = np.array([2.0, 0.5, 0.0])  # the last variable does not move f
    lower, upper = np.full(3, -1.5), np.full(3, 2.0)
    x, f, _ = _QUADRATIC(np.array([10.0, 10.0, 1.0]), (centre, curvature),
                             lower, upper, 100, 1e-12, 0.0, 10)
    np.testing.assert_allclose(x[:2], [2.0, -1.0], atol=1e-10)
    assert x[2] == 1.0 and f == pytest.approx(0.5 * 2.0 * 1.0)


def test_a_non_convex_start_takes_long_steps():
    # a start on the concave side of a well: no (s, y) pair is stored there, and the line
    # search's doubling still reaches the minimum within a few iterations
    @njit
    def well(x, width):
        # f = -exp(-|x|^2 / width): concave away from the centre
        r2 = np.sum(x * x)
        e = np.exp(-r2 / width)
        return -e, 2.0 * x * e / width

    inf = np.full(2, np.inf)
    minimize = lbfgs_minimizer(well, "test_well", cache=False)
    x, f, n_iter = minimize(np.array([3.0, 4.0]), (30.0,), -inf, inf, 200, 1e-12, 0.0, 10)
    np.testing.assert_allclose(x, 0.0, atol=1e-5)
    assert f == pytest.approx(-1.0) and n_iter < 60


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
