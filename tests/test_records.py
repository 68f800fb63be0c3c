"""Node records (fastpath.counts._records): a tree read through its records is the tree.

For every node of every tree: the record holds the node's row count and counts, and
``find_child`` gives the record of the child ``ContextTree.child_lookup`` names, for every
value of the next variable, whether the node keeps its children as slots or as searched pairs.
The records built from an accumulator's leaves are the integers built from its trees.
"""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.counts import CountAccumulator, TreeSpec
from fastpath.counts._records import (
    SPARSE_MARGIN,
    accumulated_records,
    find_child,
    tree_records,
)


def _counted(seed: int, n_rows: int, cards: list[int], n_classes: int):
    """An accumulator of every attribute's tree conditioned on the class and the attributes
    before it (up to three), with the codes it counted."""
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, c, n_rows) for c in cards], axis=1).astype(np.int64)
    y = rng.integers(0, n_classes, n_rows).astype(np.int64)
    specs = []
    for j, card in enumerate(cards):
        parents = list(range(max(0, j - 3), j))[::-1]
        specs.append(TreeSpec(j, (-1, *parents), card,
                              (n_classes, *[cards[p] for p in parents])))
    return CountAccumulator(specs).update(codes, y)


def _check_tree(records, root, depth, tree):
    """Every node's record against the tree's arrays (positions found through the records)."""
    kv = tree.n_values
    position = {0: root}
    for node in range(tree.n_nodes):
        q = position[node]
        assert records[q] == tree.counts[node].sum()
        np.testing.assert_array_equal(records[q + 1 : q + 1 + kv], tree.counts[node])
        if tree.lookup_offsets[node] < 0:
            continue
        level = int(np.searchsorted(tree.level_offsets, node, side="right")) - 1
        assert level < depth
        for v in range(tree.branch_cardinalities[level]):
            child = tree.child_lookup[tree.lookup_offsets[node] + v]
            found = find_child(records, q, kv, v)
            if child < 0:
                assert found == -1
            else:
                position[int(child)] = int(found)
    assert len(position) == tree.n_nodes  # every node reached from the root


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_rows=st.integers(0, 120),
       cards=st.lists(st.integers(1, 40), min_size=1, max_size=5),
       n_classes=st.integers(1, 4))
def test_records_are_the_trees(seed, n_rows, cards, n_classes):
    acc = _counted(seed, n_rows, cards, n_classes)
    trees = acc.trees()
    built = accumulated_records(acc)
    again = tree_records(trees)
    np.testing.assert_array_equal(built.records, again.records)
    np.testing.assert_array_equal(built.root, again.root)
    np.testing.assert_array_equal(built.depth, [len(t.branch_cardinalities) for t in trees])
    for t, tree in enumerate(trees):
        _check_tree(built.records, built.root[t], built.depth[t], tree)


def test_wide_parents_keep_pairs_and_narrow_ones_slots():
    """A parent of 300 values seen a few times per node: pairs (negative tag); the class's
    two values: slots (tag = number of values). Records are 32-bit here."""
    acc = _counted(0, 50, [3, 300, 2], 2)
    built = accumulated_records(acc)
    assert built.records.dtype == np.int32
    trees = acc.trees()
    t = 2  # P(x2 | class, x1, x0): its level 1 branches on x1 (300 values)
    tree = trees[t]
    kv = tree.n_values
    root = built.root[t]
    assert built.records[root + 1 + kv] == 2  # the class: direct slots
    child = find_child(built.records, root, kv, 0)
    tag = built.records[child + 1 + kv]
    n_children = tree.child_offsets[1 + 1] - tree.child_offsets[1]  # node 1's children
    assert 300 > 2 * n_children + SPARSE_MARGIN
    assert tag == -n_children - 1
    _check_tree(built.records, root, built.depth[t], tree)
