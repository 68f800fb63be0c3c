"""The readable model's inputs and shapes, and the tree generator (cheap: no NUTS)."""

import numpy as np
import pytest

pytest.importorskip("numpyro")
pytestmark = pytest.mark.ppl

import jax  # noqa: E402
from numpyro import handlers  # noqa: E402

from fastpath.counts.context_tree import TYING_STRATEGIES, tying_groups  # noqa: E402
from hdpbn_ppl.model import HDPTree, hdp_model  # noqa: E402
from hdpbn_ppl.testing import SUITE, sample_tree, suite_tree  # noqa: E402


@pytest.mark.parametrize("tying", TYING_STRATEGIES)
def test_hdptree_levels_match_the_context_tree(tying):
    tree = sample_tree((2, 3, 2), 4, 60, seed=3, alpha0=4.0).tree
    t = HDPTree.from_tree(tree, tying)
    groups = tying_groups(tree, tying)
    np.testing.assert_array_equal(t.groups, groups)
    assert t.n_groups == groups.max() + 1
    for d in range(1, tree.depth + 1):
        lo, hi = tree.level_offsets[d], tree.level_offsets[d + 1]
        # parent indices are local to the previous level
        np.testing.assert_array_equal(t.parent[d] + tree.level_offsets[d - 1], tree.parent[lo:hi])
        np.testing.assert_array_equal(t.group[d], groups[lo:hi])
    for d in range(tree.depth):
        lo, hi = tree.level_offsets[d], tree.level_offsets[d + 1]
        np.testing.assert_array_equal(t.observed[d], tree.counts[lo:hi] > 0)
        np.testing.assert_array_equal(t.reference[d], tree.counts[lo:hi].argmax(axis=1))
        np.testing.assert_array_equal(t.node_total[d], tree.counts[lo:hi].sum(axis=1))
    np.testing.assert_array_equal(t.leaf_counts, tree.counts[tree.leaves])


def test_readable_model_prior_draw_has_one_row_per_node():
    tree = suite_tree("d3_k2_sparse")
    t = HDPTree.from_tree(tree, "level")

    def draw(key):
        tr = handlers.trace(handlers.seed(hdp_model, key)).get_trace(t, None)
        return {name: site["value"] for name, site in tr.items()}

    values = jax.jit(draw)(jax.random.PRNGKey(0))  # one compilation, not one per operation
    rows = [values[name].shape for name in t.site_names()]
    assert rows == [(n, tree.n_values) for n in tree.nodes_per_level]
    assert values["alpha"].shape == (t.n_groups,)
    assert values["n"].shape == t.leaf_counts.shape
    np.testing.assert_array_equal(np.asarray(values["n"]).sum(1), t.leaf_totals)


def test_model_rejects_trees_it_cannot_describe():
    tree = sample_tree((2,), 2, 10, seed=1).tree
    with pytest.raises(ValueError):
        HDPTree.from_tree(tree, "level", alpha0=0.0)
    with pytest.raises(ValueError):
        HDPTree.from_tree(tree, "nonsense")


def test_sample_tree_is_reproducible_and_observed_only():
    a = sample_tree((3, 2), 4, 200, seed=9, path_concentration=0.5)
    b = sample_tree((3, 2), 4, 200, seed=9, path_concentration=0.5)
    np.testing.assert_array_equal(a.tree.counts, b.tree.counts)
    np.testing.assert_array_equal(a.leaf_theta, b.leaf_theta)
    assert a.tree.n_rows == 200
    assert (a.tree.counts[a.tree.leaves].sum(axis=1) > 0).all()
    np.testing.assert_allclose(a.leaf_theta.sum(axis=1), 1.0)
    assert a.alpha.shape == (2,)


def test_suite_covers_the_acceptance_range():
    trees = {e.name: e.sample().tree for e in SUITE}
    assert {t.depth for t in trees.values()} == {1, 2, 3, 4, 5}
    assert {t.n_values for t in trees.values()} >= {2, 3, 4, 5, 6}
    assert max(t.n_nodes for t in trees.values()) >= 200
    # every tree has at least two observed child values at the root
    assert all((t.counts[0] > 0).sum() >= 2 for t in trees.values())


def test_x64_is_on():
    assert jax.config.jax_enable_x64
