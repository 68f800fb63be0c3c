"""The one-pass tree builder gives the arrays of the previous (numpy, level by level) one.

``reference_arrays`` is ``ContextTree.from_leaf_counts`` as it was before the numba builder
(commit e8e84ff), kept here as the slow reference: every array of every tree must stay the same
integers in the same order, since samplers, estimators and model files read them by position.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import ContextTree, CountAccumulator, TreeSpec
from fastpath.counts import _counting as counting

FIELDS = ("level_offsets", "parent", "branch_value", "counts", "child_offsets",
          "lookup_offsets", "child_lookup")


def reference_arrays(paths, counts, cards, k) -> dict[str, np.ndarray]:
    """The arrays the previous ``from_leaf_counts`` built (its code, checks left out)."""
    paths = np.asarray(paths, dtype=np.int64)
    counts = np.asarray(counts, dtype=np.int64)
    depth = len(cards)
    keep = counts.sum(axis=1) > 0
    paths, counts = paths[keep], counts[keep]
    if paths.shape[0]:
        order = np.lexsort(paths.T[::-1]) if depth else np.arange(paths.shape[0])
        paths, counts = paths[order], counts[order]
    n_leaf_rows = paths.shape[0]
    if depth and n_leaf_rows > 1:
        differs = paths[1:] != paths[:-1]
        first_diff = np.where(differs.any(axis=1), differs.argmax(axis=1), depth)
    else:
        first_diff = np.zeros(max(n_leaf_rows - 1, 0), dtype=np.int64)

    level_sizes = [1]
    parents = [np.array([-1], dtype=np.int64)]
    values = [np.array([-1], dtype=np.int64)]
    level_counts = [counts.sum(axis=0, keepdims=True)]
    prev_node_of_row = np.zeros(n_leaf_rows, dtype=np.int64)
    for d in range(1, depth + 1):
        starts_new = np.empty(n_leaf_rows, dtype=bool)
        if n_leaf_rows:
            starts_new[0] = True
            starts_new[1:] = first_diff < d
        start_rows = np.flatnonzero(starts_new)
        node_of_row = np.cumsum(starts_new) - 1
        parents.append(prev_node_of_row[start_rows])
        values.append(paths[start_rows, d - 1] if n_leaf_rows else np.empty(0, np.int64))
        level_counts.append(
            np.add.reduceat(counts, start_rows, axis=0)
            if start_rows.size
            else np.empty((0, k), np.int64)
        )
        level_sizes.append(start_rows.size)
        prev_node_of_row = node_of_row

    level_offsets = np.concatenate([[0], np.cumsum(level_sizes)]).astype(np.int64)
    parent = np.concatenate(
        [parents[0]] + [p + level_offsets[d - 1] for d, p in enumerate(parents) if d > 0]
    )
    branch_value = np.concatenate(values)
    all_counts = np.concatenate(level_counts, axis=0)
    n_nodes = int(level_offsets[-1])

    n_children = np.bincount(parent[1:], minlength=n_nodes) if n_nodes > 1 else np.zeros(
        n_nodes, np.int64
    )
    child_offsets = np.empty(n_nodes + 1, dtype=np.int64)
    child_offsets[0] = 1
    child_offsets[1:] = 1 + np.cumsum(n_children)

    node_depth = np.repeat(np.arange(depth + 1), level_sizes)
    internal = node_depth < depth
    slot_sizes = np.zeros(n_nodes, dtype=np.int64)
    if depth:
        slot_sizes[internal] = np.asarray(cards, dtype=np.int64)[node_depth[internal]]
    lookup_offsets = np.where(internal, np.cumsum(slot_sizes) - slot_sizes, -1)
    child_lookup = np.full(int(slot_sizes.sum()), -1, dtype=np.int64)
    if n_nodes > 1:
        nodes = np.arange(1, n_nodes)
        child_lookup[lookup_offsets[parent[nodes]] + branch_value[nodes]] = nodes
    return {
        "level_offsets": level_offsets,
        "parent": parent,
        "branch_value": branch_value,
        "counts": all_counts,
        "child_offsets": child_offsets,
        "lookup_offsets": lookup_offsets,
        "child_lookup": child_lookup,
    }


def assert_same_arrays(tree: ContextTree, expected: dict[str, np.ndarray]) -> None:
    for name in FIELDS:
        got = getattr(tree, name)
        want = expected[name]
        assert got.dtype == np.int64, name
        assert got.shape == want.shape, name
        np.testing.assert_array_equal(got, want, err_msg=name)
        assert got.flags.c_contiguous and not got.flags.writeable, name


@st.composite
def leaf_tables(draw):
    """Leaf rows as callers pass them: any order, repeated paths, all-zero rows, depth 0,
    branches of cardinality 1, and no rows at all."""
    depth = draw(st.integers(0, 5))
    cards = tuple(draw(st.lists(st.integers(1, 4), min_size=depth, max_size=depth)))
    k = draw(st.integers(1, 4))
    n = draw(st.integers(0, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    paths = np.stack([rng.integers(0, c, n) for c in cards], axis=1) if depth else np.zeros(
        (n, 0), np.int64)
    # few distinct paths so that repeats are common; a third of the rows counts nothing
    if n and draw(st.booleans()):
        paths = paths[rng.integers(0, max(1, n // 4), n)]
    counts = rng.integers(0, 3, (n, k))
    counts[rng.random(n) < 0.33] = 0
    if draw(st.booleans()):
        # sorted, as CountAccumulator stores its leaves
        order = np.lexsort(paths.T[::-1]) if depth else np.arange(n)
        paths, counts = paths[order], counts[order]
    return paths.astype(np.int64), counts.astype(np.int64), cards, k


@settings(max_examples=300, deadline=None)
@given(leaf_tables())
def test_from_leaf_counts_gives_the_reference_arrays(table):
    paths, counts, cards, k = table
    tree = ContextTree.from_leaf_counts(paths, counts, cards, k)
    assert_same_arrays(tree, reference_arrays(paths, counts, cards, k))
    assert tree.branch_cardinalities == cards and tree.n_values == k


@settings(max_examples=100, deadline=None)
@given(leaf_tables(), st.data())
def test_top_levels_of_deeper_leaves_need_no_copy(table, data):
    """The private builder reads only the first len(cards) columns (projected kDB-K counts)."""
    paths, counts, cards, k = table
    depth = data.draw(st.integers(0, len(cards)))
    order = np.lexsort(paths.T[::-1]) if cards else np.arange(paths.shape[0])
    paths, counts = np.ascontiguousarray(paths[order]), np.ascontiguousarray(counts[order])
    tree = ContextTree._from_valid_leaves(paths, counts, cards[:depth], k)
    assert_same_arrays(tree, reference_arrays(paths[:, :depth], counts, cards[:depth], k))


def _random_counting(seed: int) -> tuple[np.ndarray, np.ndarray, list[TreeSpec]]:
    """Random codes and class codes, and the class tree plus one tree per attribute whose
    parents are a random prefix of the other attributes."""
    rng = np.random.default_rng(seed)
    n_cols = int(rng.integers(1, 5))
    cards = rng.integers(1, 4, n_cols).tolist()
    n_classes = int(rng.integers(1, 4))
    n = int(rng.integers(1, 50))
    codes = np.stack([rng.integers(0, c, n) for c in cards], axis=1).astype(np.int64)
    y = rng.integers(0, n_classes, n).astype(np.int64)
    specs = [TreeSpec(-1, (), n_classes, ())]
    for child in range(n_cols):
        cond = [c for c in range(n_cols) if c != child][: int(rng.integers(0, n_cols))]
        specs.append(TreeSpec(child, (-1, *cond), cards[child],
                              (n_classes, *(cards[c] for c in cond))))
    return codes, y, specs


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.booleans())
def test_accumulator_trees_match_the_reference(seed, sparse):
    """Dense blocks and sparse (merged) leaves alike give the reference trees."""
    codes, y, specs = _random_counting(seed)
    n = y.size
    with pytest.MonkeyPatch.context() as mp:
        if sparse:
            mp.setattr(counting, "DENSE_CELL_LIMIT", 0)
        acc = CountAccumulator(specs).update(codes[: n // 2 + 1], y[: n // 2 + 1])
        if n // 2 + 1 < n:
            acc.merge(CountAccumulator(specs).update(codes[n // 2 + 1 :], y[n // 2 + 1 :]))
        assert all(s.dense != sparse for s in specs)
    for i, s in enumerate(specs):
        paths, counts = acc.leaf_counts(i)
        assert_same_arrays(acc.tree(i),
                           reference_arrays(paths, counts, s.cardinalities, s.n_values))


def test_public_checks_stay():
    with pytest.raises(ValueError, match="non-negative"):
        ContextTree.from_leaf_counts([[0]], [[-1]], [2], 1)
    with pytest.raises(ValueError, match="must lie in"):
        ContextTree.from_leaf_counts([[2]], [[1]], [2], 1)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10_000), st.booleans(), st.data())
def test_batched_trees_equal_one_by_one(seed, sparse, data):
    """CountAccumulator.trees (one kernel call) gives the trees of CountAccumulator.tree."""
    codes, y, specs = _random_counting(seed)
    with pytest.MonkeyPatch.context() as mp:
        if sparse:
            mp.setattr(counting, "DENSE_CELL_LIMIT", data.draw(st.sampled_from([0, 20])))
        acc = CountAccumulator(specs).update(codes, y)
    ids = data.draw(st.lists(st.integers(0, len(specs) - 1), max_size=8))
    depths = [data.draw(st.integers(0, len(specs[i].cardinalities))) for i in ids]
    names = [(f"c{i}", tuple(f"v{d}" for d in range(h))) for i, h in zip(ids, depths, strict=True)]
    batch = acc.trees(ids, depths=depths, names=names)
    for tree, i, h, (child, cond) in zip(batch, ids, depths, names, strict=True):
        one = acc.tree(i, depth=h, child_name=child, conditioning_names=cond)
        assert_same_arrays(tree, {name: getattr(one, name) for name in FIELDS})
        assert tree.branch_cardinalities == one.branch_cardinalities
        assert (tree.n_values, tree.child_name, tree.conditioning_names) == (
            one.n_values, one.child_name, one.conditioning_names)
    flat = acc.flat_trees(ids, depths)
    for t, tree in enumerate(batch):
        lo, hi = flat.node_ptr[t], flat.node_ptr[t + 1]
        np.testing.assert_array_equal(flat.totals[lo:hi], tree.counts.sum(axis=1))
    assert acc.trees([]) == []


def test_pickled_accumulator_keeps_counting():
    """The observed-path flags survive pickling (as Dask ships accumulators) and merging."""
    import pickle

    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, (40, 3)).astype(np.int64)
    y = rng.integers(0, 2, 40).astype(np.int64)
    specs = [TreeSpec(0, (-1, 1, 2), 3, (2, 3, 3)), TreeSpec(1, (-1,), 3, (2,))]
    whole = CountAccumulator(specs).update(codes, y)
    part = pickle.loads(pickle.dumps(CountAccumulator(specs).update(codes[:10], y[:10])))
    part.update(codes[10:25], y[10:25])
    part.merge(pickle.loads(pickle.dumps(CountAccumulator(specs).update(codes[25:], y[25:]))))
    for got, want in zip(part.trees(), whole.trees(), strict=True):
        assert_same_arrays(got, {name: getattr(want, name) for name in FIELDS})
