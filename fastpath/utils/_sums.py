"""Sums in numpy's order, compiled: a number decided on in numba is numpy's, bit for bit.

numpy adds a contiguous float64 array (``np.sum``, and ``a.sum(axis=-1)`` row by row) with its
pairwise summation (``pairwise_sum`` of ``numpy/_core/src/umath/loops_utils.h.src``); a loop
that adds from the first value rounds differently. The kernels that replace numpy code (the
sampler's stopping rule, prediction's normalisation) use :func:`pairwise_sum`; tests compare it
with numpy on every length up to 300 and random ones beyond.
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def pairwise_sum(a):
    """numpy's sum of a contiguous float64 array, in numpy's order (``pairwise_sum`` of
    ``numpy/_core/src/umath/loops_utils.h.src``: blocks of 8 accumulators, halves above 128
    values, a plain loop from -0.0 below 8), so that a decision taken on it is numpy's.

    The halving is walked with an explicit stack: numba's cache cannot reload a recursive
    function (numba issue 6061: a segmentation fault)."""
    n = a.shape[0]
    if n <= 128:
        return _pairwise_block(a, np.int64(0), n)  # int64, not a literal: one compilation
    seg_lo = np.empty(64, dtype=np.int64)
    seg_n = np.empty(64, dtype=np.int64)
    left_done = np.zeros(64, dtype=np.bool_)
    left_sum = np.empty(64)
    top = 0
    seg_lo[0] = 0
    seg_n[0] = n
    total = 0.0
    while top >= 0:
        lo = seg_lo[top]
        m = seg_n[top]
        if m > 128:  # descend into the left half first
            half = m // 2
            half -= half % 8
            top += 1
            seg_lo[top] = lo
            seg_n[top] = half
            left_done[top] = False
            continue
        value = _pairwise_block(a, lo, m)
        top -= 1
        # hand the value up: a left half waits for its right half, a right half completes
        # its parent's sum (left + right, as the recursion adds them)
        while top >= 0:
            if not left_done[top]:
                left_sum[top] = value
                left_done[top] = True
                half = seg_n[top] // 2
                half -= half % 8
                lo_right = seg_lo[top] + half
                n_right = seg_n[top] - half
                top += 1
                seg_lo[top] = lo_right
                seg_n[top] = n_right
                left_done[top] = False
                break
            value = left_sum[top] + value
            top -= 1
        if top < 0:
            total = value
    return total


@njit(cache=True, nogil=True)
def _pairwise_block(a, lo, n):
    if n < 8:
        res = -0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0 = a[lo]
    r1 = a[lo + 1]
    r2 = a[lo + 2]
    r3 = a[lo + 3]
    r4 = a[lo + 4]
    r5 = a[lo + 5]
    r6 = a[lo + 6]
    r7 = a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res
