"""Supervised MDL discretisation (Fayyad & Irani, 1993), as Weka's default ``Discretize``.

Fayyad, U. M. & Irani, K. B. (1993). Multi-interval discretization of continuous-valued
attributes for classification learning. IJCAI-93, 1022-1027.

This reproduces ``weka.filters.supervised.attribute.Discretize`` with its default options
(Fayyad & Irani's criterion, not Kononenko's; ``useBetterEncoding = false``), i.e. Weka's
``cutPointsForSubset``:

1. Rows with a missing (NaN) value are dropped; the rest are sorted by value.
2. For a subset ``S`` of ``N >= 2`` sorted rows, every position where the value changes
   (``x[i] < x[i+1]``) is a candidate; its cut point is the midpoint ``(x[i] + x[i+1]) / 2``.
   (Fayyad & Irani show the best cut is always a class *boundary* point; Weka, and this
   module, evaluate every value change, which finds the same minimum.) The candidate with the
   smallest class entropy ``E(A, T; S) = |S1|/N Ent(S1) + |S2|/N Ent(S2)`` wins; ties go to
   the leftmost (Weka's strict ``<``).
3. With ``Gain = Ent(S) - E(A, T; S)`` (entropies in bits), the split is accepted iff
   ``Gain > 0`` and

       Gain > (log2(N - 1) + log2(3^k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))) / N

   where ``k``, ``k1``, ``k2`` count the classes present in ``S``, ``S1``, ``S2``. ``N - 1``
   (not the number of distinct candidates) is Weka's default "worse" encoding of the cut.
4. If accepted, both halves are processed recursively; the result is the sorted union of the
   accepted cut points (possibly empty: the whole column is one bin).

Entropies are computed exactly as Weka's ``ContingencyTables`` does them (sums of
``c ln c`` over integer counts, in the same order, divided by ``N ln 2``), so even ties broken
by rounding go the same way as in Weka.

Binning (:func:`apply_cut_points`) follows Weka's ``convertInstance``: a value ``v`` gets bin
``j`` = the number of cut points ``c`` with ``c < v``; a value *equal* to a cut point goes to
the lower bin (Weka tests ``v <= cut``; bins print as ``(-inf-c1]``, ``(c1-c2]``, ...,
``(cK-inf)``). That is ``np.searchsorted(cuts, v, side="left")``. NaN gets code ``-1``.

Infinite values: :func:`mdl_cut_points` raises ``ValueError`` naming ``+inf``/``-inf`` (and the
column, when ``name=`` is given). :func:`apply_cut_points` accepts them (``-inf`` -> bin 0,
``+inf`` -> the last bin). Class labels must be integers in ``[0, n_classes)``: rows with a
missing class must be dropped by the caller (Weka's filter refuses them too).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

__all__ = ["apply_cut_points", "mdl_cut_points"]



# ``c ln c`` is evaluated on the fly (as Weka's lnFunc does) rather than tabulated, so a column
# of ten million rows does not need an 80 MB table.
@njit(cache=True, nogil=True)
def _xlnx(c):
    if c == 0:
        return 0.0
    return c * math.log(c)


@njit(cache=True, nogil=True)
def _entropy(counts, k):
    """Weka ``ContingencyTables.entropy`` of one row of integer counts (bits)."""
    rv = 0.0
    s = 0
    for j in range(k):
        rv -= _xlnx(counts[j])
        s += counts[j]
    if s == 0:
        return 0.0
    return (rv + _xlnx(s)) / (s * math.log(2.0))


@njit(cache=True, nogil=True)
def _cond_entropy(left, right, k):
    """Weka ``ContingencyTables.entropyConditionedOnRows`` of the 2 x k table (bits)."""
    rv = 0.0
    total = 0
    s = 0
    for j in range(k):
        rv = rv + _xlnx(left[j])
        s += left[j]
    rv = rv - _xlnx(s)
    total += s
    s = 0
    for j in range(k):
        rv = rv + _xlnx(right[j])
        s += right[j]
    rv = rv - _xlnx(s)
    total += s
    if total == 0:
        return 0.0
    return -rv / (total * math.log(2.0))


@njit(cache=True, nogil=True)
def mdl_bins_kernel(lo, hi, counts):
    """Weka's MDL recursion (iterative) over sorted disjoint value ranges with class counts.

    A range is a run of rows (one distinct value for :func:`mdl_cut_points`, a histogram bin for
    :func:`fastpath.encode.mdl_cut_points_from_counts`). The candidate after range ``i`` sees
    the cumulative counts through range ``i``: Weka evaluates a cut only between two distinct
    values, with the counts up to the last row of the lower one, which is the same thing.
    """
    n_bins = counts.shape[0]
    k = counts.shape[1]
    log2 = math.log(2.0)
    cuts = np.empty(max(n_bins - 1, 1), dtype=np.float64)
    n_cuts = 0
    stack = np.empty((2 * n_bins + 2, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n_bins
    top = 1
    left = np.zeros(k, dtype=np.int64)
    right = np.zeros(k, dtype=np.int64)
    prior = np.zeros(k, dtype=np.int64)
    best_left = np.zeros(k, dtype=np.int64)
    best_right = np.zeros(k, dtype=np.int64)
    while top > 0:
        top -= 1
        first = stack[top, 0]
        last = stack[top, 1]  # exclusive
        for j in range(k):
            left[j] = 0
            right[j] = 0
        m = 0
        for i in range(first, last):
            for j in range(k):
                right[j] += counts[i, j]
                m += counts[i, j]
        if m < 2:
            continue
        for j in range(k):
            prior[j] = right[j]
        prior_ent = _entropy(prior, k)
        best_ent = prior_ent
        best_idx = -1
        best_cut = 0.0
        for i in range(first, last - 1):
            for j in range(k):
                left[j] += counts[i, j]
                right[j] -= counts[i, j]
            e = _cond_entropy(left, right, k)
            if e < best_ent:
                best_ent = e
                best_idx = i
                mid = (hi[i] + lo[i + 1]) / 2.0
                if not math.isfinite(mid):  # overflow of hi + lo
                    mid = hi[i] / 2.0 + lo[i + 1] / 2.0
                best_cut = mid
                for j in range(k):
                    best_left[j] = left[j]
                    best_right[j] = right[j]
        gain = prior_ent - best_ent
        if gain <= 0.0:
            continue
        ent = _cond_entropy(best_left, best_right, k)
        gain = prior_ent - ent
        k_all = 0
        k_left = 0
        k_right = 0
        for j in range(k):
            if prior[j] > 0:
                k_all += 1
            if best_left[j] > 0:
                k_left += 1
            if best_right[j] > 0:
                k_right += 1
        ent_left = _entropy(best_left, k)
        ent_right = _entropy(best_right, k)
        delta = math.log(math.pow(3.0, k_all) - 2.0) / log2 - (
            (k_all * prior_ent) - (k_right * ent_right) - (k_left * ent_left)
        )
        num_cut_points = m - 1
        if gain > (math.log(num_cut_points) / log2 + delta) / m:
            cuts[n_cuts] = best_cut
            n_cuts += 1
            stack[top, 0] = first
            stack[top, 1] = best_idx + 1
            top += 1
            stack[top, 0] = best_idx + 1
            stack[top, 1] = last
            top += 1
    out = cuts[:n_cuts].copy()
    out.sort()
    return out


def _label(name: str | None) -> str:
    return f"column {name!r}" if name is not None else "x"


def mdl_cut_points(
    x: np.ndarray, y: np.ndarray, n_classes: int, *, name: str | None = None
) -> np.ndarray:
    """Fayyad & Irani MDL cut points of ``x`` for the class ``y`` (Weka's default filter).

    Parameters
    ----------
    x : array of float, shape (n,)
        Values; NaN means missing and is ignored. ``+inf``/``-inf`` raise ``ValueError``.
    y : array of int, shape (n,)
        Class codes in ``[0, n_classes)``.
    n_classes : int
        Number of classes (codes absent from ``y`` are allowed).
    name : str, optional
        Column name, only used in error messages.

    Returns
    -------
    ndarray of float64
        Strictly increasing cut points, possibly empty (the column is then a single bin).
        Each is the midpoint of two consecutive distinct observed values.
    """
    x = np.asarray(x)
    y = np.asarray(y)
    if x.ndim != 1 or y.ndim != 1:
        raise ValueError(f"{_label(name)}: x and y must be 1-D, got shapes {x.shape} and {y.shape}")
    if x.shape[0] != y.shape[0]:
        raise ValueError(f"{_label(name)}: x has {x.shape[0]} rows but y has {y.shape[0]}")
    if x.dtype.kind not in "fiub":
        raise ValueError(f"{_label(name)}: x must be numeric, got dtype {x.dtype}")
    n_classes = int(n_classes)
    if n_classes < 1:
        raise ValueError(f"n_classes must be >= 1, got {n_classes}")
    if y.dtype.kind not in "iub":
        if y.dtype.kind == "f" and np.all(np.isfinite(y)) and np.all(y == np.round(y)):
            y = y.astype(np.int64)
        else:
            raise ValueError(
                f"{_label(name)}: y must hold integer class codes (drop rows with a missing "
                f"class first), got dtype {y.dtype}"
            )
    y = y.astype(np.int64, copy=False)
    if y.size and (y.min() < 0 or y.max() >= n_classes):
        bad = y[(y < 0) | (y >= n_classes)][0]
        raise ValueError(
            f"{_label(name)}: class code {int(bad)} outside [0, {n_classes}) "
            "(drop rows with a missing class first)"
        )
    x = x.astype(np.float64, copy=False)
    if np.isinf(x).any():
        which = "+inf" if np.isposinf(x).any() else "-inf"
        raise ValueError(f"{_label(name)} contains {which}; MDL discretisation needs finite values")
    keep = ~np.isnan(x)
    if not keep.all():
        x = x[keep]
        y = y[keep]
    if x.shape[0] < 2:
        return np.empty(0, dtype=np.float64)
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ys = y[order]
    # one range per distinct value, with its class counts: Weka only cuts between distinct values
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    run = np.cumsum(np.r_[False, xs[1:] != xs[:-1]])
    counts = np.bincount(run * n_classes + ys, minlength=starts.size * n_classes)
    values = np.ascontiguousarray(xs[starts])
    if values.size < 2:
        return np.empty(0, dtype=np.float64)
    return mdl_bins_kernel(values, values, counts.reshape(starts.size, n_classes))


def apply_cut_points(x: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Bin codes ``0..len(cuts)`` of ``x`` (Weka's convention), ``-1`` for NaN.

    A value equal to a cut point goes to the lower bin: ``code = searchsorted(cuts, x,
    side="left")``, i.e. bin ``j`` holds ``cuts[j-1] < x <= cuts[j]``.
    """
    x = np.asarray(x, dtype=np.float64)
    cuts = np.asarray(cuts, dtype=np.float64)
    if cuts.ndim != 1:
        raise ValueError(f"cuts must be 1-D, got shape {cuts.shape}")
    if cuts.size and (not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0)):
        raise ValueError("cuts must be finite and strictly increasing")
    codes = np.searchsorted(cuts, x, side="left").astype(np.int64, copy=False)
    nan = np.isnan(x)
    if nan.any():
        codes = np.where(nan, np.int64(-1), codes)
    return codes
