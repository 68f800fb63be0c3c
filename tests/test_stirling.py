"""Tests for fastpath.stirling (log unsigned Stirling numbers of the first kind)."""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from fastpath.stirling import LogStirlingTable, log_stirling


def _bigint_rows(n_max: int) -> list[list[int]]:
    rows = [[1]]
    for m in range(n_max):
        prev = rows[-1]
        row = [0] * (m + 2)
        for t in range(1, m + 2):
            row[t] = (m * prev[t] if t <= m else 0) + prev[t - 1]
        rows.append(row)
    return rows


def test_exact_small():
    tab = LogStirlingTable(60)
    rows = _bigint_rows(60)
    for n, row in enumerate(rows):
        for t, s in enumerate(row):
            want = math.log(s) if s > 0 else -math.inf
            assert tab(n, t) == want or abs(tab(n, t) - want) < 1e-12


def test_special_values():
    tab = LogStirlingTable(100)
    assert tab(0, 0) == 0.0
    assert tab(5, 0) == -math.inf
    assert tab(5, 6) == -math.inf
    assert tab(7, 7) == 0.0
    assert abs(tab(10, 1) - math.lgamma(10)) < 1e-12
    assert abs(tab(10, 9) - math.log(45)) < 1e-12


@njit(cache=True)
def _sum_row(n, kernel_args):
    s = 0.0
    for t in range(1, n + 1):
        s += log_stirling(n, t, kernel_args)
    return s


def test_njit_callable():
    tab = LogStirlingTable(50)
    assert abs(_sum_row(50, tab.kernel_args) - np.sum(tab(50, np.arange(1, 51)))) < 1e-9
    assert math.isnan(log_stirling(51, 3, tab.kernel_args))
