"""fastpath.encode._sketch: the bounded class histogram behind out-of-core MDL discretisation.

While a column has at most ``max_bins`` distinct values the histogram is the exact table
value -> class counts (checked against ``np.unique`` and ``pandas.crosstab``), and its cut points
are exactly (bit for bit) ``mdl_cut_points`` of the raw column. In that regime the result does
not depend on how the rows were chunked, and merging is commutative and associative. In every
regime the class counts are conserved and the ranges stay sorted, disjoint and within
``max_bins``. ``grow`` pads zero class columns; ``remap_classes`` equals counting remapped labels.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from fastpath.encode import (
    ClassHistogram,
    apply_cut_points,
    mdl_cut_points,
    mdl_cut_points_from_counts,
    stochastic_mdl_cut_points,
    stochastic_mdl_cut_points_from_counts,
)

MAX_BINS = 64


@st.composite
def labelled_rows(draw, max_distinct=MAX_BINS, n_classes=None, min_size=1, max_size=150):
    """A numeric column with few distinct values (from a pool) and class codes."""
    k = n_classes or draw(st.integers(1, 4))
    pool = draw(st.lists(st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False),
                         min_size=1, max_size=max_distinct, unique=True))
    n = draw(st.integers(min_size, max_size))
    idx = draw(st.lists(st.integers(0, len(pool) - 1), min_size=n, max_size=n))
    ys = draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
    # class-dependent shift of the pool index makes MDL find cut points now and then
    x = np.array([pool[(i + 3 * c) % len(pool)] for i, c in zip(idx, ys, strict=True)])
    return x, np.array(ys, dtype=np.int64), k


def _hist(x, y, k=0, max_bins=MAX_BINS):
    return ClassHistogram(k, max_bins).update(x, y)


def _state(h):
    return h.lo.copy(), h.hi.copy(), h.counts.copy(), h.n_rows


def _assert_same(a, b):
    for u, v in zip(_state(a), _state(b), strict=True):
        np.testing.assert_array_equal(u, v)


def _split(data, n, x, y):
    cuts = sorted(data.draw(st.lists(st.integers(0, len(x)), max_size=n)))
    bounds = [0, *cuts, len(x)]
    return [(x[a:b], y[a:b]) for a, b in itertools.pairwise(bounds)]


# ====================================================================== the exact regime
@settings(max_examples=150, deadline=None)
@given(labelled_rows())
def test_exact_histogram_is_the_value_by_class_table(rows):
    x, y, k = rows
    h = _hist(x, y, k)
    table = pd.crosstab(x, y).reindex(columns=range(k), fill_value=0)
    assert h.exact and h.n_rows == x.size
    np.testing.assert_array_equal(h.lo, np.unique(x))
    np.testing.assert_array_equal(h.hi, np.unique(x))
    np.testing.assert_array_equal(h.counts, table.to_numpy())


@settings(max_examples=150, deadline=None)
@given(labelled_rows())
def test_exact_histogram_cut_points_equal_mdl_on_the_raw_column(rows):
    x, y, k = rows
    h = _hist(x, y, k)
    ref = mdl_cut_points(x, y, k)
    np.testing.assert_array_equal(h.cut_points(), ref)  # bit for bit


def test_cut_points_are_found_where_mdl_finds_them():
    x = np.repeat([0.0, 1.0, 2.0, 10.0, 11.0, 12.0], 20)
    y = (x > 5).astype(np.int64)
    h = _hist(x, y, 2)
    np.testing.assert_array_equal(h.cut_points(), [6.0])
    np.testing.assert_array_equal(h.cut_points(), mdl_cut_points(x, y, 2))


@settings(max_examples=100, deadline=None)
@given(labelled_rows(), st.data())
def test_updating_in_chunks_equals_updating_at_once(rows, data):
    x, y, k = rows
    whole = _hist(x, y, k)
    chunked = ClassHistogram(k, MAX_BINS)
    for xc, yc in _split(data, 6, x, y):
        chunked.update(xc, yc)
    _assert_same(chunked, whole)


@settings(max_examples=100, deadline=None)
@given(labelled_rows(n_classes=3), st.data())
def test_merge_is_commutative_and_associative(rows, data):
    x, y, _ = rows
    parts = _split(data, 2, x, y)
    while len(parts) < 3:
        parts.append((x[:0], y[:0]))
    copies = [[_hist(px, py, 3) for px, py in parts] for _ in range(3)]
    (a1, b1, c1), (a2, b2, c2), (a3, b3, c3) = copies
    ab_c = a1.merge(b1).merge(c1)
    a_bc = a2.merge(b3.merge(c2))
    cba = c3.merge(b2).merge(a3)
    _assert_same(ab_c, a_bc)
    _assert_same(ab_c, cba)
    _assert_same(ab_c, _hist(x, y, 3))


def test_merge_widens_to_the_larger_class_count():
    a = _hist([1.0, 2.0], [0, 0])
    b = _hist([2.0, 3.0], [2, 1])
    a.merge(b)
    np.testing.assert_array_equal(a.counts, [[1, 0, 0], [1, 0, 1], [0, 1, 0]])


# ====================================================================== the compressed regime
@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.integers(0, 2)),
                min_size=1, max_size=300),
       st.integers(4, 16), st.data())
def test_counts_are_conserved_and_ranges_stay_sorted_in_every_regime(rows, max_bins, data):
    x = np.array([v for v, _ in rows])
    y = np.array([c for _, c in rows])
    parts = _split(data, 4, x, y)
    merged = ClassHistogram(0, max_bins)
    for px, py in parts:
        merged.merge(ClassHistogram(0, max_bins).update(px, py))
    chunked = ClassHistogram(0, max_bins)
    for px, py in parts:
        chunked.update(px, py)
    for h in (merged, chunked):
        assert h.n_bins <= max_bins and h.n_rows == x.size
        np.testing.assert_array_equal(h.counts.sum(axis=0), np.bincount(y, minlength=h.n_classes))
        assert np.all(h.lo <= h.hi) and np.all(h.hi[:-1] < h.lo[1:])
        cuts = h.cut_points()
        assert np.all(np.diff(cuts) > 0)
        # a cut splits the rows (a value equal to it goes below): some at or below, some above
        assert all((x <= c).any() and (x > c).any() for c in cuts)
    # chunk by chunk, every row lies in a range
    j = np.searchsorted(chunked.lo, x, side="right") - 1
    assert np.all(j >= 0) and np.all(x <= chunked.hi[j])


def test_many_distinct_values_compress_to_equal_frequency_ranges():
    rng = np.random.default_rng(0)
    x = rng.normal(size=5000)
    y = rng.integers(0, 2, 5000)
    h = _hist(x, y, 2, max_bins=64)
    assert not h.exact and h.n_bins <= 64
    sizes = h.counts.sum(axis=1)
    assert sizes.max() <= 3 * 5000 / 32  # about max_bins / 2 ranges of equal row counts


# ====================================================================== grow, remap, checks
@settings(max_examples=50, deadline=None)
@given(labelled_rows(n_classes=2), st.integers(0, 6))
def test_grow_pads_zero_columns_and_never_shrinks(rows, k):
    x, y, _ = rows
    h = _hist(x, y, 2)
    before = h.counts.copy()
    h.grow(k)
    assert h.n_classes == max(k, 2)
    np.testing.assert_array_equal(h.counts[:, :2], before)
    assert not h.counts[:, 2:].any()
    # padding classes with no rows leaves the cut points unchanged
    np.testing.assert_array_equal(h.cut_points(), _hist(x, y, 2).cut_points())


@settings(max_examples=80, deadline=None)
@given(labelled_rows(n_classes=3), st.permutations(range(5)))
def test_remap_classes_equals_counting_remapped_labels(rows, perm):
    x, y, _ = rows
    mapping = np.array(perm[:3])
    h = _hist(x, y, 3).remap_classes(mapping, 5)
    _assert_same(h, _hist(x, mapping[y], 5))


def test_cut_points_take_the_final_class_order():
    x = np.repeat([0.0, 1.0, 2.0, 3.0], 5)
    y = np.array([1, 1, 0, 2] * 5)
    provisional = np.array([2, 0, 1])  # provisional column of the class seen first, ...
    h = _hist(x, provisional[y], 3)
    np.testing.assert_array_equal(h.cut_points(class_order=provisional), mdl_cut_points(x, y, 3))


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="max_bins must be an integer >= 4"):
        ClassHistogram(2, max_bins=3)
    h = ClassHistogram(2)
    with pytest.raises(ValueError, match="finite"):
        h.update([1.0, np.inf], [0, 1])
    with pytest.raises(ValueError, match="non-negative"):
        h.update([1.0], [-1])
    with pytest.raises(ValueError, match="same length"):
        h.update([1.0, 2.0], [0])
    with pytest.raises(ValueError, match="mapping has 1 entries for 2"):
        _hist([1.0], [1]).remap_classes([0], 2)
    with pytest.raises(ValueError, match="sorted and disjoint"):
        mdl_cut_points_from_counts([0.0, 1.0], [1.5, 2.0], [[1, 0], [0, 1]])
    assert h.n_rows == 0 and h.n_bins == 0 and h.cut_points().size == 0


# ====================================================================== stochastic MDL (ESKDB)
def _stochastic(h, seed):
    return stochastic_mdl_cut_points_from_counts(h.lo, h.hi, h.counts, seed)


@settings(max_examples=150, deadline=None)
@given(labelled_rows(), st.integers(0, 2**32 - 1))
def test_stochastic_exact_histogram_equals_stochastic_mdl_on_the_raw_column(rows, seed):
    # fewer distinct values than max_bins: one range per value, the draws are keyed the same
    x, y, k = rows
    h = _hist(x, y, k)
    assert h.exact
    np.testing.assert_array_equal(_stochastic(h, seed), stochastic_mdl_cut_points(x, y, k, seed))


def test_stochastic_from_counts_finds_several_outcomes_like_the_column():
    # five outcomes of probability 4-52 % (tests/test_discretize.py enumerates them)
    x = np.array([2.0, 3, 3, 4, 5, 5, 7, 8, 8, 8, 9, 11, 11, 12])
    y = np.array([0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 2, 2, 2])
    h = _hist(x[::-1], y[::-1], 3)
    outcomes = {tuple(_stochastic(h, s).tolist()) for s in range(40)}
    assert len(outcomes) > 1
    for s in range(40):
        np.testing.assert_array_equal(_stochastic(h, s), stochastic_mdl_cut_points(x, y, 3, s))


@settings(max_examples=100, deadline=None)
@given(labelled_rows(n_classes=3), st.data(), st.integers(0, 2**32 - 1))
def test_stochastic_cut_points_do_not_depend_on_chunking(rows, data, seed):
    x, y, k = rows
    whole = _stochastic(_hist(x, y, k), seed)
    chunked = ClassHistogram(k, MAX_BINS)
    for xc, yc in _split(data, 6, x, y):
        chunked.update(xc, yc)
    np.testing.assert_array_equal(_stochastic(chunked, seed), whole)
    parts = [_hist(xc, yc, k) for xc, yc in _split(data, 4, x, y)]
    merged = parts[0]
    for part in parts[1:]:
        merged.merge(part)
    np.testing.assert_array_equal(_stochastic(merged, seed), whole)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(-1e6, 1e6, allow_nan=False), st.integers(0, 2)),
                min_size=1, max_size=400), st.integers(0, 2**32 - 1))
# two neighbouring floats: their midpoint rounds up to the upper one, so the cut is the lower
@example(rows=[(1000000.0, 0), (999999.9999999999, 0)], seed=0)
def test_stochastic_compressed_cuts_are_range_boundaries_and_reproduce(rows, seed):
    x = np.array([r[0] for r in rows])
    y = np.array([r[1] for r in rows], dtype=np.int64)
    h = _hist(x, y, 3, max_bins=8)
    cuts = _stochastic(h, seed)
    np.testing.assert_array_equal(cuts, _stochastic(h, seed))  # same seed, same cuts
    assert np.all(np.diff(cuts) > 0)
    # a boundary is the midpoint of two neighbouring ranges, below the upper range (a value
    # equal to a cut goes to the lower bin): the lower range's top where the midpoint rounds up
    mid = (h.hi[:-1] + h.lo[1:]) / 2
    boundaries = np.where(mid >= h.lo[1:], h.hi[:-1], mid)
    assert np.isin(cuts, boundaries).all()
    # the deterministic MDL's split is always admissible: whenever it cuts, so does this
    if mdl_cut_points_from_counts(h.lo, h.hi, h.counts).size:
        assert cuts.size > 0


def test_stochastic_from_counts_refuses_what_the_deterministic_refuses():
    bad = [
        ([0.0, 1.0], [1.5, 2.0], [[1, 0], [0, 1]]),
        ([0.0, np.inf], [0.0, np.inf], [[1, 0], [0, 1]]),
        ([0.0, 1.0], [0.0, 1.0], [[1, 0], [0, -1]]),
        ([0.0, 1.0], [0.0, 1.0], [[1, 0]]),
        ([0.0, 1.0], [0.0, 1.0], np.zeros((2, 0), dtype=np.int64)),
    ]
    for lo, hi, counts in bad:
        with pytest.raises(ValueError) as det:
            mdl_cut_points_from_counts(lo, hi, counts, name="age")
        with pytest.raises(ValueError) as sto:
            stochastic_mdl_cut_points_from_counts(lo, hi, counts, 0, name="age")
        assert str(sto.value) == str(det.value)
    with pytest.raises(ValueError, match="random_state"):
        stochastic_mdl_cut_points_from_counts([0.0, 1.0], [0.0, 1.0], [[1, 0], [0, 1]], -3)
    assert stochastic_mdl_cut_points_from_counts([0.0], [1.0], [[3, 4]], 0).size == 0


@pytest.mark.parametrize("pair", [(0.0, 5e-324), (5e-324, 1e-323), (-1e-323, -5e-324)])
def test_a_cut_between_adjacent_subnormal_values_separates_them(pair):
    """Their rounded midpoint is one of them: the cut must then be the lower one."""
    x = np.repeat(np.array(pair), 20)
    y = np.repeat([0, 1], 20)
    for cuts in (mdl_cut_points(x, y, 2), ClassHistogram(0, 8).update(x, y).cut_points()):
        assert cuts.size == 1
        np.testing.assert_array_equal(apply_cut_points(x, cuts), y)


@settings(max_examples=100, deadline=None)
@given(labelled_rows(), st.integers(0, 2**32 - 1))
def test_exact_histogram_random_cuts_equal_the_raw_column_s(rows, seed):
    from fastpath.encode import random_cut_points

    x, y, k = rows
    np.testing.assert_array_equal(_hist(x, y, k).random_cut_points(seed),
                                  random_cut_points(x, y, max(k, 1), seed))
