"""Credible intervals (fastpath/pipeline/_intervals.py, fastpath/predict/_draws.py): under
each draw of the tables, P(y | x) is the one an independent computation from the sampler's
draws gives; the unseen paths' Beta chain keeps the parent's mean (a martingale); seeds
reproduce for any thread count; what cannot give an interval says how to get one."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions
from fastpath.encode._encoder import code_members
from fastpath.pipeline._intervals import model_draws
from fastpath.pipeline._members import distinct_trees
from fastpath.predict._draws import draw_joint_log_likelihood

SAMPLER = HDPOptions.preset("adaptive", n_iter=300, burn_in=100, thin=10, record_draws=True)


def full_table(n_rows: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    """Three nominal columns of three values and three classes, every combination of the
    class and two columns in the rows (so no descent meets an unseen path)."""
    rng = np.random.default_rng(seed)
    y = rng.integers(3, size=n_rows)
    a = np.where(rng.random(n_rows) < 0.6, y, rng.integers(3, size=n_rows))
    b = rng.integers(3, size=n_rows)
    c = np.where(rng.random(n_rows) < 0.5, (a + b) % 3, rng.integers(3, size=n_rows))
    frame = pd.DataFrame({name: pd.Categorical(v, categories=range(3))
                          for name, v in zip("abc", (a, b, c), strict=True)})
    return frame, y


@pytest.fixture(scope="module")
def fitted():
    X, y = full_table()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        single = BayesNetClassifier(structure="kdb", k=2, sampler=SAMPLER).fit(X, y)
        ensemble = ESKDBClassifier(n_estimators=3, sampler=SAMPLER, random_state=0).fit(X, y)
    return X, single, ensemble


def brute_draws(clf, X, n_draws):
    """P_s(y | x) from the HDP results' draws by ``ContextTree.find``, for rows whose paths
    the trees hold for every class (:func:`full_table`'s), each tree's term weighted by the
    member's discriminative weights."""
    draws = model_draws(clf.members_, clf.hdp_results_, n_draws)
    _, _, slots = distinct_trees(clf.members_)
    n_classes = len(clf.classes_)
    out = np.zeros((draws.n_draws, len(X), n_classes))
    for e, member in enumerate(clf.members_):
        codes = member.encoder.transform(X)
        for s in range(draws.n_draws):
            def table(i, e=e, s=s):
                t = slots[e][i]
                return clf.hdp_results_[t].draws.reshape(
                    -1, *clf.hdp_results_[t].draws.shape[2:])[draws.picks[t][s]]
            # the discriminative layer's weights (the ensemble's default), 1 without it
            w = (np.ones((len(member.trees), n_classes)) if member.term_weights is None
                 else member.term_weights)
            joint = np.tile(w[0] * np.log(table(0)[0]), (len(X), 1))
            for i, (spec, tree) in enumerate(zip(member.tree_specs, member.trees,
                                                 strict=True)):
                if spec.child < 0:
                    continue
                for c in range(n_classes):
                    paths = np.stack([np.full(len(X), c) if col < 0 else codes[:, col]
                                      for col in spec.conditioning], axis=1)
                    node = tree.find(paths)
                    assert (tree.node_depth[node] == tree.depth).all()  # no unseen path
                    joint[:, c] += w[i, c] * np.log(table(i)[node, codes[:, spec.child]])
            p = np.exp(joint - joint.max(axis=1, keepdims=True))
            out[s] += p / p.sum(axis=1, keepdims=True)
    return out / len(clf.members_)


@pytest.mark.parametrize("which", ["single", "ensemble"])
def test_each_draw_is_the_posterior_under_the_samplers_draw_of_the_tables(fitted, which):
    X, single, ensemble = fitted
    clf = single if which == "single" else ensemble
    rows = X.iloc[::37]
    draws = clf.predict_proba_draws(rows, n_draws=7)
    assert draws.shape == (7, len(rows), 3)
    np.testing.assert_allclose(draws, brute_draws(clf, rows, 7), rtol=0, atol=1e-12)
    np.testing.assert_allclose(draws.sum(axis=2), 1.0)


def test_quantiles_and_interval(fitted):
    X, single, _ = fitted
    rows = X.iloc[:40]
    draws = single.predict_proba_draws(rows)
    q = single.predict_quantiles(rows, [0.05, 0.5, 0.95])
    np.testing.assert_array_equal(q, np.quantile(draws, [0.05, 0.5, 0.95], axis=0))
    low, high = single.predict_interval(rows, 0.9)
    np.testing.assert_allclose(low, q[0], rtol=1e-12)  # (1 - 0.9) / 2 is not 0.05 exactly
    np.testing.assert_allclose(high, q[2], rtol=1e-12)
    assert (low <= high).all()
    # the interval is about the posterior mean: most rows' predict_proba lie inside
    proba = single.predict_proba(rows)
    assert np.mean((low <= proba) & (proba <= high)) > 0.8
    for bad in (0, 1, 1.5, "0.9"):
        with pytest.raises(ValueError, match="level"):
            single.predict_interval(rows, bad)
    with pytest.raises(ValueError, match="quantiles"):
        single.predict_quantiles(rows, [1.2])
    with pytest.raises(ValueError, match="n_draws"):
        single.predict_proba_draws(rows, n_draws=0)


def test_draws_reproduce_for_any_thread_count(fitted):
    X, _, ensemble = fitted
    unseen = X.sample(300, random_state=1)
    a = ensemble.set_params(n_jobs=1).predict_proba_draws(unseen, random_state=5)
    b = ensemble.set_params(n_jobs=2).predict_proba_draws(unseen, random_state=5)
    np.testing.assert_array_equal(a, b)
    c = ensemble.predict_proba_draws(unseen, random_state=6)
    assert a.shape == c.shape


def test_unseen_paths_beta_chain_keeps_the_parents_mean(car):
    """Below the node a descent reaches, p_{d+1} ~ Beta(alpha p_d, alpha (1 - p_d)): its mean
    is p_d at every level, so the mean of exp(term) over many draws is the node's p."""
    X, y = car
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        single = BayesNetClassifier(structure="kdb", k=2, sampler=SAMPLER).fit(X, y)
    plan = single._plan()
    member = single.members_[0]
    # the deepest attribute tree, and a row whose path leaves it at the first parent
    a = max(range(len(member.trees) - 1), key=lambda j: member.trees[j + 1].depth)
    tree, spec = member.trees[a + 1], member.tree_specs[a + 1]
    assert tree.depth >= 3
    codes, columns = code_members(plan.encoders, X.iloc[:1], plan.layout)
    # find a parent value of the class's node that the tree has no child for
    klass = 0
    node = tree.child_lookup[tree.lookup_offsets[0] + klass]
    slots = tree.lookup_offsets[node]
    card = tree.branch_cardinalities[1]
    missing = [v for v in range(card) if tree.child_lookup[slots + v] < 0]
    if not missing:
        pytest.skip("every first parent value was seen with class 0")
    codes = codes.copy()
    codes[0, columns[0, spec.conditioning[1]]] = missing[0]
    x = codes[0, columns[0, spec.child]]
    p_node = single.members_[0].probability_tables[a + 1][node, x]
    packed = plan.packed
    n_trees = packed.child_col.size
    only = np.full(packed.log_prob.size, 0.0)  # every other tree's term log 1 = 0
    lo = packed.logp_offset[a]
    n = tree.n_nodes * tree.n_values
    only[lo:lo + n] = np.log(single.members_[0].probability_tables[a + 1]).ravel()
    alpha = np.full(sum(t.depth for t in member.trees[1:]), 3.0)
    ptr = np.concatenate([[0], np.cumsum([t.depth for t in member.trees[1:]])[:-1]])
    assert ptr.size == n_trees
    codes_t = np.ascontiguousarray(codes.T, dtype=np.int32)
    terms = np.array([draw_joint_log_likelihood(
        packed, codes_t, columns, 0, only, np.zeros(4), alpha, ptr,
        np.random.SeedSequence(seed).generate_state(4, np.uint64))[0, klass]
        for seed in range(3000)])
    values = np.exp(terms)
    assert values.std() > 0  # drawn, not read
    assert values.mean() == pytest.approx(p_node, abs=4 * values.std() / np.sqrt(3000))


def test_what_cannot_give_an_interval_says_how(car):
    X, y = car
    m = BayesNetClassifier(estimation="m").fit(X, y)
    with pytest.raises(ValueError, match="record_draws=True"):
        m.predict_interval(X.iloc[:3])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        plain = BayesNetClassifier(sampler=HDPOptions.preset("adaptive", n_iter=60)).fit(X, y)
        untraced = BayesNetClassifier(sampler=SAMPLER.replace(keep_traces=False)).fit(X, y)
        tied = BayesNetClassifier(sampler=SAMPLER.replace(tying="none")).fit(X, y)
    with pytest.raises(ValueError, match="record_draws=True"):
        plain.predict_proba_draws(X.iloc[:3])
    with pytest.raises(ValueError, match="keep_traces=True"):
        untraced.predict_proba_draws(X.iloc[:3])
    with pytest.raises(ValueError, match="tying"):
        tied.predict_proba_draws(X.iloc[:3])
    with pytest.raises(TypeError, match="in memory"):
        plain.predict_proba_draws("data.csv")


def test_model_files_keep_the_draws(fitted, tmp_path):
    X, single, ensemble = fitted
    rows = X.iloc[:25]
    for clf in (single, ensemble):
        path = tmp_path / f"{type(clf).__name__}.npz"
        clf.save(path)
        loaded = type(clf).load(path)
        np.testing.assert_array_equal(loaded.predict_proba_draws(rows, random_state=3),
                                      clf.predict_proba_draws(rows, random_state=3))
        np.testing.assert_array_equal(loaded.predict_proba_draws(rows, n_draws=5),
                                      clf.predict_proba_draws(rows, n_draws=5))
        np.testing.assert_array_equal(loaded.predict_proba(rows), clf.predict_proba(rows))
        with np.load(path) as archive:
            assert any(k.endswith("_draws") for k in archive.files)


def test_a_model_without_draws_writes_the_file_it_always_wrote(car, tmp_path):
    X, y = car
    clf = BayesNetClassifier(estimation="m").fit(X, y)
    clf.save(tmp_path / "m.npz")
    with np.load(tmp_path / "m.npz") as archive:
        assert not any(k.endswith(("_draws", "_alphas")) for k in archive.files)
        assert b"posterior_draws" not in archive["meta"].tobytes()
    assert "posterior_draws_" not in BayesNetClassifier.load(tmp_path / "m.npz").__dict__


def test_a_model_files_draws_are_checked(fitted, tmp_path):
    import json

    from fastpath.classifier import ModelFileError

    _, single, _ = fitted
    path = tmp_path / "single.npz"
    single.save(path)
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes())

    def write(name, **changes):
        out = dict(arrays, **changes)
        np.savez(tmp_path / name, **out)
        return tmp_path / name

    bad = arrays["member0_tree1_draws"].copy()
    bad[0, 0, 0] = 1.5
    with pytest.raises(ModelFileError, match="member0_tree1_draws"):
        BayesNetClassifier.load(write("p.npz", member0_tree1_draws=bad))
    with pytest.raises(ModelFileError, match="member0_tree1_alphas"):
        BayesNetClassifier.load(write("a.npz", member0_tree1_alphas=-arrays[
            "member0_tree1_alphas"]))
    with pytest.raises(ModelFileError, match="member0_tree2_draws"):
        BayesNetClassifier.load(write("s.npz", member0_tree2_draws=arrays[
            "member0_tree2_draws"][:3]))
    no_count = dict(meta)
    del no_count["posterior_draws"]
    with pytest.raises(ModelFileError, match="posterior_draws"):
        BayesNetClassifier.load(write("n.npz", meta=np.frombuffer(
            json.dumps(no_count).encode(), dtype=np.uint8)))
