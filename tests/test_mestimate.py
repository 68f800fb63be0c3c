"""m-estimates with per-value back-off, on hand-made counts."""

import numpy as np
import pytest

from fastpath.context_tree import ContextTree
from fastpath.mestimate import m_estimate_table


def test_m_estimate_and_back_off_by_hand():
    # P(X | y, x1), K = 2: leaves (y=0,x1=0): [3, 0]; (y=0,x1=1): [1, 1]; (y=1,x1=0): [0, 4]
    tree = ContextTree.from_leaf_counts(
        np.array([[0, 0], [0, 1], [1, 0]]), np.array([[3, 0], [1, 1], [0, 4]]), [2, 2]
    )
    m = 1.0
    table = m_estimate_table(tree, m)
    node = {tree.path(i): i for i in range(tree.n_nodes)}
    # root counts [4, 5], N = 9
    np.testing.assert_allclose(table[node[()]], [(4 + 0.5) / 10, (5 + 0.5) / 10])
    # y=0 counts [4, 1]
    np.testing.assert_allclose(table[node[(0,)]], [(4 + 0.5) / 6, (1 + 0.5) / 6])
    # (0,0): value 0 counted -> own estimate; value 1 never counted there -> back off to y=0
    np.testing.assert_allclose(table[node[(0, 0)]], [(3 + 0.5) / 4, (1 + 0.5) / 6])
    # y=1 counts [0, 4]: value 0 backs off to the root
    np.testing.assert_allclose(table[node[(1,)]], [(4 + 0.5) / 10, (4 + 0.5) / 5])
    # (1,0): value 0 backs off two levels (not counted at y=1 either)
    np.testing.assert_allclose(table[node[(1, 0)]], [(4 + 0.5) / 10, (4 + 0.5) / 5])


def test_m_zero_is_maximum_likelihood_with_back_off():
    tree = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[2, 0], [20, 5]]), [2])
    table = m_estimate_table(tree, 0.0)
    np.testing.assert_allclose(table[1], [1.0, 5 / 27])  # value 1 backs off to the root
    np.testing.assert_allclose(table[2], [0.8, 0.2])


def test_value_never_counted_anywhere():
    tree = ContextTree.from_leaf_counts(np.array([[0]]), np.array([[3, 0, 0]]), [1])
    np.testing.assert_allclose(m_estimate_table(tree, 0.0)[1], [1.0, 1 / 3, 1 / 3])
    np.testing.assert_allclose(m_estimate_table(tree, 3.0)[1], [4 / 6, 1 / 6, 1 / 6])


@pytest.mark.parametrize("m", [-1.0, np.inf, np.nan])
def test_bad_m(m):
    tree = ContextTree.from_leaf_counts(np.array([[0]]), np.array([[1, 0]]), [1])
    with pytest.raises(ValueError, match="m must be"):
        m_estimate_table(tree, m)
