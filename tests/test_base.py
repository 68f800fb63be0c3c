"""fastpath.classifier._base: one base class for every classifier.

A single classifier is an ensemble of one member: its prediction is its member's, and
``ESKDBClassifier(1, ...)`` without stochastic cut points is ``BayesNetClassifier("skdb", ...)``.
Both classifiers have the same shared parameters by construction. Prediction only reads the
fitted state: it never changes the estimator (not even after ``partial_fit``), and threads
that predict at once with one fitted classifier get what each would get alone.
"""

from __future__ import annotations

import copy
import inspect
import pickle
import threading

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from fastpath import BayesNetClassifier, ESKDBClassifier, HDPOptions, read_table
from fastpath.classifier._base import SHARED_PARAMETERS
from fastpath.io import load_dataset


@pytest.fixture(scope="module")
def credit():
    X, y = load_dataset("credit-a")
    return X, np.asarray(y)


def test_the_classifiers_share_their_parameters_and_differ_in_their_own():
    single = inspect.signature(BayesNetClassifier).parameters
    ensemble = inspect.signature(ESKDBClassifier).parameters
    shared = list(SHARED_PARAMETERS)
    assert list(single)[-len(shared):] == shared == list(ensemble)[-len(shared):]
    for name in shared:
        assert single[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert single[name].annotation == ensemble[name].annotation, name
        if name not in ("sampler", "selection_rows", "discriminative"):
            assert single[name].default == ensemble[name].default, name
    # the constructors keep what most users set (issue 44: at most 16 parameters each; the
    # ensemble's 17th is the discriminative layer, its principal choice after the members, and
    # its 18th the members' structure learner, an extension point: issue 54)
    assert len(single) <= 16 and len(ensemble) <= 18
    assert (single["sampler"].default, ensemble["sampler"].default) == ("adaptive", "ensemble")
    assert (single["selection_rows"].default, ensemble["selection_rows"].default) == (None,
                                                                                        "auto")
    assert list(single)[:3] == ["structure", "k", "estimation"]
    assert list(ensemble)[:4] == ["n_estimators", "k", "estimation", "discretization"]
    # scikit-learn reads them back, and positional arguments bind in order
    clf = BayesNetClassifier("tan", 1, "m", m=2.0)
    assert clf.get_params()["structure"] == "tan" and clf.m == 2.0
    assert clone(clf).get_params() == clf.get_params()
    with pytest.raises(TypeError):
        BayesNetClassifier(bad_parameter=1)


def test_an_ensemble_of_one_selective_kdb_is_the_single_classifier(credit):
    X, y = credit
    params = dict(k=2, estimation="hdp", sampler=HDPOptions.preset("adaptive", n_iter=60),
                  random_state=5, discriminative="attribute_class")
    single = BayesNetClassifier("skdb", **params).fit(X, y)
    one = ESKDBClassifier(1, discretization="mdl", **params).fit(X, y)
    np.testing.assert_array_equal(one.predict_proba(X), single.predict_proba(X))
    np.testing.assert_array_equal(one.predict_log_proba(X), single.predict_log_proba(X))
    assert single.members_[0].selection.to_dict() == one.members_[0].selection.to_dict()
    assert single.structure_ is single.members_[0].structure


def test_single_member_attributes_read_the_member(credit):
    X, y = credit
    clf = BayesNetClassifier("kdb", 1, "m", random_state=0).fit(X, y)
    member = clf.members_[0]
    assert clf.encoder_ is member.encoder and clf.trees_ is member.trees
    assert clf.m_ == member.m and clf.m_scores_ is member.m_scores
    assert not hasattr(clf, "selection_")  # kDB: no selection
    assert not hasattr(BayesNetClassifier().fit(X, y), "m_")  # HDP estimates: no m


def _state(clf) -> bytes:
    return pickle.dumps(clf.__dict__)


def test_prediction_never_changes_the_estimator(credit):
    X, y = credit
    clf = ESKDBClassifier(2, 1, "m", random_state=0)
    clf.partial_fit(X.iloc[:400], y[:400], classes=np.unique(y))
    clf.partial_fit(X.iloc[400:], y[400:], refresh=False)
    before = _state(clf)
    clf.predict_proba(X)
    clf.predict_log_proba(X)
    clf.predict(X)
    assert _state(clf) == before


@pytest.mark.parametrize("make", [
    lambda: BayesNetClassifier("skdb", 2,
                               sampler=HDPOptions.preset("adaptive", n_iter=50), random_state=0),
    lambda: ESKDBClassifier(3, 2, "m", random_state=0),
], ids=["single", "ensemble"])
@pytest.mark.parametrize("n_jobs", [1, None])
def test_threads_may_predict_at_once(credit, make, n_jobs):
    X, y = credit
    clf = make().set_params(n_jobs=n_jobs).fit(X, y)
    blocks = [X.iloc[i::4] for i in range(4)]
    alone = [clf.predict_proba(b) for b in blocks]
    before = _state(clf)
    results: dict[tuple[int, int], np.ndarray] = {}
    barrier = threading.Barrier(8)

    def work(t: int) -> None:
        barrier.wait()  # every thread predicts at the same moment
        for r in range(3):
            results[t, r] = clf.predict_proba(blocks[t % 4])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 24
    for (t, _), proba in results.items():
        np.testing.assert_array_equal(proba, alone[t % 4])
    assert _state(clf) == before


def test_copies_and_pickles_predict_alike(credit):
    X, y = credit
    clf = ESKDBClassifier(2, 1,
                          sampler=HDPOptions.preset("ensemble", n_iter=40),
                          random_state=0).fit(X, y)
    for other in (copy.deepcopy(clf), pickle.loads(pickle.dumps(clf))):
        np.testing.assert_array_equal(other.predict_proba(X), clf.predict_proba(X))


# ---------------------------------------------------------------------- read_table and sep
def _semicolon_file(tmp_path, n: int = 300):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"a": rng.choice(list("xyz"), n), "b": rng.normal(size=n).round(3)})
    frame["y"] = np.where((frame.a == "x") ^ (rng.random(n) < 0.2), "p", "q")
    path = tmp_path / "semi.csv"
    frame.to_csv(path, sep=";", index=False)
    return path


def test_read_tables_result_is_a_table_and_sep_reads_a_path(tmp_path):
    # issue 55, point 3: predict_proba(read_table(...)) was "an array of shape ()", and
    # predict_proba(path, sep=";") a TypeError
    path = _semicolon_file(tmp_path)
    table = read_table(path, sep=";")
    X = table.frame.drop(columns="y")
    reference = BayesNetClassifier(estimation="m").fit(X, table.frame["y"])
    expected = reference.predict_proba(X)
    model = BayesNetClassifier(estimation="m").fit(table, "y")  # the target named, as for a file
    np.testing.assert_array_equal(model.predict_proba(X), expected)
    features = read_table(path, sep=";", columns=["a", "b"])
    for predict in (model.predict_proba, reference.predict_proba):
        np.testing.assert_array_equal(predict(features), expected)
        np.testing.assert_array_equal(predict(path, sep=";"), expected)
    np.testing.assert_array_equal(model.predict(str(path), sep=";"), model.predict(X))
    np.testing.assert_array_equal(model.predict_log_proba(path, sep=";"),
                                  model.predict_log_proba(X))
    np.testing.assert_array_equal(np.vstack(list(model.iter_predict_proba(
        path, sep=";", chunksize=70))), expected)
    streamed = BayesNetClassifier(estimation="m").fit(path, "y", sep=";", chunksize=100)
    np.testing.assert_array_equal(streamed.predict_proba(X), expected)


def test_sep_is_refused_where_nothing_is_read(tmp_path):
    path = _semicolon_file(tmp_path)
    frame = pd.read_csv(path, sep=";")
    X, y = frame[["a", "b"]], frame["y"]
    model = BayesNetClassifier(estimation="m").fit(X, y)
    with pytest.raises(ValueError, match=r"sep is the field separator .* not a DataFrame"):
        model.predict_proba(X, sep=";")
    with pytest.raises(ValueError, match=r"sep is the field separator .* not a DataFrame"):
        BayesNetClassifier(estimation="m").fit(X, y, sep=";")
    with pytest.raises(ValueError, match="sep must be one character"):
        model.predict_proba(path, sep=";;")
    with pytest.raises(ValueError, match="target column 'label'"):
        BayesNetClassifier(estimation="m").fit(read_table(path, sep=";"), "label")
