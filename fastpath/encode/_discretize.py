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

Stochastic MDL (:func:`stochastic_mdl_cut_points`), as each member of ESKDB discretises
(Zhang, Petitjean & Buntine, 2020): the same recursion, but at each subset every candidate
whose own gain passes its own MDL threshold is *admissible*, and the cut is drawn among the
admissible ones with probability proportional to ``gain - threshold`` (no admissible cut: no
split, except that the whole column, as in the authors' code, is forced one cut drawn in
proportion to gain). :func:`stochastic_mdl_kernel` documents how the randomness is drawn.

Zhang, H., Petitjean, F. & Buntine, W. (2020). Bayesian network classifiers using ensembles
and smoothing. Knowledge and Information Systems 62, 3457-3480.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..utils._validation import as_generator

# ``c ln c`` is evaluated as Weka's lnFunc does, and remembered in a table of the counts up to
# the column's rows (at most XLNX_MEMO values, filled as they are first asked for): a column's
# recursion evaluates the same small counts thousands of times (a log each), and a column of ten
# million rows must not need an 80 MB table. The table holds the very floats computed on the fly.
XLNX_MEMO = 1 << 17


@njit(cache=True, nogil=True)
def _xlnx(c):
    if c == 0:
        return 0.0
    return c * math.log(c)


@njit(cache=True, nogil=True)
def _xlnx_memo(counts):
    """An empty memo of ``c ln c`` for the counts of a column's table (NaN: not computed yet)."""
    total = 0
    for i in range(counts.shape[0]):
        for j in range(counts.shape[1]):
            total += counts[i, j]
    memo = np.empty(min(total + 1, XLNX_MEMO))
    memo[:] = np.nan
    return memo


@njit(cache=True, nogil=True, inline="always")
def _xlnx_of(c, memo):
    """:func:`_xlnx` of ``c``, read from ``memo`` where it holds ``c``."""
    if c >= memo.shape[0]:
        return _xlnx(c)
    v = memo[c]
    if v != v:
        v = _xlnx(c)
        memo[c] = v
    return v


@njit(cache=True, nogil=True)
def _entropy(counts, k, memo):
    """Weka ``ContingencyTables.entropy`` of one row of integer counts (bits)."""
    rv = 0.0
    s = 0
    for j in range(k):
        rv -= _xlnx_of(counts[j], memo)
        s += counts[j]
    if s == 0:
        return 0.0
    return (rv + _xlnx_of(s, memo)) / (s * math.log(2.0))


@njit(cache=True, nogil=True)
def _cond_entropy(left, right, k, memo):
    """Weka ``ContingencyTables.entropyConditionedOnRows`` of the 2 x k table (bits)."""
    rv = 0.0
    total = 0
    s = 0
    for j in range(k):
        rv = rv + _xlnx_of(left[j], memo)
        s += left[j]
    rv = rv - _xlnx_of(s, memo)
    total += s
    s = 0
    for j in range(k):
        rv = rv + _xlnx_of(right[j], memo)
        s += right[j]
    rv = rv - _xlnx_of(s, memo)
    total += s
    if total == 0:
        return 0.0
    return -rv / (total * math.log(2.0))


@njit(cache=True, nogil=True)
def _load_subset(counts, first, last, left, right, k):
    """Zero ``left``, put the class totals of ranges ``first..last-1`` in ``right``; return N."""
    for j in range(k):
        left[j] = 0
        right[j] = 0
    m = 0
    for i in range(first, last):
        for j in range(k):
            right[j] += counts[i, j]
            m += counts[i, j]
    return m


@njit(cache=True, nogil=True)
def _n_present(counts, k):
    n = 0
    for j in range(k):
        if counts[j] > 0:
            n += 1
    return n


@njit(cache=True, nogil=True)
def _midpoint(hi, lo, i):
    """The cut between ranges ``i`` and ``i + 1``: midpoint of the two observed values.

    A value equal to a cut goes to the lower bin, so the cut must satisfy
    ``hi[i] <= cut < lo[i + 1]``; between two adjacent subnormal numbers the rounded midpoint
    can be either of them, and ``hi[i]`` is then the cut that separates them."""
    mid = (hi[i] + lo[i + 1]) / 2.0
    if not math.isfinite(mid):  # overflow of hi + lo
        mid = hi[i] / 2.0 + lo[i + 1] / 2.0
    if mid >= lo[i + 1]:
        mid = hi[i]
    return mid


@njit(cache=True, nogil=True)
def _subset_terms(k_all, m):
    """The two terms of :func:`_mdl_threshold` that depend on the subset alone (``k`` of its
    classes present, ``m`` rows): ``log2(3^k - 2)`` and ``log2(m - 1)``, computed once per
    subset rather than once per candidate (the same floats)."""
    log2 = math.log(2.0)
    return math.log(math.pow(3.0, k_all) - 2.0) / log2, math.log(m - 1) / log2


@njit(cache=True, nogil=True)
def _mdl_threshold(classes_term, cuts_term, prior_ent, k_all, left, right, m, k, memo):
    """Fayyad & Irani's MDL threshold of one cut of a subset of ``m`` rows (Weka's operations).

    ``(log2(m - 1) + log2(3^k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))) / m``, with the
    floating-point operations in Weka's order, so that the deterministic kernel stays bit for
    bit equal to Weka and both kernels judge a cut identically; ``classes_term`` and
    ``cuts_term`` are the subset's :func:`_subset_terms`.
    """
    k_left = _n_present(left, k)
    k_right = _n_present(right, k)
    ent_left = _entropy(left, k, memo)
    ent_right = _entropy(right, k, memo)
    delta = classes_term - (
        (k_all * prior_ent) - (k_right * ent_right) - (k_left * ent_left)
    )
    return (cuts_term + delta) / m


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
    cuts = np.empty(max(n_bins - 1, 1), dtype=np.float64)
    n_cuts = 0
    stack = np.empty((2 * n_bins + 2, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n_bins
    top = 1
    left = np.zeros(k, dtype=np.int64)
    right = np.zeros(k, dtype=np.int64)
    prior = np.zeros(k, dtype=np.int64)
    memo = _xlnx_memo(counts)
    best_left = np.zeros(k, dtype=np.int64)
    best_right = np.zeros(k, dtype=np.int64)
    while top > 0:
        top -= 1
        first = stack[top, 0]
        last = stack[top, 1]  # exclusive
        m = _load_subset(counts, first, last, left, right, k)
        if m < 2:
            continue
        for j in range(k):
            prior[j] = right[j]
        prior_ent = _entropy(prior, k, memo)
        best_ent = prior_ent
        best_idx = -1
        best_cut = 0.0
        for i in range(first, last - 1):
            for j in range(k):
                left[j] += counts[i, j]
                right[j] -= counts[i, j]
            e = _cond_entropy(left, right, k, memo)
            if e < best_ent:
                best_ent = e
                best_idx = i
                best_cut = _midpoint(hi, lo, i)
                for j in range(k):
                    best_left[j] = left[j]
                    best_right[j] = right[j]
        gain = prior_ent - best_ent
        if gain <= 0.0:
            continue
        ent = _cond_entropy(best_left, best_right, k, memo)
        gain = prior_ent - ent
        k_all = _n_present(prior, k)
        classes_term, cuts_term = _subset_terms(k_all, m)
        if gain > _mdl_threshold(classes_term, cuts_term, prior_ent, k_all, best_left,
                                 best_right, m, k, memo):
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


# SplitMix64 (Steele, Lea & Flood 2014): a bijective 64-bit mixer whose output passes BigCrush;
# integer-only, so the draws are the same on every platform.
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, nogil=True)
def _splitmix64(z):
    z = (z ^ (z >> np.uint64(30))) * _MIX1
    z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, nogil=True)
def _subset_uniform(seed, first, last):
    """A uniform in [0, 1) that depends only on the seed and the subset ``[first, last)``.

    Keying the draw on the subset (a counter-based generator) rather than taking the next number
    of a stream makes the cuts independent of the order in which subsets are processed.
    """
    z = _splitmix64(seed + _GOLDEN * np.uint64(first + 1))
    z = _splitmix64(z + _GOLDEN * np.uint64(last + 1))
    return np.float64(z >> np.uint64(11)) * (1.0 / 9007199254740992.0)  # 53 bits / 2^53


@njit(cache=True, nogil=True)
def _draw_index(running, last_positive, target):
    """The first ``i`` whose running sum of weights exceeds ``target`` (``u`` times their
    total): a draw in proportion to the weights, since the sum rises only at positive ones;
    rounding of ``u`` times the total up to the total falls to ``last_positive``."""
    for i in range(last_positive):
        if running[i] > target:
            return i
    return last_positive


@njit(cache=True, nogil=True)
def stochastic_mdl_kernel(lo, hi, counts, seed, forced_cut=True):
    """ESKDB's stochastic MDL recursion over sorted disjoint value ranges with class counts.

    For a subset of ranges ``[first, last)`` holding ``N >= 2`` rows, the candidate after range
    ``i`` is admissible iff its gain ``Ent(S) - E(A, T; S)`` is ``> 0`` and ``>`` its own MDL
    threshold (:func:`_mdl_threshold`, the deterministic criterion applied to that cut). The cut
    is the admissible candidate ``i`` with ``W(i-1) <= u W < W(i)``, ``W`` the running sum of
    ``gain - threshold`` over admissible candidates from the left and ``u`` uniform in [0, 1):
    so it is drawn with probability proportional to ``gain - threshold``. Both halves recurse.

    Randomness: ``u`` of subset ``[first, last)`` is SplitMix64 of ``(seed, first, last)``
    (``seed`` a ``uint64``), a function of the subset alone. Subsets are processed from a LIFO
    stack (after a split the upper half first), but because each draw is keyed by its subset,
    the cuts would be the same in any order; integer hashing makes them the same on every
    platform and thread count. Range indices key the draws, so an exact histogram (one range
    per distinct value) gives the same cuts as the column for the same seed.

    The authors' forced cut (``forced_cut``, their ``MDLR.cutPointsForSubset``): when no
    candidate of the *whole* column is admissible, one cut is still made, drawn among all the
    candidates with probability proportional to its gain ``Ent(S) - E(A, T; S)`` (a gain
    below zero, a rounding of zero, weighs zero), "to make sure that we have at least one cut
    point"; it is not recursed into. Where every candidate's gain is zero (the class is
    independent of every cut, e.g. one class) the authors make no cut; here the cut is then
    drawn uniformly among the candidates, so that a column of two or more distinct values
    always has a cut. The draw uses the whole column's ``u`` (which no admissible cut used).
    """
    n_bins = counts.shape[0]
    k = counts.shape[1]
    cuts = np.empty(max(n_bins - 1, 1), dtype=np.float64)
    n_cuts = 0
    stack = np.empty((2 * n_bins + 2, 2), dtype=np.int64)
    stack[0, 0] = 0
    stack[0, 1] = n_bins
    top = 1
    left = np.zeros(k, dtype=np.int64)
    right = np.zeros(k, dtype=np.int64)
    prior = np.zeros(k, dtype=np.int64)
    memo = _xlnx_memo(counts)
    running = np.empty(max(n_bins - 1, 1), dtype=np.float64)  # W(i) - W(first - 1)
    # the whole column's running sum of max(gain, 0), for the forced cut
    running_gain = np.empty(max(n_bins - 1, 1), dtype=np.float64)
    # each half's c ln c per class, updated only for the classes a range moves: a candidate
    # then costs the sums, not 4 k lookups (the sums below are _cond_entropy's and
    # _mdl_threshold's, term for term and in their order, so the floats are theirs)
    x_left = np.zeros(k)
    x_right = np.zeros(k)
    ln2 = math.log(2.0)
    while top > 0:
        top -= 1
        first = stack[top, 0]
        last = stack[top, 1]  # exclusive
        m = _load_subset(counts, first, last, left, right, k)
        if m < 2:
            continue
        for j in range(k):
            prior[j] = right[j]
            x_left[j] = 0.0
            x_right[j] = _xlnx_of(right[j], memo)
        prior_ent = _entropy(prior, k, memo)
        k_all = _n_present(prior, k)
        k_left = 0
        k_right = k_all
        n_left = 0
        classes_term, cuts_term = _subset_terms(k_all, m)
        total = 0.0
        last_admissible = -1
        whole_column = first == 0 and last == n_bins
        total_gain = 0.0
        last_gain = np.int64(-1)  # not the literal -1: _draw_index compiles once (int64)
        for i in range(first, last - 1):
            for j in range(k):
                c = counts[i, j]
                if c != 0:
                    k_left += left[j] == 0
                    left[j] += c
                    right[j] -= c
                    k_right -= right[j] == 0
                    x_left[j] = _xlnx_of(left[j], memo)
                    x_right[j] = _xlnx_of(right[j], memo)
                    n_left += c
            n_right = m - n_left
            sum_left = 0.0
            for j in range(k):
                sum_left = sum_left + x_left[j]
            xs_left = _xlnx_of(n_left, memo)
            xs_right = _xlnx_of(n_right, memo)
            rv = sum_left - xs_left
            for j in range(k):
                rv = rv + x_right[j]
            rv = rv - xs_right
            gain = prior_ent - (-rv / (m * ln2))  # Ent(S) - E(A, T; S)
            if whole_column:
                if gain > 0.0:
                    total_gain += gain
                    last_gain = i
                running_gain[i] = total_gain
            if gain > 0.0:
                # _mdl_threshold: Ent(S1), Ent(S2) as _entropy sums them (-(a + b) = -a - b)
                sum_right = 0.0
                for j in range(k):
                    sum_right = sum_right + x_right[j]
                ent_left = (-sum_left + xs_left) / (n_left * ln2) if n_left != 0 else 0.0
                ent_right = (-sum_right + xs_right) / (n_right * ln2) if n_right != 0 else 0.0
                delta = classes_term - (
                    (k_all * prior_ent) - (k_right * ent_right) - (k_left * ent_left)
                )
                threshold = (cuts_term + delta) / m
                if gain > threshold:
                    total += gain - threshold
                    last_admissible = i
            running[i - first] = total
        if last_admissible < 0:
            if whole_column and forced_cut and last - first >= 2:
                u = _subset_uniform(seed, first, last)
                if total_gain > 0.0:  # in proportion to gain
                    forced = _draw_index(running_gain, last_gain, u * total_gain)
                else:  # every gain zero: uniformly among the candidates
                    forced = min(int(u * (last - 1)), last - 2)
                cuts[n_cuts] = _midpoint(hi, lo, forced)
                n_cuts += 1
            continue
        # in proportion to gain - threshold over the admissible candidates
        chosen = first + _draw_index(running, last_admissible - first,
                                     _subset_uniform(seed, first, last) * total)
        cuts[n_cuts] = _midpoint(hi, lo, chosen)
        n_cuts += 1
        stack[top, 0] = first
        stack[top, 1] = chosen + 1
        top += 1
        stack[top, 0] = chosen + 1
        stack[top, 1] = last
        top += 1
    out = cuts[:n_cuts].copy()
    out.sort()
    return out


#: the range of a member's bins per numeric column under random resolution (inclusive)
RANDOM_BINS: tuple[int, int] = (2, 12)


@njit(cache=True, nogil=True)
def random_cuts_kernel(lo, hi, weights, seed, min_bins, max_bins):
    """Cut points at random resolution over sorted disjoint value ranges with row ``weights``.

    The number of bins ``b`` is uniform in ``[min_bins, max_bins]``; ``min(b, n_ranges) - 1``
    cuts are then drawn without replacement, each as a forest draws a split point from the
    data: a training row is drawn uniformly (range ``i`` with probability proportional to its
    rows) and the cut is placed just above its range (:func:`_midpoint`), or just below the
    last range. So the cuts fall where the rows are (equal-frequency bins on average) and no
    class is read: the resolution is unsupervised.

    Randomness: the ``t``-th uniform is SplitMix64 of ``(seed, n_ranges + 1 + t, t)``, the
    number of bins that of ``(seed, 0, n_ranges)`` (:func:`_subset_uniform`): the cuts are a
    function of the seed and the ranges alone, the same on every platform and thread count,
    and an exact histogram (one range per distinct value) gives the column's cuts.
    """
    n_ranges = weights.shape[0]
    if n_ranges < 2:
        return np.empty(0, dtype=np.float64)
    u = _subset_uniform(seed, np.int64(0), n_ranges)  # int64, not a literal: one compilation
    n_bins = min_bins + int(u * (max_bins - min_bins + 1))
    n_bins = min(max(n_bins, min_bins), max_bins)
    n_cuts = min(n_bins, n_ranges) - 1
    # candidate i cuts between ranges i and i + 1; the last range's rows cut below it
    w = np.empty(n_ranges - 1, dtype=np.float64)
    for i in range(n_ranges - 1):
        w[i] = weights[i]
    w[n_ranges - 2] += weights[n_ranges - 1]
    cuts = np.empty(n_cuts, dtype=np.float64)
    chosen = np.zeros(n_ranges - 1, dtype=np.bool_)
    running = np.empty(n_ranges - 1, dtype=np.float64)
    for t in range(n_cuts):
        total = 0.0
        last_positive = np.int64(-1)  # not the literal -1: _draw_index compiles once (int64)
        for i in range(n_ranges - 1):
            total += w[i]
            running[i] = total
            if w[i] > 0:
                last_positive = i
        if last_positive < 0:  # the rows' candidates are used up: the others uniformly
            total = 0.0
            for i in range(n_ranges - 1):
                w[i] = 0.0 if chosen[i] else 1.0
                total += w[i]
                running[i] = total
                if w[i] > 0:
                    last_positive = i
        target = _subset_uniform(seed, n_ranges + 1 + t, t) * total
        i = _draw_index(running, last_positive, target)
        cuts[t] = _midpoint(hi, lo, i)
        chosen[i] = True
        w[i] = 0.0
    cuts.sort()
    return cuts


def random_cut_points_of_table(table: tuple[np.ndarray, np.ndarray] | None, random_state, *,
                               bins: tuple[int, int] = RANDOM_BINS) -> np.ndarray:
    """Cut points at random resolution (:func:`random_cuts_kernel`) of a column whose
    :func:`_value_table` is ``table`` (``None``: fewer than two values, no cut). Exactly one
    64-bit draw from ``random_state`` per call, whatever the data, as the stochastic MDL."""
    seed = stochastic_seed(random_state)
    if table is None:
        return np.empty(0, dtype=np.float64)
    values, counts = table
    weights = counts.sum(axis=1).astype(np.float64)
    return random_cuts_kernel(values, values, weights, seed, int(bins[0]), int(bins[1]))


def random_cut_points(x: np.ndarray, y: np.ndarray, n_classes: int, random_state, *,
                      name: str | None = None) -> np.ndarray:
    """Cut points of ``x`` at random resolution, as the members of ``discretization="random"``
    draw them: the number of bins uniform in :data:`RANDOM_BINS`, each cut above (or below the
    last) the value of a row drawn uniformly (:func:`random_cuts_kernel`). ``y`` and
    ``n_classes`` are only checked (as for :func:`mdl_cut_points`): the cuts read no class.

    Returns
    -------
    ndarray of float64
        Strictly increasing cut points (none when ``x`` has fewer than two distinct values).
    """
    seed_draw = stochastic_seed(random_state)  # drawn first: one draw per call
    table = _value_table(x, y, n_classes, name)
    if table is None:
        return np.empty(0, dtype=np.float64)
    values, counts = table
    return random_cuts_kernel(values, values, counts.sum(axis=1).astype(np.float64), seed_draw,
                              RANDOM_BINS[0], RANDOM_BINS[1])


def stochastic_seed(random_state) -> np.uint64:
    """The kernel seed: one 64-bit draw from ``as_generator(random_state)``.

    Exactly one draw per call, whatever the data, so a shared generator advances the same way
    for every column.
    """
    rng = as_generator(random_state)
    return np.uint64(rng.integers(0, 2**64, dtype=np.uint64))


def _label(name: str | None) -> str:
    return f"column {name!r}" if name is not None else "x"


def _value_table(
    x: np.ndarray, y: np.ndarray, n_classes: int, name: str | None
) -> tuple[np.ndarray, np.ndarray] | None:
    """Check a column; its distinct values and their class counts, or None if < 2 values."""
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
        return None
    order = np.argsort(x, kind="stable")
    xs = x[order]
    ys = y[order]
    # one range per distinct value, with its class counts: Weka only cuts between distinct values
    starts = np.flatnonzero(np.r_[True, xs[1:] != xs[:-1]])
    run = np.cumsum(np.r_[False, xs[1:] != xs[:-1]])
    counts = np.bincount(run * n_classes + ys, minlength=starts.size * n_classes)
    values = np.ascontiguousarray(xs[starts])
    if values.size < 2:
        return None
    return values, counts.reshape(starts.size, n_classes)


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
    table = _value_table(x, y, n_classes, name)
    if table is None:
        return np.empty(0, dtype=np.float64)
    values, counts = table
    return mdl_bins_kernel(values, values, counts)


def stochastic_mdl_cut_points(
    x: np.ndarray, y: np.ndarray, n_classes: int, random_state, *, name: str | None = None,
    forced_cut: bool = True,
) -> np.ndarray:
    """Stochastic MDL cut points of ``x`` for the class ``y``, as ESKDB's members draw them.

    Zhang, Petitjean & Buntine (2020), Bayesian network classifiers using ensembles and
    smoothing, KAIS 62: each ensemble member discretises with a randomised Fayyad & Irani MDL.
    The recursion over sorted rows is the one of :func:`mdl_cut_points`, but at each subset
    ``S`` of ``N >= 2`` rows, instead of testing only the cut of least class entropy:

    * a candidate cut ``T`` (a midpoint between consecutive distinct values) is *admissible*
      iff ``Gain(T) = Ent(S) - E(A, T; S) > 0`` and ``Gain(T) > (log2(N - 1) + delta(T)) / N``
      with ``delta(T) = log2(3^k - 2) - (k Ent(S) - k1 Ent(S1) - k2 Ent(S2))`` for *that* cut's
      halves ``S1``, ``S2`` (the deterministic criterion, applied to every candidate);
    * the cut is drawn among the admissible ones with probability proportional to
      ``Gain(T) - threshold(T)``; both halves then recurse;
    * no admissible cut: ``S`` is not split -- except the whole column, where the authors'
      code forces one cut (``forced_cut``): drawn among all candidates with probability
      proportional to ``Gain(T)`` (uniformly when every gain is zero), not recursed into. A
      column of two or more distinct values then always has at least one cut.

    Whenever the deterministic MDL accepts its cut, that cut is admissible here, so a subset
    the deterministic version splits is always split.

    Parameters
    ----------
    x, y, n_classes, name
        As in :func:`mdl_cut_points` (same checks, same errors).
    random_state : None, int or numpy.random.Generator
        Source of randomness (:func:`fastpath.utils._validation.as_generator`). Exactly one
        64-bit integer is drawn from it per call; the same seed gives the same cuts on every
        platform (see :func:`stochastic_mdl_kernel`).
    forced_cut : bool, default=True
        The authors' rule (Zhang et al.'s ``MDLR.cutPointsForSubset``): a column whose every
        candidate fails the criterion still gets one cut, drawn in proportion to its gain.
        ``False``: such a column is one bin, as the MDL criterion alone leaves it (the
        members' former rule: CHANGELOG, issue 43).

    Returns
    -------
    ndarray of float64
        Strictly increasing cut points, possibly empty.
    """
    seed = stochastic_seed(random_state)  # drawn first: one draw per call, whatever the data
    return _stochastic_cuts(_value_table(x, y, n_classes, name), seed, forced_cut)


def stochastic_mdl_cut_points_of_table(
    table: tuple[np.ndarray, np.ndarray] | None, random_state, *, forced_cut: bool = True
) -> np.ndarray:
    """:func:`stochastic_mdl_cut_points` of a column whose :func:`_value_table` is ``table``:
    members drawing cut points from the same rows sort them once (the same draws, the same
    cuts)."""
    return _stochastic_cuts(table, stochastic_seed(random_state), forced_cut)


def _stochastic_cuts(table: tuple[np.ndarray, np.ndarray] | None, seed: np.uint64,
                     forced_cut: bool) -> np.ndarray:
    if table is None:
        return np.empty(0, dtype=np.float64)
    values, counts = table
    return stochastic_mdl_kernel(values, values, counts, seed, bool(forced_cut))


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
