"""m-estimates with back-off, on hand-made counts."""

import numpy as np
import pytest

from fastpath.counts.context_tree import ContextTree
from fastpath.estimate.mestimate import m_estimate_table


def _tree():
    # P(X | y, x1), K = 2: leaves (y=0,x1=0): [3, 0]; (y=0,x1=1): [1, 1]; (y=1,x1=0): [0, 4]
    return ContextTree.from_leaf_counts(
        np.array([[0, 0], [0, 1], [1, 0]]), np.array([[3, 0], [1, 1], [0, 4]]), [2, 2]
    )


def test_m_estimate_at_every_node_by_hand():
    tree = _tree()
    table = m_estimate_table(tree, 1.0)
    node = {tree.path(i): i for i in range(tree.n_nodes)}
    np.testing.assert_allclose(table[node[()]], [(4 + 0.5) / 10, (5 + 0.5) / 10])
    np.testing.assert_allclose(table[node[(0,)]], [(4 + 0.5) / 6, (1 + 0.5) / 6])
    np.testing.assert_allclose(table[node[(0, 0)]], [(3 + 0.5) / 4, (0 + 0.5) / 4])
    np.testing.assert_allclose(table[node[(1,)]], [(0 + 0.5) / 5, (4 + 0.5) / 5])
    np.testing.assert_allclose(table[node[(1, 0)]], [(0 + 0.5) / 5, (4 + 0.5) / 5])
    np.testing.assert_allclose(table.sum(axis=1), 1.0)


def test_unseen_path_backs_off_to_deepest_ancestor_with_data():
    tree = _tree()
    table = m_estimate_table(tree, 1.0)
    # (y=1, x1=1) was never observed: the query is answered at the node y=1
    node = tree.find([[1, 1]])[0]
    assert tree.path(node) == (1,)
    np.testing.assert_allclose(table[node], [(0 + 0.5) / 5, (4 + 0.5) / 5])


def test_worked_example_mle_and_m_estimates():
    # paper, Table "worked example", dataset 1: n(X1 | Y=0) = [2, 0], n(X1 | Y=1) = [20, 5]
    tree = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[2, 0], [20, 5]]), [2])
    np.testing.assert_allclose(m_estimate_table(tree, 0.0)[1:], [[1.0, 0.0], [0.8, 0.2]])
    np.testing.assert_allclose(
        m_estimate_table(tree, 1.0)[1:], [[2.5 / 3, 0.5 / 3], [20.5 / 26, 5.5 / 26]]
    )


def test_value_never_counted_anywhere_cancels():
    tree = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[3, 0, 0], [1, 2, 0]]),
                                        [2])
    for m in (0.0, 3.0):
        table = m_estimate_table(tree, m)
        np.testing.assert_allclose(table[:, 2], 1 / 3)


@pytest.mark.parametrize("m", [-1.0, np.inf, np.nan])
def test_bad_m(m):
    tree = ContextTree.from_leaf_counts(np.array([[0]]), np.array([[1, 0]]), [1])
    with pytest.raises(ValueError, match="m must be"):
        m_estimate_table(tree, m)
