"""``hdpbn explain`` and ``hdpbn predict --interval`` (fastpath/cli/_main.py): the CSV's parts
sum to the model's log-odds or log-posterior, its rows are the Python API's, an unknown value is
listed, the intervals are the model's quantiles, and what cannot be done is one error line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.cli import main
from fastpath.io import load_dataset


@pytest.fixture(scope="module")
def credit(tmp_path_factory):
    X, y = load_dataset("credit-a")
    folder = tmp_path_factory.mktemp("credit")
    data = folder / "credit.csv"
    X.assign(id=range(len(X)), **{"class": y}).to_csv(data, index=False)
    model = folder / "model.npz"
    assert main(["fit", str(data), "--target", "class", "--structure", "tan", "--exclude",
                 "id", "--iterations", "200", "--keep-draws", "--model", str(model),
                 "--quiet"]) == 0
    return data, model


def test_explain_writes_the_log_odds_parts(credit, tmp_path):
    data, model = credit
    out = tmp_path / "explain.csv"
    assert main(["explain", str(data), "--model", str(model), "--out", str(out),
                 "--keep", "id", "--chunksize", "250"]) == 0
    frame = pd.read_csv(out)
    clf = BayesNetClassifier.load(model)
    X = pd.read_csv(data).drop(columns=["class"])
    lp = clf.predict_log_proba(X)
    assert list(frame["id"]) == list(range(len(X)))
    names = clf._used_feature_names()
    np.testing.assert_allclose(frame[["prior", *names, "ensemble_gap"]].sum(axis=1),
                               lp[:, 1] - lp[:, 0], atol=1e-9)
    np.testing.assert_allclose(frame[names], clf.explain(X).log_odds().contributions,
                               atol=1e-12)


def test_explain_a_class_and_flag_unknown_values(credit, tmp_path, capsys):
    data, model = credit
    clf = BayesNetClassifier.load(model)
    X = pd.read_csv(data).drop(columns=["class"]).head(20)
    X.loc[3, "A4"] = "never-seen"
    path = tmp_path / "rows.csv"
    X.to_csv(path, index=False)
    cls = str(clf.classes_[0])
    assert main(["explain", str(path), "--model", str(model), "--class", cls]) == 0
    frame = pd.read_csv(__import__("io").StringIO(capsys.readouterr().out))
    np.testing.assert_allclose(frame["log_posterior"], clf.predict_log_proba(X)[:, 0],
                               atol=1e-9)
    assert frame.loc[3, "unknown"] == "A4" and frame.loc[3, "A4"] == 0
    assert frame["unknown"].isna().sum() == 19
    assert main(["explain", str(path), "--model", str(model), "--class", "nope"]) == 2
    assert "--class 'nope' is not a class" in capsys.readouterr().err


def test_predict_interval_columns_are_the_models_quantiles(credit, tmp_path, capsys):
    data, model = credit
    out = tmp_path / "pred.csv"
    assert main(["predict", str(data), "--model", str(model), "--interval", "0.8",
                 "--draws", "15", "--out", str(out), "--chunksize", "300"]) == 0
    frame = pd.read_csv(out)
    clf = BayesNetClassifier.load(model)
    X = pd.read_csv(data).drop(columns=["class"])
    low, high = clf.predict_interval(X, 0.8, n_draws=15)
    c = clf.classes_[1]
    np.testing.assert_allclose(frame[f"p_{c}_low"], low[:, 1], atol=1e-12)
    np.testing.assert_allclose(frame[f"p_{c}_high"], high[:, 1], atol=1e-12)
    np.testing.assert_allclose(frame[f"p_{c}"], clf.predict_proba(X)[:, 1], atol=1e-12)
    assert main(["predict", str(data), "--model", str(model), "--interval", "1.5"]) == 2
    assert "--interval must be a probability" in capsys.readouterr().err


def test_predict_interval_needs_a_model_with_draws(tmp_path, capsys):
    model = tmp_path / "m.npz"
    assert main(["fit", "car", "--estimation", "m", "--model", str(model), "--quiet"]) == 0
    assert main(["predict", "car", "--model", str(model), "--interval", "0.9"]) == 2
    assert "record_draws=True" in capsys.readouterr().err


def test_fit_thin_keeps_more_states_of_the_same_chain(credit, tmp_path, capsys):
    """``fit --thin K`` keeps the chain's state every K-th iteration: with 200 iterations and
    a burn-in of 20, K = 4 keeps 200 // 4 - 20 // 4 = 45 draws where the default K = 10 keeps
    18, and the chain, hence every estimate and ``predict_proba``, is the same."""
    data, model = credit
    thinned = tmp_path / "thin4.npz"
    assert main(["fit", str(data), "--target", "class", "--structure", "tan", "--exclude",
                 "id", "--iterations", "200", "--keep-draws", "--thin", "4", "--model",
                 str(thinned), "--quiet"]) == 0
    default, thin4 = BayesNetClassifier.load(model), BayesNetClassifier.load(thinned)
    assert [clf.hdp_options().thin for clf in (default, thin4)] == [10, 4]
    assert default.hdp_options().burn_in_iterations == 20
    X = pd.read_csv(data).drop(columns=["class"]).head(50)
    np.testing.assert_array_equal(thin4.predict_proba(X), default.predict_proba(X))
    assert default.predict_proba_draws(X).shape[0] == 200 // 10 - 20 // 10
    assert thin4.predict_proba_draws(X).shape[0] == 200 // 4 - 20 // 4
    assert main(["fit", str(data), "--target", "class", "--structure", "tan", "--thin", "0",
                 "--model", str(tmp_path / "bad.npz"), "--quiet"]) == 2
    assert "--thin must be >= 1, got 0" in capsys.readouterr().err
