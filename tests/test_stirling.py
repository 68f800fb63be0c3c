"""Tests for fastpath.estimate.hdp._stirling (log unsigned Stirling numbers of the first kind)."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from fastpath.estimate.hdp import (
    N_EXACT,
    T_EDGE,
    LogStirlingTable,
    log_stirling,
    log_stirling_large,
    log_stirling_reference,
)

N_BIG = 1000


@pytest.fixture(scope="module")
def bigint_logs() -> list[np.ndarray]:
    """log S(n, t) for n <= N_BIG and all t, from exact Python integers (about 0.6 s)."""
    row = [1]
    out = [np.array([0.0])]
    for m in range(N_BIG):
        # S(m + 1, t) = m S(m, t) + S(m, t - 1)
        row = [0, *(m * x + y for x, y in zip([*row[1:], 0], row, strict=True))]
        out.append(np.array([math.log(x) if x else -math.inf for x in row]))
    return out


@pytest.fixture(scope="module")
def table() -> LogStirlingTable:
    return LogStirlingTable(10**7)


def _ulp_tol(ref, abs_tol: float, n_ulp: float = 4.0):
    return abs_tol + n_ulp * np.spacing(np.abs(ref))


def test_exact_region_all_n_up_to_1000(bigint_logs, table):
    worst = 0.0
    for n in range(N_BIG + 1):
        got = table(n, np.arange(n + 1))
        ref = bigint_logs[n]
        assert np.array_equal(np.isneginf(got), np.isneginf(ref)), n
        fin = np.isfinite(ref)
        worst = max(worst, float(np.max(np.abs(got[fin] - ref[fin]))))
    # measured 1.4e-11 (the log-space recurrence; log S <= 5906 here, one ulp is 9.1e-13)
    assert worst < 5e-11


@pytest.mark.parametrize("n", [64, 300, 1000])
def test_large_n_formulas_against_exact_integers(bigint_logs, n):
    """The formulas used above N_EXACT, checked where exact values are known, over all t."""
    t = np.arange(1, n + 1)
    got = log_stirling_large(np.full(n, n), t)
    err = np.abs(got - bigint_logs[n][1:])
    assert err.max() < 1e-10, (int(t[np.argmax(err)]), float(err.max()))


def test_special_values(table):
    assert table(0, 0) == 0.0
    assert table(0, 1) == -math.inf
    for n in (1, 5, 2048, 2049, 10**5, 10**7):
        assert table(n, 0) == -math.inf
        assert table(n, n + 1) == -math.inf
        assert table(n, -1) == -math.inf
        assert table(n, n) == 0.0
        assert table(n, 1) == pytest.approx(math.lgamma(n), rel=1e-15, abs=1e-13)
        if n >= 2:
            assert table(n, n - 1) == pytest.approx(math.log(n * (n - 1) / 2), rel=1e-14)
        if n >= 3:
            # S(n, 2) = (n-1)! H_{n-1};  S(n, n-2) = (3n - 1) C(n, 3) / 4
            h = math.fsum(1.0 / k for k in range(1, n))
            assert table(n, 2) == pytest.approx(math.lgamma(n) + math.log(h), rel=1e-15, abs=1e-12)
            want = math.log((3 * n - 1) / 4) + math.log(math.comb(n, 3))
            assert table(n, n - 2) == pytest.approx(want, rel=1e-14)


# (n, t) points in the table-free region, including both strip boundaries and the modes
# a log(n) for a in {0.1, 1, 10, 100}.
_MP_POINTS = [
    (2049, 2), (2049, 40), (2049, 1000), (2049, 2000),
    (10**4, T_EDGE + 1), (10**4, T_EDGE + 2), (10**4, 92), (10**4, 921),
    (10**4, 10**4 - T_EDGE), (10**4, 10**4 - T_EDGE - 1),
    (10**5, 115), (10**5, 5 * 10**4), (10**5, 10**5 - 100),
    (10**6, 2), (10**6, 14), (10**6, 1382),
    (10**7, 17), (10**7, T_EDGE + 2), (10**7, 161), (10**7, 1612), (10**7, 5 * 10**6),
    (10**7, 10**7 - T_EDGE - 1), (10**7, 10**7 - 3),
]


# mpmath at large n (about 16 s): outside make test
# (10 minutes on 2 cores); make study runs it
@pytest.mark.study
def test_large_n_against_mpmath(table):
    for n, t in _MP_POINTS:
        ref = log_stirling_reference(n, t, dps=45)
        got = table(n, t)
        # relative: one or two ulp of log S (1.5e8 at n = 1e7); absolute: the expansion's error
        assert abs(got - ref) <= 3e-10 + 4 * np.spacing(abs(ref)), (n, t, got - ref)


def _log_rising(a: float, n: int) -> float:
    """log Gamma(a + n) / Gamma(a) = sum_k log(a + k), without cancellation for large a."""
    k = np.arange(n, dtype=np.float64)
    if a >= 1.0:
        return n * math.log(a) + math.fsum(np.log1p(k / a))
    return math.fsum(np.log(a + k))


@pytest.mark.parametrize("n", [N_EXACT + 1, 30_000, 300_000])
def test_generating_function_identity(table, n):
    """sum_t a^t S(n, t) = Gamma(a + n) / Gamma(a): the bulk of the sum moves across all of
    1..n as a goes from 1e-3 to 1e12."""
    t = np.arange(1, n + 1)
    logs = table(n, t)
    for a in (1e-3, 0.1, 1.0, 10.0, 100.0, 1e4, 1e6, 1e9, 1e12):
        x = logs + t * math.log(a)
        mx = x.max()
        lhs = mx + math.log(math.fsum(np.exp(x - mx)))
        rhs = _log_rising(a, n)
        assert abs(lhs - rhs) <= 1e-9 + 1e-15 * abs(rhs), (a, lhs - rhs)


@pytest.fixture(scope="module")
def bigint_edges() -> dict[int, tuple[np.ndarray, np.ndarray]]:
    """Exact log S(n, t) for t <= W and log S(n, n - m) for m <= W at a few n up to 5000, from
    the recurrence restricted to the strips (about 0.5 s)."""
    W = T_EDGE + 12
    wanted = {N_EXACT + 1, 3000, 5000}
    low = [1] + [0] * W  # S(n, t), t = 0..W, starting at n = 0
    high = [1] + [0] * W  # D(n, m) = S(n, n - m), m = 0..W, starting at n = 0
    out = {}
    for n in range(max(wanted)):
        # S(n + 1, t) = n S(n, t) + S(n, t - 1);  D(n + 1, m) = n D(n, m - 1) + D(n, m)
        low = [0] + [n * low[t] + low[t - 1] for t in range(1, W + 1)]
        high = [1] + [n * high[m - 1] + high[m] for m in range(1, W + 1)]
        if n + 1 in wanted:
            out[n + 1] = (np.array([math.log(x) if x else -math.inf for x in low]),
                          np.array([math.log(x) if x else -math.inf for x in high]))
    return out


def test_differences_across_formula_boundaries(table, bigint_edges):
    """The sampler uses differences in t: check them where the evaluation switches formula."""
    for n, (low, high) in bigint_edges.items():
        t = np.arange(1, low.size)
        got = table(n, t)
        assert np.max(np.abs(np.diff(got) - np.diff(low[1:]))) < 5e-11
        assert np.max(np.abs(got - low[1:])) < 5e-11
        m = np.arange(high.size)
        got = table(n, n - m)
        assert np.max(np.abs(np.diff(got) - np.diff(high))) < 5e-11
        assert np.max(np.abs(got - high)) < 5e-11


@pytest.mark.parametrize("n", [N_EXACT + 1, 5000, 10**5, 10**6])
def test_log_concave_in_t(table, n):
    """S(n, .) is log-concave (its generating polynomial has real roots), over all of 1..n."""
    v = table(n, np.arange(1, n + 1))
    assert np.all(np.diff(v, 2) < 0)


def test_growth_keeps_values():
    small = LogStirlingTable(50)
    before = small(np.arange(51)[:, None], np.arange(51)[None, :]).copy()
    args_before = small.kernel_args
    small.ensure(700)
    small.ensure(300)  # no-op
    assert small.n_max == 700
    after = small(np.arange(51)[:, None], np.arange(51)[None, :])
    assert np.array_equal(before, after)
    # old kernel_args stay valid for the old range
    assert log_stirling(40, 7, args_before) == small(40, 7)
    fresh = LogStirlingTable(700)
    n = np.arange(701)
    assert np.array_equal(small(n, n // 3), fresh(n, n // 3))
    small.ensure(10**6)
    assert small(n, n // 3)[-1] == fresh(n, n // 3)[-1]


def test_memory_and_build_time_at_ten_million():
    LogStirlingTable(10)  # compile (or load) the kernels outside the timing
    t0 = time.perf_counter()
    tab = LogStirlingTable()
    tab.ensure(10**7)
    build = time.perf_counter() - t0
    assert tab.n_max == 10**7
    assert tab.nbytes < 64 * 2**20
    assert tab.nbytes == sum(a.nbytes for a in tab.kernel_args)
    assert build < 3.0  # about 0.05 s: only the N_EXACT rows are built
    assert np.isfinite(tab(10**7, 12345))


@njit(cache=True)
def _row_sum(n, kernel_args):
    s = 0.0
    for t in range(1, n + 1):
        s += log_stirling(n, t, kernel_args)
    return s


@njit(cache=True)
def _ratio(n, t, kernel_args):
    # a typical sampler quantity: S(n + 1, t + 1) / S(n, t)
    return math.exp(log_stirling(n + 1, t + 1, kernel_args) - log_stirling(n, t, kernel_args))


def test_njit_callable_from_other_kernels(table):
    args = table.kernel_args
    for n in (50, 2500):
        want = math.fsum(table(n, np.arange(1, n + 1)))
        assert _row_sum(n, args) == pytest.approx(want, rel=1e-13)
    # S(n+1, t+1) = n S(n, t+1) + S(n, t)
    n, t = 5000, 40
    want = math.exp(math.log(n) + table(n, t + 1) - table(n, t)) + 1.0
    assert _ratio(n, t, args) == pytest.approx(want, rel=1e-9)
    small = LogStirlingTable(100)
    assert math.isnan(log_stirling(101, 3, small.kernel_args))
    assert math.isnan(log_stirling(-1, 0, small.kernel_args))


def test_vectorised_call_shapes(table):
    n = np.array([[5, 6], [3000, 10**6]])
    t = np.array([[2, 3], [40, 999]])
    out = table(n, t)
    assert out.shape == (2, 2)
    for i in range(2):
        for j in range(2):
            assert out[i, j] == table(int(n[i, j]), int(t[i, j]))
    assert isinstance(table(10, 3), float)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_recurrence_between_neighbours(data):
    """log S(n + 1, t) = logaddexp(log n + log S(n, t), log S(n, t - 1)) across all regions."""
    tab = _SHARED
    n = data.draw(st.one_of(st.integers(1, 3 * N_EXACT), st.integers(1, 10**7 - 1)))
    t = data.draw(st.one_of(st.integers(1, min(n, 2 * T_EDGE + 4)),
                            st.integers(max(1, n - 2 * T_EDGE - 4), n),
                            st.integers(1, n)))
    lhs = tab(n + 1, t)
    rhs = np.logaddexp(math.log(n) + tab(n, t), tab(n, t - 1))
    assert abs(lhs - rhs) <= _ulp_tol(lhs, 1e-9, 8.0), (n, t, lhs - rhs)


_SHARED = LogStirlingTable(10**7)
