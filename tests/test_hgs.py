"""Hierarchical gradient smoothing (fastpath.estimate._hgs, issue 27): the tables and the
leave-one-out loss against a direct, slow implementation of the definition, the gradient
against finite differences, the fit, and the classifiers with ``estimation="hgs"`` in memory,
streamed and as an ensemble."""

from __future__ import annotations

import numpy as np
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.counts import ContextTree
from fastpath.estimate._hgs import (
    HGS_MAX_WEIGHT,
    HGS_MIN_WEIGHT,
    hgs_fit,
    hgs_loo_loss,
    hgs_table,
    hgs_table_from_weights,
)


def _tree(seed: int, cards=(2, 3, 2), k: int = 3, n_leaves: int = 14, high: int = 4,
          n_values: int | None = None) -> ContextTree:
    rng = np.random.default_rng(seed)
    paths = np.column_stack([rng.integers(0, c, n_leaves) for c in cards])
    counts = rng.integers(0, high, size=(n_leaves, k))
    counts[0, 0] += 1  # at least one row
    if n_values is not None:  # the values from k on declared, never counted
        counts = np.pad(counts, ((0, 0), (0, n_values - k)))
    return ContextTree.from_leaf_counts(paths, counts, cards, n_values)


def _direct_estimate(tree: ContextTree, counts: np.ndarray, weights: np.ndarray, node: int,
                     value: int) -> float:
    """p_{node, value} by the definition, with ``counts`` in place of the tree's, recursing
    over the ancestors one node at a time (no vectorisation, no running sums)."""
    ancestors = []
    v = node
    while v > 0:
        v = int(tree.parent[v])
        ancestors.append(v)
    ancestors.reverse()  # root first: the ancestor at depth j is ancestors[j]
    if node == 0:
        return (counts[0, value] + weights[0] / tree.n_values) / (counts[0].sum() + weights[0])
    num = float(counts[node, value])
    den = float(counts[node].sum())
    for depth, a in enumerate(ancestors):
        alpha = weights[depth + 1]
        num += alpha * _direct_estimate(tree, counts, weights, a, value)
        den += alpha
    return num / den


def _direct_loo(tree: ContextTree, weights: np.ndarray) -> float:
    """The leave-one-out log loss by the definition: every training row, one at a time, left
    out of every node on its path."""
    loss = 0.0
    for leaf in range(tree.leaves.start, tree.leaves.stop):
        path = [leaf]
        while path[-1] > 0:
            path.append(int(tree.parent[path[-1]]))
        for k in range(tree.n_values):
            for _ in range(int(tree.counts[leaf, k])):
                without = tree.counts.astype(float)
                without[path, k] -= 1
                loss -= np.log(_direct_estimate(tree, without, weights, leaf, k))
    return loss


@pytest.mark.parametrize("seed", [0, 1])
def test_the_table_is_the_definition(seed):
    tree = _tree(seed)
    weights = np.random.default_rng(seed).uniform(0.2, 5.0, tree.depth + 1)
    table = hgs_table_from_weights(tree, weights)
    direct = np.array([[_direct_estimate(tree, tree.counts, weights, v, k)
                        for k in range(tree.n_values)] for v in range(tree.n_nodes)])
    np.testing.assert_allclose(table, direct, rtol=1e-12)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_leave_one_out_loss_is_the_definition_and_its_gradient_the_finite_differences(seed):
    tree = _tree(seed)
    weights = np.random.default_rng(seed + 10).uniform(0.2, 5.0, tree.depth + 1)
    loss, grad = hgs_loo_loss(tree, weights)
    assert loss == pytest.approx(_direct_loo(tree, weights), rel=1e-12)
    eps = 1e-6
    for q in range(weights.size):
        step = np.zeros_like(weights)
        step[q] = eps * weights[q]
        numeric = (hgs_loo_loss(tree, weights + step)[0]
                   - hgs_loo_loss(tree, weights - step)[0]) / (2 * step[q])
        assert grad[q] == pytest.approx(numeric, rel=1e-6, abs=1e-8), q


def test_a_row_alone_at_its_leaf_and_at_the_root_is_predicted_from_the_rest():
    # one row in the whole tree: left out, the root is uniform and so is every node
    tree = ContextTree.from_leaf_counts(np.array([[1, 0]]), np.array([[0, 1, 0]]), (2, 2))
    loss, _ = hgs_loo_loss(tree, np.ones(3))
    assert loss == pytest.approx(np.log(3))


def test_the_fit_minimises_the_leave_one_out_loss():
    tree = _tree(4, n_leaves=30, high=6)
    fit = hgs_fit(tree)
    assert fit.loo_loss == pytest.approx(hgs_loo_loss(tree, fit.weights)[0], rel=1e-12)
    np.testing.assert_array_equal(fit.table, hgs_table_from_weights(tree, fit.weights))
    # a stationary point in log w where no bound holds, and no lower loss nearby
    _, grad = hgs_loo_loss(tree, fit.weights)
    inside = (fit.weights > HGS_MIN_WEIGHT * 1.01) & (fit.weights < HGS_MAX_WEIGHT * 0.99)
    assert np.all(np.abs(grad * fit.weights)[inside] / tree.n_rows < 1e-4)
    rng = np.random.default_rng(0)
    for _ in range(20):
        moved = fit.weights * np.exp(rng.normal(0, 0.3, fit.weights.size))
        moved = np.clip(moved, HGS_MIN_WEIGHT, HGS_MAX_WEIGHT)
        assert hgs_loo_loss(tree, moved)[0] >= fit.loo_loss - 1e-9
    assert fit.loo_loss < hgs_loo_loss(tree, np.ones(tree.depth + 1))[0]


@pytest.mark.parametrize("tree", [
    _tree(5),
    _tree(6, n_values=5),  # two declared values never counted
    ContextTree.from_leaf_counts(np.array([[0, 1]]), np.array([[0, 1, 0]]), (2, 2)),  # 1 row
    ContextTree.from_leaf_counts(np.zeros((0, 2), int), np.zeros((0, 3), int), (2, 2)),  # none
    ContextTree.from_leaf_counts(np.zeros((1, 0), int), np.array([[5, 0, 2]]), ()),  # a prior
], ids=["random", "unseen-values", "one-row", "empty", "depth-0"])
def test_every_row_is_a_distribution_without_an_exact_zero(tree):
    table = hgs_table(tree)
    assert table.shape == (tree.n_nodes, tree.n_values)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-12)
    assert (table > 0).all()


@pytest.mark.parametrize("make", [
    lambda: BayesNetClassifier("kdb", 2, "hgs", random_state=0, n_jobs=1),
    lambda: ESKDBClassifier(3, k=2, estimation="hgs", random_state=0, n_jobs=1),
], ids=["kdb2", "eskdb"])
def test_the_classifiers_fit_in_memory_and_streamed_alike(fits_in_memory_and_streamed_alike,
                                                          make):
    memory, _ = fits_in_memory_and_streamed_alike(make)
    tables = memory.members_[0].probability_tables
    assert all(not t.flags.writeable and (t > 0).all() for t in tables)
