"""validation.classifier_agreement: predictions with swapped tables; Gibbs vs NUTS."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastpath.classifier import BayesNetClassifier
from fastpath.estimate import HDPOptions
from fastpath.evaluation import align_proba, label_codes, take_rows
from validation import classifier_agreement as ca


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.choice(["no", "yes"], size=n, p=[0.6, 0.4])
    a = np.where(y == "yes", rng.choice(list("abc"), n, p=[0.7, 0.2, 0.1]),
                 rng.choice(list("abc"), n, p=[0.2, 0.3, 0.5]))
    b = np.where(a == "a", rng.choice(list("xy"), n, p=[0.8, 0.2]),
                 rng.choice(list("xy"), n, p=[0.3, 0.7]))
    return pd.DataFrame({"a": a, "b": b}), pd.Series(y, name="class")


@pytest.mark.parametrize("estimation", ["m", "hdp"])
def test_own_tables_reproduce_predict_proba(estimation):
    X, y = _data()
    clf = BayesNetClassifier(structure="tan", estimation=estimation,
                             sampler=HDPOptions.preset("adaptive", n_iter=300), random_state=1)
    clf.fit(X, y)
    before = [t.copy() for t in clf.probability_tables_]
    got = ca.predict_with_tables(clf, list(clf.probability_tables_), X)
    np.testing.assert_array_equal(got, clf.predict_proba(X))
    for t, b in zip(clf.probability_tables_, before, strict=True):
        np.testing.assert_array_equal(t, b)  # the classifier is left as it was


def test_other_tables_change_predictions():
    X, y = _data()
    clf = BayesNetClassifier(structure="nb", estimation="m", random_state=1).fit(X, y)
    flat = [np.full_like(t, 1.0 / t.shape[1]) for t in clf.probability_tables_]
    np.testing.assert_allclose(ca.predict_with_tables(clf, flat, X), 0.5)


def test_bad_tables_are_named():
    X, y = _data()
    clf = BayesNetClassifier(structure="nb", estimation="m").fit(X, y)
    tables = list(clf.probability_tables_)
    with pytest.raises(ValueError, match="expected 3 tables"):
        ca.predict_with_tables(clf, tables[:2], X)
    with pytest.raises(ValueError, match=r"tables\[1\] has shape"):
        ca.predict_with_tables(clf, [tables[0], tables[1][:1], tables[2]], X)
    with pytest.raises(ValueError, match="estimation='hdp'"):
        ca.nuts_tables(clf)


def test_evaluation_helpers():
    classes, codes = label_codes(np.array(["b", "a", "b"], dtype=object))
    assert list(classes) == ["a", "b"] and list(codes) == [1, 0, 1]
    # a model that never saw class "a": its column is 0
    out = align_proba(np.array([[1.0], [1.0]]), np.array(["b"], dtype=object), classes)
    np.testing.assert_array_equal(out, [[0.0, 1.0], [0.0, 1.0]])
    assert list(take_rows(pd.Series([5, 6, 7], index=[9, 8, 7]), np.array([2, 0]))) == [7, 5]


@pytest.mark.study  # NUTS on every tree of a classifier: about 40 CPU-s (make study)
def test_gibbs_and_nuts_tables_predict_alike():
    X, y = _data(n=100, seed=3)
    res = ca.run_classifier_agreement(X, y, structure="nb", n_folds=2, n_repeats=1, seed=4,
                                      n_iter=4000, chains=2, warmup=400, samples=600)
    assert len(res.folds) == 2
    for f in res.folds:
        assert f.nuts_trees == 3 and f.nuts_divergences == 0
        # posterior means differ by Monte-Carlo error only (NUTS 1,200 draws)
        assert f.max_abs_dp < 0.01, f
        assert abs(f.rmse["gibbs"] - f.rmse["nuts"]) < 0.002, f
    text = ca.report_markdown(res)
    assert text.count("\n| 0, ") == 2 and "**mean**" in text
    assert res.to_json()["folds"][0]["rmse"].keys() == {"m", "gibbs", "nuts"}


def test_command_line_rejects_bad_input(capsys):
    from validation.__main__ import main

    assert main(["classifier-agreement", "--dataset", "no-such-data"]) == 2
    assert "unknown dataset 'no-such-data'" in capsys.readouterr().err
    assert main(["classifier-agreement", "--dataset", "car", "--folds", "1"]) == 2
    assert "folds must be at least 2" in capsys.readouterr().err
