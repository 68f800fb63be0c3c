"""Tests for fastpath.encode._discretize: Fayyad & Irani MDL cut points as Weka computes them."""

from __future__ import annotations

import math
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import chi2

from fastpath.encode import apply_cut_points, mdl_cut_points, stochastic_mdl_cut_points

DATA = Path(__file__).parent / "data"


# ----------------------------------------------------------------------------- references


def _weka_reference(x, y, n_classes):
    """Line-by-line pure-Python transcription of Weka's ``cutPointsForSubset`` (recursive).

    Sorted by (value, class) rather than Weka's (value, input order): the order inside a run
    of equal values cannot matter, because candidates are only evaluated where the value
    changes. Entropies are summed in Weka's order, so results must agree bit for bit.
    """
    pairs = sorted((float(a), int(b)) for a, b in zip(x, y, strict=True) if not math.isnan(a))
    xs = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    log2 = math.log(2)

    def ln_func(c):
        return 0.0 if c <= 0 else c * math.log(c)

    def entropy(counts):
        rv, s = 0.0, 0
        for c in counts:
            rv -= ln_func(c)
            s += c
        return 0.0 if s == 0 else (rv + ln_func(s)) / (s * log2)

    def cond_entropy(rows):
        rv, total = 0.0, 0
        for row in rows:
            s = 0
            for c in row:
                rv = rv + ln_func(c)
                s += c
            rv = rv - ln_func(s)
            total += s
        return 0.0 if total == 0 else -rv / (total * log2)

    def subset(first, last):
        if last - first < 2:
            return []
        left = [0] * n_classes
        right = [0] * n_classes
        for i in range(first, last):
            right[ys[i]] += 1
        prior = list(right)
        prior_ent = entropy(prior)
        best_ent, best_idx, best_cut, best = prior_ent, -1, None, None
        for i in range(first, last - 1):
            left[ys[i]] += 1
            right[ys[i]] -= 1
            if xs[i] < xs[i + 1]:
                e = cond_entropy([left, right])
                if e < best_ent:
                    best_ent, best_idx = e, i
                    best_cut = (xs[i] + xs[i + 1]) / 2.0
                    best = (list(left), list(right))
        if prior_ent - best_ent <= 0:
            return []
        n = last - first
        k = sum(c > 0 for c in prior)
        k1 = sum(c > 0 for c in best[0])
        k2 = sum(c > 0 for c in best[1])
        gain = prior_ent - cond_entropy(best)
        delta = math.log(3.0**k - 2) / log2 - (
            k * prior_ent - k2 * entropy(best[1]) - k1 * entropy(best[0])
        )
        if not gain > (math.log(n - 1) / log2 + delta) / n:
            return []
        return [*subset(first, best_idx + 1), best_cut, *subset(best_idx + 1, last)]

    return subset(0, len(xs))


def _textbook_reference(x, y, n_classes, tol=1e-9):
    """Fayyad & Irani (1993) written from the paper with probabilities and log2.

    Returns ``(cuts, ambiguous)``; ``ambiguous`` is True when a decision came within ``tol`` of
    a tie (two candidates with equal entropy, or gain equal to the MDL threshold), where
    floating-point rounding legitimately decides.
    """
    pairs = sorted((float(a), int(b)) for a, b in zip(x, y, strict=True) if not math.isnan(a))
    ambiguous = False

    def ent(labels):
        n = len(labels)
        if n == 0:
            return 0.0
        counts = np.bincount(labels, minlength=n_classes)
        p = counts[counts > 0] / n
        return float(-(p * np.log2(p)).sum())

    def rec(sub):
        nonlocal ambiguous
        n = len(sub)
        if n < 2:
            return []
        labels = [b for _, b in sub]
        e_s = ent(labels)
        cands = []
        for i in range(n - 1):
            if sub[i][0] < sub[i + 1][0]:
                e = (i + 1) / n * ent(labels[: i + 1]) + (n - i - 1) / n * ent(labels[i + 1 :])
                cands.append((e, i))
        if not cands:
            return []
        best_e = min(c[0] for c in cands)
        near = [i for e, i in cands if e - best_e < tol]
        i = near[0]
        gain = e_s - best_e
        if gain <= tol:
            if gain > -tol and gain != 0:
                ambiguous = True
            return []
        if len(near) > 1:
            ambiguous = True  # which of the tied cuts wins is up to rounding
        s1, s2 = labels[: i + 1], labels[i + 1 :]
        k = len(set(labels))
        k1, k2 = len(set(s1)), len(set(s2))
        delta = math.log2(3**k - 2) - (k * e_s - k1 * ent(s1) - k2 * ent(s2))
        threshold = (math.log2(n - 1) + delta) / n
        if abs(gain - threshold) < tol:
            ambiguous = True
        if gain <= threshold:
            return []
        cut = (sub[i][0] + sub[i + 1][0]) / 2
        return [*rec(sub[: i + 1]), cut, *rec(sub[i + 1 :])]

    return rec(pairs), ambiguous


@st.composite
def labelled_columns(draw, discrete=None, sizes=((0, 12), (12, 80), (80, 400))):
    """Random (x, y, n_classes): y depends on x through thresholds, plus label noise/NaNs."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(*draw(st.sampled_from(sizes))))
    k = draw(st.sampled_from([1, 2, 2, 3, 3, 4]))
    if discrete is None:
        discrete = draw(st.booleans())
    noise = draw(st.sampled_from([0.0, 0.0, 0.05, 0.1, 0.3, 1.0]))
    nan_rate = draw(st.sampled_from([0.0, 0.0, 0.1]))
    if discrete:
        x = rng.integers(0, draw(st.integers(1, 12)), n).astype(np.float64)
    else:
        x = np.round(rng.normal(size=n) * 10, draw(st.integers(0, 4)))
    z = (np.argsort(np.argsort(x, kind="stable"), kind="stable") + 0.5) / max(n, 1)
    y = np.searchsorted(np.sort(rng.uniform(size=k - 1)), z)
    flip = rng.uniform(size=n) < noise
    y[flip] = rng.integers(0, k, flip.sum())
    x[rng.uniform(size=n) < nan_rate] = np.nan
    return x, y.astype(np.int64), k


# ----------------------------------------------------------------------------- hand-worked


def test_hand_worked_example():
    # x = 1..20, y = eight 0s, then 1, 0, then ten 1s: |S| = 20, 9 zeros and 11 ones.
    x = np.arange(1.0, 21.0)
    y = np.array([0] * 8 + [1, 0] + [1] * 10)
    # Ent(S) = H(9/20) = -(0.45 log2 0.45 + 0.55 log2 0.55) = 0.992774
    # Candidate cuts (midpoints between consecutive values), best three:
    #   T = 10.5: S1 = x<=10 (9 zeros, 1 one), S2 = x>10 (10 ones, pure)
    #             E = 10/20 H(1/10) + 0 = 0.5 * 0.468996 = 0.234498   <- minimum
    #   T =  8.5: S1 = 8 zeros (pure), S2 = 1 zero + 11 ones
    #             E = 12/20 H(1/12) = 0.6 * 0.413817 = 0.248290
    #   T =  9.5: E = 9/20 H(1/9) + 11/20 H(1/11) = 0.226466 + 0.241723 = 0.468189
    # Gain = 0.992774 - 0.234498 = 0.758277.
    # MDL: k = 2, k1 = 2, k2 = 1;
    #   delta = log2(3^2 - 2) - (2 * 0.992774 - 2 * 0.468996 - 1 * 0)
    #         = 2.807355 - 1.047556 = 1.759799
    #   threshold = (log2(20 - 1) + delta) / 20 = (4.247928 + 1.759799) / 20 = 0.300386
    #   0.758277 > 0.300386: accept T = 10.5.
    # Left subset x = 1..10 (y = 0 x8, 1, 0): Ent = H(1/10) = 0.468996.
    #   Best cut T = 8.5: S1 = 8 zeros, S2 = {1, 0}: E = 2/10 * H(1/2) = 0.2; gain = 0.268996
    #   (T = 7.5 gives 3/10 H(1/3) = 0.275489, T = 9.5 gives 9/10 H(1/9) = 0.452932).
    #   k = 2, k1 = 1, k2 = 2: delta = log2(7) - (2 * 0.468996 - 2 * 1 - 1 * 0) = 3.869364
    #   threshold = (log2(9) + 3.869364) / 10 = (3.169925 + 3.869364) / 10 = 0.703929
    #   0.268996 <= 0.703929: reject; the left subset stays one interval.
    # Right subset (ten 1s) is pure: Gain = 0, no cut.
    cuts = mdl_cut_points(x, y, 2)
    assert cuts.tolist() == [10.5]
    assert _weka_reference(x, y, 2) == [10.5]
    # with the borderline rows removed the left part is pure and the cut moves to 8.5
    keep = (x != 9) & (x != 10)
    assert mdl_cut_points(x[keep], y[keep], 2).tolist() == [(8 + 11) / 2]


def test_mdl_rejects_uninformative_split():
    # x = 1..8, y = 0 1 0 1 0 1 0 1. Best cut T = 1.5 (S1 = {0}, S2 = 3 zeros, 4 ones):
    #   E = 7/8 H(3/7) = 0.875 * 0.985228 = 0.862075, gain = 1 - 0.862075 = 0.137925
    #   delta = log2(7) - (2 * 1 - 1 * 0 - 2 * 0.985228) = 2.807355 - 0.029544 = 2.777811
    #   threshold = (log2(7) + 2.777811) / 8 = (2.807355 + 2.777811) / 8 = 0.698146 > gain.
    x = np.arange(1.0, 9.0)
    y = np.array([0, 1] * 4)
    assert mdl_cut_points(x, y, 2).size == 0


def test_separable_two_classes_one_cut_between():
    rng = np.random.default_rng(3)
    a = rng.uniform(0, 1, 40)
    b = rng.uniform(2, 3, 40)
    x = np.concatenate([a, b])
    y = np.array([0] * 40 + [1] * 40)
    perm = rng.permutation(80)
    cuts = mdl_cut_points(x[perm], y[perm], 2)
    assert cuts.size == 1
    assert cuts[0] == (a.max() + b.min()) / 2
    codes = apply_cut_points(x, cuts)
    assert (codes == y).all()


def test_iris_matches_weka():
    # Weka's supervised Discretize (default Fayyad & Irani MDL) on iris.arff yields the bins
    #   sepallength (-inf-5.55] (5.55-6.15] (6.15-inf)
    #   sepalwidth  (-inf-2.95] (2.95-3.35] (3.35-inf)
    #   petallength (-inf-2.45] (2.45-4.75] (4.75-inf)
    #   petalwidth  (-inf-0.8]  (0.8-1.75]  (1.75-inf)
    # as reproduced in public code that hard-codes the discretised iris header of Weka's
    # output (nominal labels '(-inf-2.45]', '(2.45-4.75]', '(4.75-inf)', ...; Weka prints
    # cut points with 6 decimals). The same cuts come out of sklearn's corrected iris rows.
    from fastpath.io import read_table

    t = read_table(DATA / "io_iris.arff")
    y = t.frame["class"].cat.codes.to_numpy()
    expected = {
        "sepallength": [5.55, 6.15],
        "sepalwidth": [2.95, 3.35],
        "petallength": [2.45, 4.75],
        "petalwidth": [0.8, 1.75],
    }
    for col, cuts in expected.items():
        got = mdl_cut_points(t.frame[col].to_numpy(), y, 3, name=col)
        np.testing.assert_allclose(got, cuts, rtol=0, atol=1e-12, err_msg=col)
        assert got.tolist() == _weka_reference(t.frame[col].to_numpy(), y, 3)


# ----------------------------------------------------------------------------- references


@settings(max_examples=300, deadline=None)
@given(labelled_columns())
def test_matches_weka_transcription(data):
    x, y, k = data
    got = mdl_cut_points(x, y, k)
    assert got.tolist() == _weka_reference(x, y, k)


@settings(max_examples=200, deadline=None)
@given(labelled_columns(discrete=False))
def test_matches_textbook_formula(data):
    x, y, k = data
    ref, ambiguous = _textbook_reference(x, y, k)
    assume(not ambiguous)
    np.testing.assert_allclose(mdl_cut_points(x, y, k), ref, rtol=0, atol=0)


@settings(max_examples=200, deadline=None)
@given(labelled_columns())
def test_properties(data):
    x, y, k = data
    cuts = mdl_cut_points(x, y, k)
    assert cuts.dtype == np.float64
    finite = x[~np.isnan(x)]
    if cuts.size:
        assert np.all(np.diff(cuts) > 0)
        assert finite.min() < cuts[0] and cuts[-1] < finite.max()
        # each cut is the midpoint of two consecutive distinct values
        u = np.unique(finite)
        mids = (u[:-1] + u[1:]) / 2
        assert np.isin(cuts, mids).all()
    codes = apply_cut_points(x, cuts)
    assert codes.dtype == np.int64
    nan = np.isnan(x)
    assert (codes[nan] == -1).all()
    assert ((codes[~nan] >= 0) & (codes[~nan] <= cuts.size)).all()
    order = np.argsort(x[~nan], kind="stable")
    assert np.all(np.diff(codes[~nan][order]) >= 0)  # monotone in x
    # row order and NaN rows do not matter
    perm = np.random.default_rng(0).permutation(len(x))
    assert mdl_cut_points(x[perm], y[perm], k).tolist() == cuts.tolist()
    assert mdl_cut_points(x[~nan], y[~nan], k).tolist() == cuts.tolist()
    # unused class codes do not matter
    assert mdl_cut_points(x, y, k + 3).tolist() == cuts.tolist()


# ----------------------------------------------------------------------------- edge cases


def test_trivial_inputs():
    assert mdl_cut_points(np.array([]), np.array([], dtype=int), 2).size == 0
    assert mdl_cut_points(np.array([1.0]), np.array([1]), 2).size == 0
    assert mdl_cut_points(np.full(50, 3.0), np.arange(50) % 2, 2).size == 0  # constant
    assert mdl_cut_points(np.full(10, np.nan), np.zeros(10, dtype=int), 1).size == 0
    assert mdl_cut_points(np.arange(30.0), np.zeros(30, dtype=int), 1).size == 0  # one class
    # integer x and float-coded y are accepted
    cuts = mdl_cut_points(np.repeat([1, 2], 20), np.repeat([0.0, 1.0], 20), 2)
    assert cuts.tolist() == [1.5]


def test_input_errors():
    x = np.array([1.0, 2.0, np.inf])
    y = np.array([0, 1, 1])
    with pytest.raises(ValueError, match=r"column 'age' contains \+inf"):
        mdl_cut_points(x, y, 2, name="age")
    with pytest.raises(ValueError, match="x contains -inf"):
        mdl_cut_points(-x, y, 2)
    with pytest.raises(ValueError, match="class code 2 outside"):
        mdl_cut_points(np.arange(3.0), np.array([0, 1, 2]), 2)
    with pytest.raises(ValueError, match="class code -1 outside"):
        mdl_cut_points(np.arange(3.0), np.array([0, -1, 1]), 2)
    with pytest.raises(ValueError, match="integer class codes"):
        mdl_cut_points(np.arange(3.0), np.array([0, np.nan, 1]), 2)
    with pytest.raises(ValueError, match="3 rows but y has 2"):
        mdl_cut_points(np.arange(3.0), np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="numeric"):
        mdl_cut_points(np.array(["a", "b"]), np.array([0, 1]), 2)


def test_huge_values_midpoint_does_not_overflow():
    x = np.array([1e308] * 20 + [1.7e308] * 20)
    y = np.array([0] * 20 + [1] * 20)
    cuts = mdl_cut_points(x, y, 2)
    assert cuts.size == 1 and np.isfinite(cuts[0]) and 1e308 < cuts[0] < 1.7e308


def test_apply_cut_points_convention():
    cuts = np.array([2.45, 4.75])
    x = np.array([1.0, 2.45, 2.4500001, 4.75, 5.0, np.nan, -np.inf, np.inf])
    # Weka: value <= cut goes to the lower bin, i.e. bins (-inf, 2.45], (2.45, 4.75], (4.75, inf)
    assert apply_cut_points(x, cuts).tolist() == [0, 0, 1, 1, 2, -1, 0, 2]
    assert apply_cut_points(x, np.array([])).tolist() == [0, 0, 0, 0, 0, -1, 0, 0]
    with pytest.raises(ValueError, match="strictly increasing"):
        apply_cut_points(x, np.array([2.0, 1.0]))
    with pytest.raises(ValueError, match="strictly increasing"):
        apply_cut_points(x, np.array([1.0, np.inf]))


def test_speed_100k_rows():
    rng = np.random.default_rng(1)
    n = 100_000
    x = rng.normal(size=n).round(3)
    y = (x + rng.normal(size=n) > 0).astype(np.int64) + (x > 1.5)
    mdl_cut_points(x[:100], y[:100], 3)  # compile / load the numba cache
    t0 = time.perf_counter()
    for _ in range(6):
        cuts = mdl_cut_points(x, y, 3)
    elapsed = time.perf_counter() - t0
    assert cuts.size > 0
    assert elapsed < 3.0, f"6 x 100k rows took {elapsed:.2f} s"  # ~0.1 s on a dev machine


# ----------------------------------------------------------------------------- stochastic MDL


def _stochastic_tools(x, y, n_classes, tol=1e-9):
    """Plain-Python stochastic MDL (ESKDB) from the definition, independent of the kernel.

    Works on the sorted rows with probabilities and ``log2``. ``candidates(a, b)`` lists
    ``(cut, i, gain, threshold)`` for every value change of rows ``a..b-1``; a cut is
    admissible iff ``gain > 0`` and ``gain > threshold``. ``near_tie[0]`` becomes True when a
    gain comes within ``tol`` of its threshold or of 0, where rounding legitimately decides.
    """
    pairs = sorted((float(a), int(b)) for a, b in zip(x, y, strict=True) if not math.isnan(a))
    xs = [p[0] for p in pairs]
    ys = [p[1] for p in pairs]
    near_tie = [False]

    def ent(labels):
        n = len(labels)
        counts = [labels.count(j) for j in range(n_classes)]
        return -sum(c / n * math.log2(c / n) for c in counts if c) if n else 0.0

    def candidates(a, b):
        labels = ys[a:b]
        n = b - a
        if n < 2:
            return []
        e_s, k = ent(labels), len(set(labels))
        out = []
        for i in range(a, b - 1):
            if xs[i] == xs[i + 1]:
                continue
            s1, s2 = ys[a : i + 1], ys[i + 1 : b]
            e1, e2 = ent(s1), ent(s2)
            gain = e_s - (len(s1) * e1 + len(s2) * e2) / n
            delta = math.log2(3**k - 2) - (k * e_s - len(set(s1)) * e1 - len(set(s2)) * e2)
            threshold = (math.log2(n - 1) + delta) / n
            if abs(gain - threshold) < tol or 0 < abs(gain) < tol:
                near_tie[0] = True
            out.append(((xs[i] + xs[i + 1]) / 2, i, gain, threshold))
        return out

    def admissible(a, b):
        return [(c, i, g - t) for c, i, g, t in candidates(a, b) if g > 0 and g > t]

    return xs, candidates, admissible, near_tie


def _exact_distribution(x, y, n_classes, weight="excess", forced=True):
    """Exact distribution {sorted cut tuple: probability} by recursing over every outcome.

    ``weight="uniform"`` draws uniformly among admissible cuts instead (an alternative the
    enumeration test must be able to tell apart). ``forced``: the authors' rule -- a whole
    column without an admissible cut gets one cut, drawn among its candidates in proportion to
    their gain (uniformly when no gain is positive), with ``weight="uniform"`` uniformly.
    Also returns the admissible cuts of every subset reachable with positive probability, keyed
    by ``(first row, end row)``.
    """
    xs, candidates, admissible, near_tie = _stochastic_tools(x, y, n_classes)
    memo, reached = {}, {}

    def dist(a, b):
        if (a, b) not in memo:
            adm = admissible(a, b)
            reached[a, b] = [c for c, _, _ in adm]
            res = {}
            cands = candidates(a, b)
            if not adm and forced and (a, b) == (0, len(xs)) and cands:
                gains = [max(g, 0.0) if weight == "excess" else 1.0 for _, _, g, _ in cands]
                if sum(gains) == 0.0:
                    gains = [1.0] * len(cands)
                for (c, _, _, _), g in zip(cands, gains, strict=True):
                    if g > 0.0:
                        res[(c,)] = res.get((c,), 0.0) + g / sum(gains)
            elif not adm:
                res[()] = 1.0
            else:
                ws = [w if weight == "excess" else 1.0 for _, _, w in adm]
                for (c, i, _), w in zip(adm, ws, strict=True):
                    for lo_cuts, pl in dist(a, i + 1).items():
                        for hi_cuts, ph in dist(i + 1, b).items():
                            key = (*lo_cuts, c, *hi_cuts)  # already sorted
                            res[key] = res.get(key, 0.0) + w / sum(ws) * pl * ph
            memo[a, b] = res
        return memo[a, b]

    out = dist(0, len(xs))
    assert not near_tie[0], "pick a column without near-ties"
    return out, reached


def _feasible(x, y, n_classes, cuts, forced=True):
    """Whether the stochastic recursion can output ``cuts`` (None: a near-tie decides)."""
    xs, candidates, admissible, near_tie = _stochastic_tools(x, y, n_classes)
    cuts = [float(c) for c in cuts]
    if forced and len(xs) >= 2 and not admissible(0, len(xs)):
        cands = candidates(0, len(xs))
        if any(0 < abs(g) < 1e-9 for _, _, g, _ in cands):
            return None  # whether a gain is positive is rounding's to decide
        positive = [c for c, _, g, _ in cands if g > 0] or [c for c, _, _, _ in cands]
        result = (len(cuts) == 1 and cuts[0] in positive) if cands else not cuts
        return None if near_tie[0] else result

    def ok(a, b):
        inside = [c for c in cuts if xs[a] < c < xs[b - 1]] if b - a >= 2 else []
        adm = admissible(a, b)
        if not inside:
            return not adm
        for c, i, _ in adm:  # any admissible cut of the set may have been drawn first here
            if c in inside and ok(a, i + 1) and ok(i + 1, b):
                return True
        return False

    result = ok(0, len(xs))
    return None if near_tie[0] else result


# sorted columns (x, y, n_classes) with several outcomes of probability >= 2 % and splits
# below the first; found by searching random columns with _exact_distribution
ENUMERATION_COLUMNS = [
    ([2, 3, 3, 4, 5, 5, 7, 8, 8, 8, 9, 11, 11, 12], [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2], 3),
    ([0, 1, 3, 3, 4, 4, 5, 6, 9, 9, 11, 12, 13, 13], [0, 0, 1, 0, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2], 3),
    ([2, 10, 1, 3, 7, 8, 7, 9, 0, 4, 6], [0, 1, 0, 0, 1, 1, 1, 1, 0, 0, 1], 2),
]


@pytest.mark.parametrize("column", range(len(ENUMERATION_COLUMNS)))
def test_stochastic_matches_exact_enumeration(column):
    x, y, k = ENUMERATION_COLUMNS[column]
    x, y = np.array(x, dtype=np.float64), np.array(y)
    exact, _ = _exact_distribution(x, y, k)
    assert math.isclose(sum(exact.values()), 1.0) and len(exact) >= 3
    _assert_draws_follow(x, y, k, exact, n_draws=4000, min_expected=80)


def _assert_draws_follow(x, y, k, exact, n_draws, min_expected):
    """The cuts of seeds ``0..n_draws-1`` follow ``exact`` ({cuts: probability}) by Pearson's
    chi-square, and reject the distribution of uniform draws (the power of the test)."""
    seen = {}
    for seed in range(n_draws):  # fixed seeds: the test is deterministic
        key = tuple(stochastic_mdl_cut_points(x, y, k, seed).tolist())
        seen[key] = seen.get(key, 0) + 1
    assert set(seen) <= set(exact)  # only outcomes of positive probability
    keys = sorted(exact)
    observed = np.array([seen.get(c, 0) for c in keys])
    # every expected count is >= min_expected, so the chi2(len - 1) law is accurate; a correct
    # sampler fails p < 1e-3 once in a thousand seed sets
    expected = np.array([exact[c] for c in keys]) * n_draws
    assert expected.min() >= min_expected
    assert chi2.sf(((observed - expected) ** 2 / expected).sum(), len(keys) - 1) > 1e-3
    # power: drawing uniformly (among admissible cuts, or the forced cut's candidates) would be
    # rejected with these draws
    uniform, _ = _exact_distribution(x, y, k, weight="uniform")
    alt = np.array([uniform.get(c, 0.0) for c in keys]) * n_draws
    assert chi2.sf(((observed - alt) ** 2 / np.maximum(alt, 1e-12)).sum(), len(keys) - 1) < 1e-6


def test_stochastic_one_admissible_cut_per_split_is_deterministic():
    # classes 0, 1, 2, 0 in blocks of 8 over 8 distinct values: three splits, each with
    # exactly one admissible cut among several candidates
    y = np.repeat([0, 1, 2, 0], 8)
    x = np.repeat(np.arange(8.0), 5)[:32]
    exact, reached = _exact_distribution(x, y, 3)
    assert all(len(cuts) <= 1 for cuts in reached.values())
    assert sum(len(cuts) for cuts in reached.values()) == 3
    (only,) = exact
    for seed in range(30):
        assert stochastic_mdl_cut_points(x, y, 3, seed).tolist() == list(only)
    assert mdl_cut_points(x, y, 3).tolist() == list(only)
    # a single candidate (two distinct values), admissible
    assert stochastic_mdl_cut_points(np.repeat([1.0, 2.0], 10), np.repeat([0, 1], 10), 2, 5
                                     ).tolist() == [1.5]


def test_stochastic_no_admissible_cut_no_split_without_the_forced_cut():
    y = np.repeat([0, 1, 0], 6)  # 0, 1, 0 blocks: no cut pays for itself
    x = np.repeat(np.arange(6.0), 3)
    exact, reached = _exact_distribution(x, y, 2, forced=False)
    assert exact == {(): 1.0} and reached == {(0, 18): []}
    for seed in range(30):
        assert stochastic_mdl_cut_points(x, y, 2, seed, forced_cut=False).size == 0
    for forced in (False, True):  # fewer than two distinct values: nothing to cut
        assert stochastic_mdl_cut_points(np.full(50, 3.0), np.arange(50) % 2, 2, 0,
                                         forced_cut=forced).size == 0
        assert stochastic_mdl_cut_points(np.array([]), np.array([], dtype=int), 2, 0,
                                         forced_cut=forced).size == 0
        assert stochastic_mdl_cut_points(np.full(9, np.nan), np.zeros(9, int), 1, 0,
                                         forced_cut=forced).size == 0
    assert stochastic_mdl_cut_points(np.arange(30.0), np.zeros(30, int), 1, 0,
                                     forced_cut=False).size == 0


# columns where no cut of the whole column passes the criterion, with several candidates of
# positive gain (and, in the second, a candidate of zero gain: 8 | 4 rows, 2 ones | 1 one)
FORCED_COLUMNS = [
    (np.repeat(np.arange(6.0), 3), np.repeat([0, 1, 0], 6), 2),
    (np.repeat(np.arange(6.0), 2), np.array([1, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0]), 2),
]


@pytest.mark.parametrize("column", range(len(FORCED_COLUMNS)))
def test_forced_cut_is_drawn_in_proportion_to_gain(column):
    # the authors' rule (MDLR.cutPointsForSubset): no admissible cut of the whole column, so
    # one cut drawn with probability gain / sum of gains, and not recursed into
    x, y, k = FORCED_COLUMNS[column]
    _, _, admissible, _ = _stochastic_tools(x, y, k)
    assert not admissible(0, x.size)
    exact, _ = _exact_distribution(x, y, k)
    assert math.isclose(sum(exact.values()), 1.0) and len(exact) >= 3
    assert all(len(cuts) == 1 for cuts in exact)
    assert len(exact) < len(_stochastic_tools(x, y, k)[1](0, x.size)) or column == 0
    _assert_draws_follow(x, y, k, exact, n_draws=3000, min_expected=50)  # zero gain: never


def test_forced_cut_without_any_gain_is_uniform():
    # one class: every gain is zero; the authors' code would leave the column one bin, here
    # the cut is drawn uniformly among the 29 candidates (a column of >= 2 values is cut)
    x, y = np.arange(30.0), np.zeros(30, int)
    draws = [stochastic_mdl_cut_points(x, y, 1, s).tolist() for s in range(2900)]
    assert all(len(c) == 1 and c[0] in x[:-1] + 0.5 for c in draws)
    observed = np.bincount([int(c[0]) for c in draws], minlength=29)
    assert chi2.sf(((observed - 100.0) ** 2 / 100.0).sum(), 28) > 1e-3
    # the same when the classes are mixed but no candidate separates them at all
    x, y = np.repeat([1.0, 2.0], 2), np.array([0, 1, 0, 1])
    assert stochastic_mdl_cut_points(x, y, 2, 0).tolist() == [1.5]
    assert stochastic_mdl_cut_points(x, y, 2, 0, forced_cut=False).size == 0


@settings(max_examples=100, deadline=None)
@given(labelled_columns(sizes=((2, 12), (12, 40))), st.integers(0, 2**32 - 1))
def test_a_column_of_two_values_or_more_has_a_cut(data, seed):
    x, y, k = data
    distinct = np.unique(x[~np.isnan(x)]).size
    assert (stochastic_mdl_cut_points(x, y, k, seed).size >= 1) == (distinct >= 2)
    unforced = stochastic_mdl_cut_points(x, y, k, seed, forced_cut=False)
    if unforced.size:  # the rule changes only columns that no admissible cut splits
        assert stochastic_mdl_cut_points(x, y, k, seed).tolist() == unforced.tolist()


@settings(max_examples=150, deadline=None)
@given(labelled_columns(sizes=((0, 12), (12, 40))), st.integers(0, 2**32 - 1))
def test_stochastic_outcome_is_feasible_and_covers_deterministic(data, seed):
    x, y, k = data
    cuts = stochastic_mdl_cut_points(x, y, k, seed)
    feasible = _feasible(x, y, k, cuts)
    assume(feasible is not None)
    assert feasible
    assert cuts.dtype == np.float64 and np.all(np.diff(cuts) > 0)
    # the deterministic MDL's first cut, when accepted, is admissible
    xs, candidates, admissible, _ = _stochastic_tools(x, y, k)
    det = mdl_cut_points(x, y, k)
    cands = candidates(0, len(xs))
    if cands:
        gains = sorted((g for _, _, g, _ in cands), reverse=True)
        assume(len(gains) == 1 or gains[0] - gains[1] > 1e-9)  # a unique best cut
        best = max(cands, key=lambda c: c[2])[0]
        admissible_cuts = [c for c, _, _ in admissible(0, len(xs))]
        assert (best in admissible_cuts) == (det.size > 0)
        if det.size:
            assert best in det.tolist() and cuts.size > 0
    else:
        assert det.size == 0 and cuts.size == 0
    # rows' order and NaN rows do not matter for a given seed
    perm = np.random.default_rng(seed).permutation(len(x))
    assert stochastic_mdl_cut_points(x[perm], y[perm], k, seed).tolist() == cuts.tolist()
    keep = ~np.isnan(x)
    assert stochastic_mdl_cut_points(x[keep], y[keep], k, seed).tolist() == cuts.tolist()


def test_stochastic_seeds_reproduce_and_differ():
    x, y, k = ENUMERATION_COLUMNS[0]
    x = np.array(x, dtype=np.float64)
    runs = [tuple(stochastic_mdl_cut_points(x, y, k, s).tolist()) for s in range(10)]
    assert runs == [tuple(stochastic_mdl_cut_points(x, y, k, s).tolist()) for s in range(10)]
    assert len(set(runs)) > 1
    # an int seed and the generator it names draw the same cuts; a generator advances by one
    # draw per call (so two calls on one generator are two independent draws)
    assert stochastic_mdl_cut_points(x, y, k, np.random.default_rng(3)).tolist() == list(runs[3])
    rng = np.random.default_rng(3)
    stochastic_mdl_cut_points(x, y, k, rng)
    ref = np.random.default_rng(3)
    ref.integers(0, 2**64, dtype=np.uint64)
    assert rng.bit_generator.state == ref.bit_generator.state
    # pinned outcomes: the draws are integer hashing of the seed, the same on every platform
    a, b, c = (4.5, 10.0), (6.0, 10.0), (6.0, 8.5, 10.0)
    assert runs == [a, b, a, b, a, b, a, b, b, c]
    assert stochastic_mdl_cut_points(x, y, k, None).size >= 1  # fresh entropy still works


def test_stochastic_input_errors_are_those_of_mdl_cut_points():
    bad = [
        (np.array([1.0, 2.0, np.inf]), np.array([0, 1, 1]), 2),
        (np.arange(3.0), np.array([0, 1, 2]), 2),
        (np.arange(3.0), np.array([0, np.nan, 1]), 2),
        (np.arange(3.0), np.array([0, 1]), 2),
        (np.array(["a", "b"]), np.array([0, 1]), 2),
        (np.arange(3.0), np.array([0, 1, 0]), 0),
    ]
    for x, y, k in bad:
        with pytest.raises(ValueError) as det:
            mdl_cut_points(x, y, k, name="age")
        with pytest.raises(ValueError) as sto:
            stochastic_mdl_cut_points(x, y, k, 0, name="age")
        assert str(sto.value) == str(det.value)
    for seed in (-1, 1.5, "0"):
        with pytest.raises(ValueError, match="random_state"):
            stochastic_mdl_cut_points(np.arange(3.0), np.array([0, 1, 0]), 2, seed)


def test_stochastic_same_cuts_from_threads():
    # the kernel releases the GIL and keeps no state: threads draw what a serial loop draws
    rng = np.random.default_rng(2)
    x = rng.normal(size=3000).round(2)
    y = (x + rng.normal(size=3000) > 0).astype(np.int64) + (x > 1)
    serial = [stochastic_mdl_cut_points(x, y, 3, s).tolist() for s in range(16)]
    with ThreadPoolExecutor(4) as pool:
        threaded = list(pool.map(lambda s: stochastic_mdl_cut_points(x, y, 3, s).tolist(),
                                 range(16)))
    assert threaded == serial
    assert len({tuple(c) for c in serial}) > 1


def _stochastic_by_definition(values, counts, seed, forced=True):
    """The stochastic recursion written from the module's own criteria: every candidate's
    gain is ``Ent(S) - _cond_entropy`` and its threshold ``_mdl_threshold``, each evaluated
    afresh on the halves' class counts (the kernel updates them incrementally); ``forced``:
    the whole column without an admissible cut gets one cut drawn in proportion to gain
    (uniformly if no gain is positive)."""
    from fastpath.encode import _discretize as D

    k = counts.shape[1]
    memo = D._xlnx_memo(counts)
    cuts, stack = [], [(0, counts.shape[0])]
    while stack:
        first, last = stack.pop()
        prior = counts[first:last].sum(axis=0)
        m = int(prior.sum())
        if m < 2:
            continue
        prior_ent = D._entropy(prior, k, memo)
        k_all = D._n_present(prior, k)
        classes_term, cuts_term = D._subset_terms(k_all, m)
        weights, gains = [], []
        for i in range(first, last - 1):
            left = counts[first:i + 1].sum(axis=0)
            right = prior - left
            gain = prior_ent - D._cond_entropy(left, right, k, memo)
            gains.append(max(gain, 0.0))
            w = 0.0
            if gain > 0.0:
                threshold = D._mdl_threshold(classes_term, cuts_term, prior_ent, k_all, left,
                                             right, m, k, memo)
                if gain > threshold:
                    w = gain - threshold
            weights.append(w)
        running = np.cumsum(weights)  # left to right, as the kernel adds
        if running.size and running[-1] == 0.0 and forced and (first, last) == (
                0, counts.shape[0]):
            u = D._subset_uniform(seed, first, last)
            total = np.cumsum(gains)
            if total[-1] > 0.0:
                above = np.flatnonzero(total > u * total[-1])
                chosen = int(above[0]) if above.size else int(np.flatnonzero(gains)[-1])
            else:
                chosen = min(int(u * len(gains)), len(gains) - 1)
            cuts.append(D._midpoint(values, values, chosen))
            continue
        if not running.size or running[-1] == 0.0:
            continue
        target = D._subset_uniform(seed, first, last) * running[-1]
        last_admissible = first + int(np.flatnonzero(np.asarray(weights) > 0)[-1])
        above = np.flatnonzero(running[: last_admissible - first] > target)
        chosen = first + int(above[0]) if above.size else last_admissible
        cuts.append(D._midpoint(values, values, chosen))
        stack += [(first, chosen + 1), (chosen + 1, last)]
    return sorted(cuts)


@settings(max_examples=60, deadline=None)
@given(n_classes=st.integers(1, 7), data=st.data())
def test_stochastic_kernel_cuts_where_its_criteria_evaluated_afresh_cut(n_classes, data):
    # the incremental sums of the kernel are the floats of the criteria: the same cuts exactly
    from fastpath.encode._discretize import _value_table, stochastic_mdl_kernel

    n = data.draw(st.integers(2, 80))
    x = np.array(data.draw(st.lists(st.integers(0, 25), min_size=n, max_size=n)), float)
    y = np.array(data.draw(st.lists(st.integers(0, n_classes - 1), min_size=n, max_size=n)))
    table = _value_table(x / 7.0, y, n_classes, None)
    assume(table is not None)
    values, counts = table
    for seed in (1, 2**63 + 5, 12345):
        for forced in (True, False):
            got = stochastic_mdl_kernel(values, values, counts, np.uint64(seed), forced)
            assert got.tolist() == _stochastic_by_definition(values, counts, np.uint64(seed),
                                                             forced)


# ====================================================================== random resolution
@st.composite
def _column(draw):
    n = draw(st.integers(1, 80))
    pool = draw(st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=30))
    x = np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    y = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)), dtype=np.int64)
    return x, y


@settings(max_examples=200, deadline=None)
@given(_column(), st.integers(0, 2**32 - 1))
def test_random_cuts_separate_distinct_values_within_the_bin_range(column, seed):
    from fastpath.encode import RANDOM_BINS, random_cut_points

    x, y = column
    cuts = random_cut_points(x, y, 3, seed)
    distinct = np.unique(x)
    lo, hi = RANDOM_BINS
    if distinct.size < 2:
        assert cuts.size == 0
        return
    assert min(lo, distinct.size) - 1 <= cuts.size <= min(hi, distinct.size) - 1
    assert np.all(np.diff(cuts) > 0)
    # every cut lies between two consecutive distinct values (a value equal to it goes below)
    below = np.searchsorted(distinct, cuts, side="right") - 1
    assert np.all(below >= 0) and np.all(below < distinct.size - 1)
    assert np.all(distinct[below] <= cuts) and np.all(cuts < distinct[below + 1])
    # unsupervised: the classes are not read; the same seed gives the same cuts
    np.testing.assert_array_equal(random_cut_points(x, np.zeros_like(y), 3, seed), cuts)
    np.testing.assert_array_equal(random_cut_points(x[::-1], y[::-1], 3, seed), cuts)


def test_random_cuts_fall_where_the_rows_are_and_their_number_is_uniform():
    from fastpath.encode import RANDOM_BINS, random_cut_points

    # 1,000 rows at 0 and one row at each of 1..99: a cut above 0 is drawn with probability
    # about 1000/1099 at the first draw, so almost every draw cuts just above 0
    x = np.r_[np.zeros(1000), np.arange(1.0, 100.0)]
    y = np.zeros(x.size, dtype=np.int64)
    draws = [random_cut_points(x, y, 1, seed) for seed in range(400)]
    assert np.mean([c[0] == 0.5 for c in draws]) > 0.9
    # the number of bins is uniform over RANDOM_BINS (chi-square, 11 cells, 400 draws)
    n_bins = np.array([c.size + 1 for c in draws])
    lo, hi = RANDOM_BINS
    observed = np.bincount(n_bins - lo, minlength=hi - lo + 1)
    assert observed.sum() == 400 and observed.size == hi - lo + 1
    expected = 400 / (hi - lo + 1)
    assert ((observed - expected) ** 2 / expected).sum() < chi2.ppf(0.999, hi - lo)


def test_random_cuts_draw_once_per_call_and_refuse_what_mdl_refuses():
    from fastpath.encode import random_cut_points

    rng_a, rng_b = np.random.default_rng(3), np.random.default_rng(3)
    random_cut_points(np.array([1.0]), np.array([0]), 2, rng_a)  # no cut, still one draw
    rng_b.integers(0, 2**64, dtype=np.uint64)
    assert rng_a.integers(1 << 30) == rng_b.integers(1 << 30)
    with pytest.raises(ValueError, match=r"column 'a'.*inf"):
        random_cut_points(np.array([1.0, np.inf]), np.array([0, 1]), 2, 0, name="a")
