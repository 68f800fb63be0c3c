"""Hierarchical linear smoothing (fastpath.estimate._hls, issue 27): the fit on the counts
against scikit-learn's LogisticRegression on the expanded rows with the same penalty, the
gradient against finite differences, proper distributions, and the classifiers with
``estimation="hls"`` in memory, streamed, as an ensemble, on the command line and in the
experiments' names."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from sklearn.linear_model import LogisticRegression

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.cli import main
from fastpath.counts import ContextTree
from fastpath.estimate import HLSOptions
from fastpath.estimate._hls import _loss_grad, hls_fit, hls_table
from validation.experiments.classifiers import make_classifier, parse_classifier

#: tolerances tight enough for 1e-6 agreement of both optimisers
_TIGHT = dict(gtol=1e-11, ftol=1e-16, max_iter=20000)


def _tree(seed: int, cards=(2, 3, 2), k: int = 3, n_leaves: int = 12, high: int = 5
          ) -> ContextTree:
    rng = np.random.default_rng(seed)
    paths = np.column_stack([rng.integers(0, c, n_leaves) for c in cards])
    counts = rng.integers(0, high, size=(n_leaves, k))
    counts[:, 0] += 1  # every leaf observed
    counts[0] += 1  # every value counted
    return ContextTree.from_leaf_counts(paths, counts, cards)


def _indicators(tree: ContextTree) -> np.ndarray:
    """Row ``v``: the indicators of the non-root nodes on node ``v``'s path (column ``u - 1``
    is node ``u``)."""
    out = np.zeros((tree.n_nodes, tree.n_nodes - 1))
    for v in range(1, tree.n_nodes):
        u = v
        while u > 0:
            out[v, u - 1] = 1.0
            u = int(tree.parent[u])
    return out


def _expanded(tree: ContextTree) -> tuple[np.ndarray, np.ndarray]:
    """One row per training row: its leaf's indicators, and its child value."""
    features = _indicators(tree)
    rows, labels = [], []
    for leaf in range(tree.leaves.start, tree.leaves.stop):
        for k in range(tree.n_values):
            n = int(tree.counts[leaf, k])
            rows.extend([features[leaf]] * n)
            labels.extend([k] * n)
    return np.array(rows), np.array(labels)


def _sklearn(tree: ContextTree, C: float) -> LogisticRegression:
    X, y = _expanded(tree)
    return LogisticRegression(C=C, tol=1e-12, max_iter=100000).fit(X, y)


@pytest.mark.parametrize(("seed", "C", "k"), [(0, 1.0, 3), (1, 0.3, 4), (2, 5.0, 3)])
def test_the_fit_on_counts_is_sklearns_logistic_regression_on_the_rows(seed, C, k):
    tree = _tree(seed, k=k)
    ours = hls_fit(tree, C, **_TIGHT)
    ref = _sklearn(tree, C)
    # scikit-learn's K symmetric coefficient vectors, penalised; its intercepts are not, and are
    # unique up to a common constant (ours are centred)
    np.testing.assert_allclose(ours.coef, ref.coef_.T, atol=1e-6)
    np.testing.assert_allclose(ours.intercept, ref.intercept_ - ref.intercept_.mean(), atol=1e-6)
    # every node's probabilities, internal nodes included (their deeper indicators are 0)
    np.testing.assert_allclose(ours.table, ref.predict_proba(_indicators(tree)), atol=1e-6)


def test_with_two_values_sklearns_binomial_model_is_ours_with_C_doubled():
    tree = _tree(3, k=2)
    ours = hls_fit(tree, 1.0, **_TIGHT)
    ref = _sklearn(tree, 2.0)
    np.testing.assert_allclose(ours.table, ref.predict_proba(_indicators(tree)), atol=1e-6)
    # its one vector is the difference of our two
    np.testing.assert_allclose(ours.coef[:, 1] - ours.coef[:, 0], ref.coef_[0], atol=1e-6)


def test_the_gradient_is_the_finite_differences():
    tree = _tree(4)
    counts = np.ascontiguousarray(tree.counts, dtype=np.float64)
    parent = np.ascontiguousarray(tree.parent)
    x = np.random.default_rng(0).normal(0, 0.5, tree.n_nodes * tree.n_values)
    loss, grad = _loss_grad(x, counts, parent, tree.leaves.start, 0.7)
    eps = 1e-6
    numeric = np.array([
        (_loss_grad(x + eps * e, counts, parent, tree.leaves.start, 0.7)[0]
         - _loss_grad(x - eps * e, counts, parent, tree.leaves.start, 0.7)[0]) / (2 * eps)
        for e in np.eye(x.size)])
    np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6)
    # the loss is the definition: C times the rows' log loss plus half the squared coefficients
    X, y = _expanded(tree)
    b, w = x[:tree.n_values], x[tree.n_values:].reshape(-1, tree.n_values)
    scores = b + X @ w
    log_p = scores - np.log(np.exp(scores).sum(axis=1, keepdims=True))
    direct = -0.7 * log_p[np.arange(y.size), y].sum() + 0.5 * np.sum(w ** 2)
    assert loss == pytest.approx(direct, rel=1e-12)


def test_a_value_never_counted_gets_one_over_k_and_the_rest_is_the_fit_without_it():
    tree = _tree(5)
    padded = ContextTree.from_leaf_counts(
        tree.paths()[tree.leaves], np.pad(tree.counts[tree.leaves], ((0, 0), (1, 1))),
        tree.branch_cardinalities)
    table = hls_fit(padded, **_TIGHT).table
    np.testing.assert_allclose(table[:, [0, 4]], 0.2)
    np.testing.assert_allclose(table[:, 1:4], 0.6 * hls_fit(tree, **_TIGHT).table, atol=1e-9)


@pytest.mark.parametrize("tree", [
    _tree(6),
    ContextTree.from_leaf_counts(np.array([[0, 1]]), np.array([[0, 1, 0]]), (2, 2)),  # 1 row
    ContextTree.from_leaf_counts(np.zeros((0, 2), int), np.zeros((0, 3), int), (2, 2)),  # none
    ContextTree.from_leaf_counts(np.zeros((1, 0), int), np.array([[5, 0, 2]]), ()),  # a prior
    # a deterministic child: unpenalised, its probabilities would go to 0 and 1
    ContextTree.from_leaf_counts(np.array([[0], [1]]), np.array([[40, 0], [0, 40]]), (2,)),
], ids=["random", "one-row", "empty", "depth-0", "deterministic"])
def test_every_row_is_a_distribution_without_an_exact_zero(tree):
    table = hls_table(tree)
    assert table.shape == (tree.n_nodes, tree.n_values)
    np.testing.assert_allclose(table.sum(axis=1), 1.0, rtol=1e-12)
    assert (table > 0).all()


def test_the_penalty_is_checked_and_reaches_the_fit():
    with pytest.raises(ValueError, match=r"^C must be"):
        HLSOptions(C=0)
    with pytest.raises(ValueError, match="estimation"):
        BayesNetClassifier(estimation="hlss").fit_config()
    config = BayesNetClassifier(estimation=HLSOptions(C=0.5)).fit_config()
    assert (config.estimation, config.estimation_options) == ("hls", HLSOptions(C=0.5))
    # the name: the options' defaults, the authors' penalty
    assert BayesNetClassifier(estimation="hls").fit_config().estimation_options == HLSOptions()
    assert HLSOptions().C == 1.0


@pytest.mark.parametrize("make", [
    lambda: BayesNetClassifier("kdb", 2, "hls", random_state=0, n_jobs=1),
    lambda: ESKDBClassifier(3, k=2, estimation="hls", random_state=0, n_jobs=1),
], ids=["kdb2", "eskdb"])
def test_the_classifiers_fit_in_memory_and_streamed_alike(fits_in_memory_and_streamed_alike,
                                                          car, make, tmp_path):
    X, _ = car
    memory, proba = fits_in_memory_and_streamed_alike(make)
    path = tmp_path / "model.npz"
    memory.save(path)
    loaded = type(memory).load(path)
    assert loaded.estimation == "hls"
    np.testing.assert_array_equal(loaded.predict_proba(X), proba)


def test_a_penalty_of_its_own_is_saved_and_loaded(car, tmp_path):
    X, y = car
    clf = BayesNetClassifier("kdb", 2, HLSOptions(C=0.3), n_jobs=1).fit(X, y)
    clf.save(tmp_path / "c.npz")
    loaded = BayesNetClassifier.load(tmp_path / "c.npz")
    assert loaded.get_params() == clf.get_params() and loaded.estimation == HLSOptions(C=0.3)
    np.testing.assert_array_equal(loaded.predict_proba(X), clf.predict_proba(X))


def test_a_larger_C_fits_the_training_rows_closer(car):
    X, y = car
    loose = BayesNetClassifier("kdb", 2, HLSOptions(C=0.01), n_jobs=1).fit(X, y)
    tight = BayesNetClassifier("kdb", 2, HLSOptions(C=100.0), n_jobs=1).fit(X, y)
    rows = np.arange(y.size)
    codes = {c: i for i, c in enumerate(loose.classes_)}
    truth = np.array([codes[v] for v in y])
    assert (np.log(tight.predict_proba(X)[rows, truth]).mean()
            > np.log(loose.predict_proba(X)[rows, truth]).mean())


@pytest.mark.parametrize(("name", "kind", "estimation"), [
    ("kdb3-hgs", BayesNetClassifier, "hgs"), ("tan-hls", BayesNetClassifier, "hls"),
    ("eskdb-hgs", ESKDBClassifier, "hgs"), ("eskdb10-hls", ESKDBClassifier, "hls"),
])
def test_the_experiments_name_them(name, kind, estimation):
    spec = parse_classifier(name)
    model = make_classifier(spec)
    assert isinstance(model, kind) and model.estimation == estimation
    assert estimation.upper() in spec.label
    assert spec.cache_tag(5000).startswith(name)  # no iterations in the tag


@pytest.mark.parametrize("estimation", ["hgs", "hls"])
def test_the_command_line_fits_them(credit_csv, tmp_path, capsys, estimation):
    model = tmp_path / "m.npz"
    assert main(["fit", str(credit_csv), "--structure", "kdb", "--k", "2", "--estimation",
                 estimation, "--hls-c", "0.5", "--model", str(model), "--seed", "1",
                 "--quiet"]) == 0
    clf = BayesNetClassifier.load(model)
    # --hls-c is HLS's penalty; the other estimators have none
    expected = HLSOptions(C=0.5) if estimation == "hls" else estimation
    assert clf.estimation == expected
    frame = pd.read_csv(credit_csv)
    X, y = frame.drop(columns="class"), frame["class"]
    again = BayesNetClassifier("kdb", 2, expected, random_state=1).fit(X, y)
    np.testing.assert_array_equal(clf.predict_proba(X), again.predict_proba(X))
    assert main(["fit", "--structure", "kdb",
                 str(credit_csv), "--estimation", "hls", "--hls-c", "-1", "--model",
                 str(tmp_path / "bad.npz"), "--quiet"]) == 2
    assert "--hls-c" in capsys.readouterr().err
