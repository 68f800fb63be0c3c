"""fastpath.evaluation._cross_validation: folds and the cross-validation loop.

Folds partition the rows in every repeat and give each class the same per-fold counts as
scikit-learn's ``StratifiedKFold`` (compared as proportions, not indices); the same seed gives
the same folds (the metrics themselves: tests/test_metrics.py). ``align_proba`` equals a
pandas re-indexing; ``cross_validate`` reproduces with a seed and scores every fold as an
independent re-computation does.
"""

from __future__ import annotations

import statistics
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from sklearn.dummy import DummyClassifier
from sklearn.metrics import accuracy_score
from sklearn.metrics import log_loss as sk_log_loss
from sklearn.model_selection import StratifiedKFold

from fastpath import BayesNetClassifier
from fastpath.evaluation import (
    METRICS,
    align_proba,
    cross_validate,
    label_codes,
    stratified_folds,
    summarise,
)
from fastpath.io import load_dataset


# ====================================================================== folds
@st.composite
def labels_and_folds(draw):
    n_folds = draw(st.integers(2, 5))
    sizes = draw(st.lists(st.integers(1, 30), min_size=1, max_size=4))
    y = np.repeat(np.arange(len(sizes)), sizes)
    if y.size < n_folds:
        y = np.concatenate([y, np.zeros(n_folds - y.size, dtype=y.dtype)])
    perm = draw(st.permutations(range(y.size)))
    return y[list(perm)], n_folds


def _fold_class_counts(y, test_sets):
    """Per class, the sorted multiset of its row counts over the test folds."""
    return {int(c): sorted(int(np.sum(y[t] == c)) for t in test_sets) for c in np.unique(y)}


@settings(max_examples=120, deadline=None)
@given(labels_and_folds(), st.integers(1, 3), st.integers(0, 2**32 - 1))
def test_folds_partition_the_rows_in_every_repeat(case, n_repeats, seed):
    y, n_folds = case
    folds = list(stratified_folds(y, n_folds, n_repeats, seed))
    assert [(r, f) for r, f, _, _ in folds] == [
        (r, f) for r in range(n_repeats) for f in range(n_folds)
    ]
    for r in range(n_repeats):
        tests = [t for rr, _, _, t in folds if rr == r]
        np.testing.assert_array_equal(np.sort(np.concatenate(tests)), np.arange(y.size))
        for rr, _, train, test in folds:
            if rr == r:
                np.testing.assert_array_equal(np.setdiff1d(np.arange(y.size), test), train)


@settings(max_examples=120, deadline=None)
@given(labels_and_folds(), st.integers(0, 2**32 - 1))
def test_folds_keep_class_proportions_like_stratified_k_fold(case, seed):
    y, n_folds = case
    assume(np.bincount(y).max() >= n_folds)  # scikit-learn needs one class that large
    ours = [t for _, _, _, t in stratified_folds(y, n_folds, 1, seed)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # classes smaller than n_folds
        skf = StratifiedKFold(n_folds, shuffle=True, random_state=0)
        theirs = [t for _, t in skf.split(np.zeros(y.size), y)]
    assert _fold_class_counts(y, ours) == _fold_class_counts(y, theirs)
    sizes = [t.size for t in ours]
    assert max(sizes) - min(sizes) <= 1  # folds are also balanced overall


@settings(max_examples=30, deadline=None)
@given(labels_and_folds(), st.integers(0, 2**32 - 1))
def test_the_same_seed_gives_the_same_folds(case, seed):
    y, n_folds = case
    a = list(stratified_folds(y, n_folds, 2, seed))
    b = list(stratified_folds(y, n_folds, 2, seed))
    for (ra, fa, tra, tea), (rb, fb, trb, teb) in zip(a, b, strict=True):
        assert (ra, fa) == (rb, fb)
        np.testing.assert_array_equal(tra, trb)
        np.testing.assert_array_equal(tea, teb)


def test_repeats_shuffle_differently():
    y = np.repeat([0, 1], 50)
    tests = [t for _, f, _, t in stratified_folds(y, 2, 3, 0) if f == 0]
    assert not np.array_equal(tests[0], tests[1])


@pytest.mark.parametrize(
    "args,match",
    [((np.arange(4), 1, 1, 0), "folds must be at least 2"),
     ((np.arange(4), 2, 0, 0), "repeats must be at least 1"),
     ((np.arange(2), 3, 1, 0), "cannot make 3 folds from 2 rows")],
)
def test_bad_fold_arguments_are_refused(args, match):
    with pytest.raises(ValueError, match=match):
        list(stratified_folds(*args))


# ====================================================================== labels and alignment
@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c", "d", "e"]), min_size=1, max_size=5,
                unique=True),
       st.integers(1, 5), st.data())
def test_align_proba_equals_a_pandas_reindex(model_classes, n, data):
    classes = np.array(sorted(set(model_classes) | set(data.draw(
        st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f"]), max_size=3)))))
    proba = data.draw(hnp.arrays(np.float64, (n, len(model_classes)),
                                 elements=st.floats(0, 1)))
    expected = pd.DataFrame(proba, columns=model_classes).reindex(
        columns=list(classes), fill_value=0.0).to_numpy()
    np.testing.assert_array_equal(align_proba(proba, model_classes, classes), expected)


def test_align_proba_with_integer_labels():
    proba = np.array([[0.25, 0.75]])
    out = align_proba(proba, np.array([3, 10]), np.array([1, 3, 7, 10]))
    np.testing.assert_array_equal(out, [[0.0, 0.25, 0.0, 0.75]])


def test_label_codes_sorts_object_labels_as_text():
    classes, codes = label_codes(np.array(["b", 2, "a", 2], dtype=object))
    assert list(classes) == ["2", "a", "b"]
    np.testing.assert_array_equal(classes[codes], ["b", "2", "a", "2"])


# ====================================================================== cross_validate
@pytest.fixture(scope="module")
def tictactoe():
    X, y = load_dataset("tic-tac-toe")
    return X, np.asarray(y)


def _metrics(results):
    return [(r.repeat, r.fold, r.zero_one_loss, r.rmse, r.log_loss, r.n_train, r.n_test)
            for r in results]


def test_cross_validate_with_a_seed_reproduces(tictactoe):
    X, y = tictactoe

    def make():
        return BayesNetClassifier("nb", estimation="m", m=1.0)

    a = cross_validate(make, X, y, n_folds=2, n_repeats=2, seed=3)
    b = cross_validate(make, X, y, n_folds=2, n_repeats=2, seed=3)
    assert _metrics(a) == _metrics(b)
    c = cross_validate(make, X, y, n_folds=2, n_repeats=2, seed=4)
    assert _metrics(a) != _metrics(c)


def test_cross_validate_scores_every_fold_as_recomputed_by_hand(tictactoe):
    X, y = tictactoe
    calls = []
    results = cross_validate(lambda: BayesNetClassifier("nb", estimation="m", m=1.0), X, y,
                             n_folds=3, n_repeats=1, seed=0,
                             progress=lambda i, n: calls.append((i, n)))
    assert calls == [(1, 3), (2, 3), (3, 3)]
    classes, y_codes = np.unique(y, return_inverse=True)
    folds = list(stratified_folds(y_codes, 3, 1, 0))
    for res, (_, _, train, test) in zip(results, folds, strict=True):
        clf = BayesNetClassifier("nb", estimation="m", m=1.0).fit(X.iloc[train], y[train])
        proba = clf.predict_proba(X.iloc[test])
        assert list(clf.classes_) == list(classes)
        yt = y_codes[test]
        assert res.zero_one_loss == pytest.approx(1 - accuracy_score(yt, proba.argmax(1)))
        assert res.log_loss == pytest.approx(sk_log_loss(yt, proba, labels=[0, 1]), rel=1e-9)
        assert res.rmse == pytest.approx(np.sqrt(np.mean((1 - proba[np.arange(yt.size), yt]) ** 2)))
        # two classes: the error on the other class mirrors the true class's
        assert res.brier == pytest.approx(2 * res.rmse**2)
        assert res.rmse_true_class == pytest.approx(res.rmse)
        assert (res.n_train, res.n_test) == (train.size, test.size)


def test_a_class_missing_from_the_training_fold_counts_as_an_error():
    # "rare" has one row: the model of the fold that tests it has never seen it
    X = np.zeros((11, 1))
    y = np.array(["common"] * 10 + ["rare"], dtype=object)
    results = cross_validate(lambda: DummyClassifier(strategy="prior"), X, y, n_folds=2,
                             n_repeats=1, seed=0)
    folds = list(stratified_folds(label_codes(y)[1], 2, 1, 0))
    assert sum(10 in test for _, _, _, test in folds) == 1
    for res, (_, _, train, test) in zip(results, folds, strict=True):
        # the prior model predicts the training frequencies: P(true class) = its share there
        share = {c: np.mean(y[train] == c) for c in ("common", "rare")}
        p_true = np.array([share[c] for c in y[test]])
        assert res.zero_one_loss == pytest.approx(np.mean(y[test] == "rare"))
        assert res.log_loss == pytest.approx(np.mean(-np.log(np.maximum(p_true, 1e-15))))
        assert res.rmse == pytest.approx(np.sqrt(np.mean((1 - p_true) ** 2)))


def test_summarise_is_mean_and_sample_standard_deviation(tictactoe):
    X, y = tictactoe
    results = cross_validate(lambda: BayesNetClassifier("nb", estimation="m", m=1.0), X, y,
                             n_folds=2, n_repeats=2, seed=1)
    s = summarise(results)
    for key in METRICS:
        values = [getattr(r, key) for r in results]
        assert s[key]["mean"] == pytest.approx(statistics.fmean(values))
        assert s[key]["sd"] == pytest.approx(statistics.stdev(values))
    assert s["folds"] == 4
    assert summarise(results[:1])["rmse"]["sd"] == 0.0
