"""The validation tree suite (hdpbn_ppl.suite): coverage, reproducibility, draws from the model.

* the suite covers what issue 5 asks (>= 20 named trees, depth 1-5, K 2-6, 10 to 10^5 rows,
  sparse and dense, every tying strategy, model and data trees);
* model trees are reproducible from their seeds; data trees are the classifier's tables (checked
  against a pandas cross-tabulation);
* draws from the prior match an independent simulation with NumPy's Dirichlet sampler, and the
  log-space Dirichlet is exact at tiny concentrations (E[log phi] = psi(a) - psi(sum a)).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from fastpath.counts import TYING_STRATEGIES, ContextTree
from hdpbn_ppl import suite


@pytest.fixture(scope="module")
def shapes():
    return {t.name: suite.tree_summary(t.build()) for t in suite.SUITE}


def test_suite_covers_the_issue(shapes):
    entries = suite.SUITE
    assert len(entries) >= 20
    assert len({t.name for t in entries}) == len(entries)
    assert len({t.seed for t in entries}) == len(entries)
    assert {s["depth"] for s in shapes.values()} >= {1, 2, 3, 4, 5}
    assert {s["K"] for s in shapes.values()} >= {2, 3, 4, 5, 6}
    assert min(s["rows"] for s in shapes.values()) <= 10
    assert max(s["rows"] for s in shapes.values()) >= 100_000
    assert {t.tying for t in entries} == set(TYING_STRATEGIES)
    assert {t.source for t in entries} == {"model", "data"}
    assert {t.spec["dataset"] for t in entries if t.source == "data"} == {
        "car", "credit-a", "kr-vs-kp", "tic-tac-toe"}
    assert {(t.spec["structure"], t.spec["k"]) for t in entries if t.source == "data"} >= {
        ("nb", 1), ("tan", 1), ("kdb", 2), ("kdb", 3)}
    # sparse: most leaves with 0-2 rows; dense: no such leaf and >= 100 rows per leaf
    assert sum(s["sparse_share"] > 0.5 for s in shapes.values()) >= 3
    assert sum(s["sparse_share"] == 0 and s["median_leaf_rows"] >= 100
               for s in shapes.values()) >= 3
    assert max(s["nodes"] for s in shapes.values()) >= 200
    assert 3 <= len(suite.quick_names()) <= 4
    # every tree has at least two observed child values at the root
    assert all((t.build().counts[0] > 0).sum() >= 2 for t in entries)
    for t in entries:
        if t.source == "model":
            assert len(t.true_alpha) == len(t.spec["cardinalities"])


def test_model_trees_reproduce_from_their_seeds():
    entry = suite.get("m_d3_k2_sparse")
    s = entry.spec
    again = suite.model_tree(s["cardinalities"], s["n_values"], s["n_rows"], seed=entry.seed,
                             alpha=s["alpha"], path_concentration=s["path_concentration"])
    tree = entry.build()
    assert np.array_equal(again.counts, tree.counts)
    assert np.array_equal(again.parent, tree.parent)
    other = suite.model_tree(s["cardinalities"], s["n_values"], s["n_rows"], seed=entry.seed + 1,
                             alpha=s["alpha"], path_concentration=s["path_concentration"])
    assert not np.array_equal(other.counts[0], tree.counts[0])
    with pytest.raises(KeyError, match="no suite tree"):
        suite.get("nope")


def test_data_tree_is_the_crosstab():
    from fastpath.io import load_dataset

    tree = suite.get("car_nb_safety").build()
    X, y = load_dataset("car")
    table = pd.crosstab(y, X["safety"])  # rows and columns in sorted order, as the encoder
    assert tree.child_name == "safety"
    assert np.array_equal(tree.counts[tree.leaves], table.to_numpy())


def _skeleton(rows) -> ContextTree:
    paths = np.array([[0, 0], [0, 1], [1, 0], [1, 1], [1, 2]])
    counts = np.zeros((5, 3), dtype=np.int64)
    counts[:, 0] = rows
    return ContextTree.from_leaf_counts(paths, counts, [2, 3], 3)


def test_prior_draws_match_an_independent_simulation():
    sk = _skeleton([4, 1, 7, 2, 9])
    alpha = np.array([3.0, 5.0])
    rng = np.random.default_rng(0)
    n = 2500
    ours = np.array([suite.draw_from_prior(sk, "level", rng, alpha=alpha)[2][-1, 0]
                     for _ in range(n)])
    # the same hierarchy with numpy's Dirichlet: root, node (1), leaf (1, 2)
    ref_rng = np.random.default_rng(1)
    ref = np.empty(n)
    for i in range(n):
        root = ref_rng.dirichlet(np.full(3, 2.0 / 3))
        mid = ref_rng.dirichlet(np.maximum(alpha[0] * root, 1e-300))
        ref[i] = ref_rng.dirichlet(np.maximum(alpha[1] * mid, 1e-300))[0]
    assert stats.ks_2samp(ours, ref).pvalue > 1e-3
    # the data are multinomial given theta and keep the skeleton's leaves and totals
    tree, used, phi = suite.draw_from_prior(sk, "level", np.random.default_rng(3), alpha=alpha)
    assert np.array_equal(tree.counts[tree.leaves].sum(axis=1), [4, 1, 7, 2, 9])
    assert np.array_equal(tree.parent, sk.parent)
    assert np.allclose(phi.sum(axis=1), 1.0)
    assert np.array_equal(used, alpha)
    # concentrations drawn from Gamma(shape, rate) when not given: one per tying group
    _, a_none, _ = suite.draw_from_prior(sk, "none", np.random.default_rng(4))
    assert a_none.shape == (sk.n_nodes - 1,)
    with pytest.raises(ValueError, match="alpha must have shape"):
        suite.draw_from_prior(sk, "level", rng, alpha=[1.0, 2.0, 3.0])


@pytest.mark.parametrize("a", [1e-3, 0.05, 2.0])
def test_log_dirichlet_is_exact_at_tiny_concentrations(a):
    conc = np.array([a, 2 * a, 0.5])
    logs = suite.log_dirichlet(np.random.default_rng(11), np.tile(conc, (40_000, 1)))
    expected = special.digamma(conc) - special.digamma(conc.sum())
    sd = logs.std(axis=0) / np.sqrt(logs.shape[0])
    assert np.all(np.abs(logs.mean(axis=0) - expected) < 5 * sd)
