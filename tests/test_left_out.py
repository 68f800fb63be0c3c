"""Estimates with one training row's count removed (fastpath.estimate._left_out)."""

from __future__ import annotations

import numpy as np
import pytest

from fastpath import BayesNetClassifier
from fastpath.estimate import m_estimate_table
from fastpath.estimate._left_out import left_out_tables


def _member(car, **params):
    X, y = car
    return BayesNetClassifier(k=2, random_state=0, **params).fit(X.iloc[:600],
                                                                np.asarray(y)[:600]).members_[0]


def test_an_m_estimate_left_one_out_is_the_m_estimate_of_the_other_rows(car):
    member = _member(car, estimation="m", m=2.0)
    trees, tables = member.trees[1:], member.probability_tables[1:]
    flat = left_out_tables(trees, tables, [np.full(t.n_nodes, 2.0) for t in trees],
                           uniform_base=True)
    start = 0
    for tree, table in zip(trees, tables, strict=True):
        loo = flat[start:start + table.size].reshape(table.shape)
        start += table.size
        k, n = tree.n_values, tree.counts
        for node in range(1, tree.n_nodes):
            for x in np.flatnonzero(n[node]):
                # the m-estimate (n_x + m/K) / (N + m) with the row's own count removed
                expected = (n[node, x] - 1 + 2.0 / k) / (n[node].sum() - 1 + 2.0)
                assert loo[node, x] == pytest.approx(expected, rel=1e-12)
        # what no row counted at a node keeps its estimate, and so does the root
        untouched = (n == 0)
        untouched[0] = True
        np.testing.assert_array_equal(loo[untouched], table[untouched])
        np.testing.assert_allclose(table, m_estimate_table(tree, 2.0))
    assert start == flat.size


def test_a_hierarchical_estimate_keeps_its_parents_share(car):
    # phi_x (n_x - 1 + c b_x) / (n_x + c b_x) * (N + c) / (N - 1 + c), b the parent's estimate
    member = _member(car)
    tree, table = max(zip(member.trees[1:], member.probability_tables[1:], strict=True),
                      key=lambda pair: pair[0].n_nodes)
    assert tree.n_nodes > 10
    c = np.linspace(0.5, 3.0, tree.n_nodes)
    c[3] = np.inf  # an estimate equal to its base: left as it is
    loo = left_out_tables([tree], [table], [c], uniform_base=False).reshape(table.shape)
    for node in range(1, tree.n_nodes):
        base, n = table[tree.parent[node]], tree.counts[node]
        total = n.sum()
        for x in range(tree.n_values):
            if n[x] == 0 or not np.isfinite(c[node]):
                assert loo[node, x] == table[node, x]
                continue
            expected = (table[node, x] * (n[x] - 1 + c[node] * base[x]) / (n[x] + c[node] * base[x])
                        * (total + c[node]) / (total - 1 + c[node]))
            assert loo[node, x] == pytest.approx(max(expected, np.finfo(float).tiny), rel=1e-12)
    np.testing.assert_array_equal(loo[0], table[0])


def test_no_trees_give_an_empty_table():
    assert left_out_tables([], [], [], uniform_base=True).shape == (0,)
