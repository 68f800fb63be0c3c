"""Counting: the one-pass accumulator agrees with per-table counting, chunks and merges add up."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import CountAccumulator, TreeSpec, count_tree
from fastpath.counts import _counting as counting


def _random_problem(seed, n=500, p=5):
    rng = np.random.default_rng(seed)
    cards = rng.integers(1, 5, p)
    X = np.stack([rng.integers(0, c, n) for c in cards], axis=1)
    y = rng.integers(0, 3, n)
    specs = [TreeSpec(-1, (), 3, ())]
    for i in range(p):
        parents = tuple(j for j in range(i) if rng.random() < 0.5)[:3]
        specs.append(TreeSpec(i, (-1, *parents), int(cards[i]),
                              (3, *(int(cards[j]) for j in parents))))
    return X, y, specs


def _direct(X, y, spec):
    cols = [y if c < 0 else X[:, c] for c in spec.conditioning]
    cond = np.stack(cols, axis=1) if cols else np.zeros((len(y), 0), np.int64)
    return count_tree(y if spec.child < 0 else X[:, spec.child], cond, spec.n_values,
                      spec.cardinalities)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_chunked_accumulator_equals_direct_counts(seed, n_chunks):
    X, y, specs = _random_problem(seed)
    acc = CountAccumulator(specs)
    for part in np.array_split(np.arange(len(y)), n_chunks):
        acc.update(X[part], y[part])
    assert acc.n_rows == len(y)
    for i, spec in enumerate(specs):
        got, want = acc.tree(i), _direct(X, y, spec)
        np.testing.assert_array_equal(got.counts, want.counts)
        np.testing.assert_array_equal(got.parent, want.parent)
        np.testing.assert_array_equal(got.branch_value, want.branch_value)
        assert got.counts[0].sum() == len(y)  # counts are conserved


def test_sparse_storage_matches_dense(monkeypatch):
    X, y, specs = _random_problem(7)
    dense = CountAccumulator(specs).update(X, y)
    monkeypatch.setattr(counting, "DENSE_CELL_LIMIT", 0)
    sparse_a = CountAccumulator(specs).update(X[:200], y[:200])
    sparse_b = CountAccumulator(specs).update(X[200:], y[200:])
    sparse_a.merge(sparse_b)
    assert not any(s.dense for s in specs)
    for i in range(len(specs)):
        np.testing.assert_array_equal(dense.tree(i).counts, sparse_a.tree(i).counts)


def test_out_of_range_codes_are_rejected():
    acc = CountAccumulator([TreeSpec(0, (-1,), 2, (2,))])
    with pytest.raises(ValueError, match="column 0"):
        acc.update(np.array([[2]]), np.array([0]))
    with pytest.raises(ValueError, match="class"):
        acc.update(np.array([[1]]), np.array([2]))
    with pytest.raises(ValueError, match="non-negative"):
        acc.update(np.array([[-1]]), np.array([0]))


def test_merge_requires_same_specs():
    a = CountAccumulator([TreeSpec(0, (-1,), 2, (2,))])
    b = CountAccumulator([TreeSpec(0, (-1,), 3, (2,))])
    with pytest.raises(ValueError, match="different"):
        a.merge(b)


@pytest.mark.parametrize("chunks", [1, 3])
def test_a_sparse_table_holds_its_distinct_paths_sorted_and_summed(chunks):
    # the first chunk's leaves are stored as count_leaves gives them (distinct, sorted), the
    # later ones merged by _compact: either way the paths _compact gives for every row at once
    rng = np.random.default_rng(chunks)
    n = 3000
    codes = np.stack([rng.integers(0, 5000, n), rng.integers(0, 3000, n),
                      rng.integers(0, 4, n)], axis=1)
    y = rng.integers(0, 3, n)
    spec = TreeSpec(2, (-1, 0, 1), 4, (3, 5000, 3000))
    assert not spec.dense
    acc = CountAccumulator([spec])
    for part in np.array_split(np.arange(n), chunks):
        acc.update(codes[part], y[part])
    paths, counts = acc.leaf_counts(0)
    cond = np.stack([y, codes[:, 0], codes[:, 1]], axis=1)
    want_paths, want_counts = counting._compact(*counting.count_leaves(codes[:, 2], cond, 4,
                                                                        (3, 5000, 3000)))
    np.testing.assert_array_equal(paths, want_paths)
    np.testing.assert_array_equal(counts, want_counts)
    assert (np.diff(paths[:, 0]) >= 0).all()
