"""ContextTree: layout invariants, back-off queries, tying groups."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import ContextTree, count_tree, tying_groups


@st.composite
def coded_rows(draw):
    depth = draw(st.integers(0, 4))
    cards = draw(st.lists(st.integers(1, 4), min_size=depth, max_size=depth))
    k = draw(st.integers(1, 4))
    n = draw(st.integers(1, 60))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cond = np.stack([rng.integers(0, c, n) for c in cards], axis=1) if depth else np.zeros((n, 0))
    child = rng.integers(0, k, n)
    return child, cond.astype(np.int64), k, cards


def brute_force_counts(child, cond, k):
    """Counts of every observed prefix, by dictionary."""
    out = {}
    for r in range(len(child)):
        for d in range(cond.shape[1] + 1):
            key = tuple(int(v) for v in cond[r, :d])
            out.setdefault(key, np.zeros(k, np.int64))[child[r]] += 1
    return out


@settings(max_examples=60, deadline=None)
@given(coded_rows())
def test_counts_match_brute_force_and_layout_invariants(data):
    child, cond, k, cards = data
    tree = count_tree(child, cond, k, cards)
    expected = brute_force_counts(child, cond, k)
    paths = tree.paths()
    depth = tree.node_depth
    assert tree.n_nodes == len(expected)
    for i in range(tree.n_nodes):
        key = tuple(int(v) for v in paths[i, : depth[i]])
        np.testing.assert_array_equal(tree.counts[i], expected[key])
    # counts are conserved from level to level
    for d in range(tree.depth):
        lo, hi = tree.level_offsets[d + 1], tree.level_offsets[d + 2]
        summed = np.zeros((tree.n_nodes, k), np.int64)
        np.add.at(summed, tree.parent[lo:hi], tree.counts[lo:hi])
        plo, phi = tree.level_offsets[d], tree.level_offsets[d + 1]
        np.testing.assert_array_equal(summed[plo:phi], tree.counts[plo:phi])
    # children are contiguous, sorted, and found through the lookup table
    for i in range(tree.n_nodes):
        kids = np.arange(tree.child_offsets[i], tree.child_offsets[i + 1])
        assert np.all(tree.parent[kids] == i)
        assert np.all(np.diff(tree.branch_value[kids]) > 0)
        for c in kids:
            assert tree.child_lookup[tree.lookup_offsets[i] + tree.branch_value[c]] == c
    # every node is found from its own path
    if tree.depth:
        full = tree.paths()[tree.leaves]
        np.testing.assert_array_equal(tree.find(full), np.arange(tree.n_nodes)[tree.leaves])


def test_find_backs_off_to_deepest_existing_node():
    paths = np.array([[0, 0], [0, 1], [1, 1]])
    tree = ContextTree.from_leaf_counts(paths, np.ones((3, 2), np.int64), [2, 3])
    node_01 = tree.find([[0, 1]])[0]
    assert tree.path(node_01) == (0, 1)
    # (1, 0) was never observed: back off to the node of class 1
    assert tree.path(tree.find([[1, 0]])[0]) == (1,)
    # an unknown value (-1) stops the descent
    assert tree.path(tree.find([[-1, 0]])[0]) == ()
    assert tree.path(tree.find([[0, -1]])[0]) == (0,)


def test_arrays_are_read_only():
    tree = count_tree(np.array([0, 1]), np.array([[0], [1]]), 2, [2])
    with pytest.raises(ValueError):
        tree.counts[0, 0] = 5
    with pytest.raises(ValueError):
        tree.parent[0] = 3


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="depth 1"):
        ContextTree.from_leaf_counts(np.array([[3]]), np.array([[1, 0]]), [2])
    with pytest.raises(ValueError, match="non-negative"):
        ContextTree.from_leaf_counts(np.array([[0]]), np.array([[-1, 0]]), [2])


def test_tying_groups():
    paths = np.array([[0, 0], [0, 1], [1, 1]])
    tree = ContextTree.from_leaf_counts(paths, np.ones((3, 2), np.int64), [2, 2])
    # nodes: root, y=0, y=1, (0,0), (0,1), (1,1)
    np.testing.assert_array_equal(tying_groups(tree, "level"), [-1, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(tying_groups(tree, "single"), [-1, 0, 0, 0, 0, 0])
    np.testing.assert_array_equal(tying_groups(tree, "none"), [-1, 0, 1, 2, 3, 4])
    np.testing.assert_array_equal(tying_groups(tree, "same-parent"), [-1, 0, 0, 1, 1, 2])
    with pytest.raises(ValueError, match="tying"):
        tying_groups(tree, "per-node")
