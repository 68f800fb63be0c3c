"""m-estimates with back-off, on hand-made counts."""

import numpy as np
import pytest

from fastpath.counts import ContextTree, count_tree
from fastpath.estimate import m_estimate_table


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


# ====================================================================== value back-off
# The paper's literal rule: "if count(x4, x0, x3) is equal to zero, then p(x4 | x0) is considered
# instead of p(x4 | x0, x3)": a zero *joint* count backs off, value by value.


def test_path_backoff_is_the_default_bit_for_bit():
    tree = _tree()
    for m in (0.0, 0.05, 1.0, 20.0):
        np.testing.assert_array_equal(m_estimate_table(tree, m, "path"),
                                      m_estimate_table(tree, m))


def test_value_backoff_by_hand():
    tree = _tree()
    node = {tree.path(i): i for i in range(tree.n_nodes)}
    path = m_estimate_table(tree, 1.0)
    value = m_estimate_table(tree, 1.0, backoff="value")
    # non-zero joint counts keep the node's own m-estimate
    np.testing.assert_array_equal(value[node[()]], path[node[()]])
    np.testing.assert_array_equal(value[node[(0,)]], path[node[(0,)]])  # counts [4, 1]
    # (y=0, x1=0) counts [3, 0]: x=0 stays, x=1 takes p(x=1 | y=0) as is (1.5 / 6)
    np.testing.assert_allclose(value[node[(0, 0)]], [(3 + 0.5) / 4, (1 + 0.5) / 6])
    # (y=1) counts [0, 4]: x=0 backs off to the root's p(x=0) = 4.5 / 10
    np.testing.assert_allclose(value[node[(1,)]], [(4 + 0.5) / 10, (4 + 0.5) / 5])
    # (y=1, x1=0) counts [0, 4]: x=0 is zero at y=1 too, so it backs off two levels, to the root
    np.testing.assert_allclose(value[node[(1, 0)]], [(4 + 0.5) / 10, (4 + 0.5) / 5])
    # rows are not renormalised
    assert value[node[(0, 0)]].sum() == pytest.approx(3.5 / 4 + 1.5 / 6)
    assert not np.allclose(value.sum(axis=1), 1.0)


def test_value_backoff_with_m_zero_replaces_the_exact_zeros():
    tree = _tree()
    node = {tree.path(i): i for i in range(tree.n_nodes)}
    path = m_estimate_table(tree, 0.0)
    value = m_estimate_table(tree, 0.0, "value")
    assert path[node[(0, 0)], 1] == 0.0
    assert value[node[(0, 0)], 1] == pytest.approx(1 / 5)  # p(x=1 | y=0), maximum likelihood
    assert value[node[(1, 0)], 0] == pytest.approx(4 / 9)  # p(x=0), two levels up
    assert (value > 0).all()


def test_value_backoff_equals_path_without_zero_counts():
    tree = ContextTree.from_leaf_counts(np.array([[0, 0], [0, 1], [1, 1]]),
                                        np.array([[3, 1], [1, 1], [2, 5]]), [2, 2])
    np.testing.assert_array_equal(m_estimate_table(tree, 0.2, "value"),
                                  m_estimate_table(tree, 0.2))


def test_value_never_counted_anywhere_keeps_one_over_k():
    tree = ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[3, 0, 0], [1, 2, 0]]),
                                        [2])
    for m in (0.0, 3.0):
        table = m_estimate_table(tree, m, "value")
        np.testing.assert_allclose(table[:, 2], 1 / 3)
        np.testing.assert_allclose(table[1, 1], (2 + m / 3) / (6 + m))  # y=0 backs off to root


def _value_by_brute_force(tree, m):
    own = m_estimate_table(tree, m)
    out = own.copy()
    for i in range(tree.n_nodes):
        for k in range(tree.n_values):
            a = i
            while tree.counts[a, k] == 0 and a > 0:
                a = int(tree.parent[a])
            out[i, k] = own[a, k]
    return out


@pytest.mark.parametrize("m", [0.0, 0.2, 5.0])
def test_value_backoff_matches_an_ancestor_walk(m):
    rng = np.random.default_rng(3)
    n = 300
    conditioning = np.column_stack([rng.integers(0, 3, n), rng.integers(0, 4, n),
                                    rng.integers(0, 3, n)])
    child = (conditioning[:, 1] + rng.integers(0, 2, n)) % 5  # sparse, value 4 rare
    tree = count_tree(child, conditioning, 6, [3, 4, 3])  # value 5 never counted
    value = m_estimate_table(tree, m, "value")
    np.testing.assert_array_equal(value, _value_by_brute_force(tree, m))
    np.testing.assert_allclose(value[:, 5], 1 / 6)


def test_bad_backoff():
    with pytest.raises(ValueError, match="backoff must be one of"):
        m_estimate_table(_tree(), 1.0, "values")
