"""The Weka bridge (``rf-weka``): Weka's RandomForest on the discretised codes as nominal
attributes, read back as class probabilities.

The tests that run Weka are skipped, with the reason, when Java or the jar is missing
(``make weka`` installs them); the others check the availability probe, the error without
Weka, the ARFF files and the output parser without Java.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fastpath.io import load_dataset
from fastpath.io._arff import read_arff
from validation.experiments import weka
from validation.experiments.weka import WekaForest, parse_distribution, weka_available

WEKA_MISSING = weka_available()
needs_weka = pytest.mark.skipif(
    WEKA_MISSING is not None, reason=f"rf-weka needs Java and Weka: {WEKA_MISSING}"
)


@pytest.fixture(scope="module")
def car():
    """500 training rows and 100 test rows of car, drawn at random (fixed seed)."""
    X, y = load_dataset("car")
    order = np.random.default_rng(0).permutation(len(y))
    train, test = order[:500], order[500:600]
    return (X.iloc[train].reset_index(drop=True), y.iloc[train].reset_index(drop=True),
            X.iloc[test].reset_index(drop=True), y.iloc[test].reset_index(drop=True))


@pytest.fixture(scope="module")
def fitted(car):
    X_train, y_train, X_test, _ = car
    model = WekaForest(seed=0).fit(X_train, y_train)
    return model, model.predict_proba(X_test)


# ---------------------------------------------------------------- with Weka
@needs_weka
def test_probabilities_sum_to_one_and_are_accurate(car, fitted):
    _, _, X_test, y_test = car
    model, proba = fitted
    assert proba.shape == (len(X_test), model.classes_.size)
    assert list(model.classes_) == sorted(set(car[1]))
    assert (proba >= 0).all()
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)
    accuracy = np.mean(model.classes_[proba.argmax(axis=1)] == y_test.to_numpy())
    assert accuracy > 0.8


@needs_weka
def test_rows_keep_the_test_order(car, fitted):
    _, _, X_test, _ = car
    model, proba = fitted
    reversed_rows = model.predict_proba(X_test.iloc[::-1])
    # the same training file and seed build the same forest: only the order may change
    np.testing.assert_array_equal(reversed_rows, proba[::-1])


@needs_weka
def test_seed_reproduces_and_another_seed_differs(car, fitted):
    X_train, y_train, X_test, _ = car
    _, proba = fitted
    again = WekaForest(seed=0).fit(X_train, y_train).predict_proba(X_test)
    np.testing.assert_array_equal(again, proba)
    other = WekaForest(seed=7).fit(X_train, y_train).predict_proba(X_test)
    assert not np.array_equal(other, proba)


@needs_weka
def test_unseen_and_missing_values_do_not_crash(car, fitted):
    _, _, X_test, _ = car
    model, _ = fitted
    odd = X_test.head(10).copy()
    odd.iloc[:5, 0] = "never-seen"  # a value unseen in training: code -1, written as ?
    odd.iloc[5:, 1] = np.nan  # a missing value where training had none: also code -1
    proba = model.predict_proba(odd)
    assert proba.shape == (10, model.classes_.size)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-12)


@needs_weka
def test_weka_failure_is_a_clear_error(car, fitted, monkeypatch):
    _, _, X_test, _ = car
    model, _ = fitted
    # an option Weka rejects: it prints its usage (and may exit 0); either way, no rows
    real = model.command
    monkeypatch.setattr(model, "command", lambda tr, te: [*real(tr, te), "-no-such-option"])
    with pytest.raises(RuntimeError, match=r"(?s)0 of 3 test rows.*no-such-option"):
        model.predict_proba(X_test.head(3))


# ---------------------------------------------------------------- without Weka
def test_bogus_jar_is_reported_and_fit_refuses(monkeypatch, car):
    monkeypatch.setenv("HDPBN_WEKA_JAR", "/nope.jar")
    reason = weka_available()
    assert isinstance(reason, str) and "/nope.jar" in reason
    assert "make weka" in reason
    X_train, y_train, _, _ = car
    with pytest.raises(RuntimeError, match=r"rf-weka cannot run.*/nope\.jar"):
        WekaForest().fit(X_train, y_train)


def test_arff_files_are_nominal_with_missing_for_unseen(monkeypatch, tmp_path, car):
    # pretend Weka is there: fit only encodes, and the files can be checked without Java
    monkeypatch.setattr(weka, "weka_available", lambda: None)
    X_train, y_train, X_test, _ = car
    model = WekaForest().fit(X_train, y_train)
    codes = model.encoder_.transform(X_test.head(4))
    codes[0, 0] = -1
    path = tmp_path / "test.arff"
    weka.write_arff(model._frame(codes, np.full(4, -1)), path, "test")
    header = path.read_text().split("@data")[0]
    assert header.count("@attribute") == X_train.shape[1] + 1
    assert "numeric" not in header
    table = read_arff(path, compression=None, columns=None, nrows=None)
    frame = table.frame
    assert set(table.types.values()) == {"nominal"}
    assert pd.isna(frame.iloc[0, 0]) and frame["class"].isna().all()
    assert list(frame["class"].cat.categories) == [str(c) for c in model.classes_]


def test_parser_reads_rows_by_instance_number():
    out = """
=== Predictions on test data ===

 inst#     actual  predicted error distribution
     2        1:?      1:c 1       *0.333,0.333,0.333
     1     2:c2       1:c 1   +   *0.99,0.01,0
"""
    proba = parse_distribution(out, 2, 3)
    np.testing.assert_allclose(proba[1], 1 / 3)  # renormalised: Weka rounds to 3 decimals
    np.testing.assert_allclose(proba[0], [0.99, 0.01, 0.0])
    with pytest.raises(RuntimeError, match="1 of 2 test rows"):
        parse_distribution(out.replace("     2        1:?", "garbage"), 2, 3)
    with pytest.raises(RuntimeError, match="unexpected"):
        parse_distribution(out, 2, 2)


def test_seeds_beyond_a_java_int_are_taken_modulo_2_31():
    # the runner's model seeds go up to 2**32 - 1; Weka's -S is parsed as a Java int
    from validation.experiments.weka import java_seed

    assert [java_seed(s) for s in (0, 7, 2**31 - 1)] == [0, 7, 2**31 - 1]
    assert java_seed(3161389578) == 3161389578 - 2**31
    assert java_seed(2**32 - 1) == 2**31 - 1


@needs_weka
def test_a_seed_beyond_a_java_int_fits(car):
    X_train, y_train, X_test, _ = car
    proba = WekaForest(seed=3161389578).fit(X_train, y_train).predict_proba(X_test)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, atol=1e-9)
