"""Dask fits on a LocalCluster: counts and models identical to the in-memory fit; a Dask
DataFrame predicted as a Dask array equal to the in-memory prediction."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier, ESKDBClassifier
from fastpath.classifier import NotFittedError
from fastpath.io import load_dataset
from fastpath.scale import StreamError

dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")

pytestmark = pytest.mark.xdist_group("dask")


@pytest.fixture(scope="module")
def client():
    # a worker process: the statistics really travel pickled between processes (one: a
    # second would load the same kernels again, about 9 CPU seconds of the suite)
    cluster = distributed.LocalCluster(
        n_workers=1, threads_per_worker=1, processes=True, dashboard_address=None
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _frame(name):
    X, y = load_dataset(name)
    df = X.copy()
    df["class"] = np.asarray(y)
    return X, np.asarray(y), df


@pytest.mark.parametrize("structure,k", [("nb", 0), ("tan", 1), ("kdb", 2), ("skdb", 2)])
def test_dask_fit_equals_in_memory_fit(client, structure, k):
    X, y, df = _frame("credit-a")  # numeric and nominal columns, missing values
    ddf = dd.from_pandas(df, npartitions=5)
    a = BayesNetClassifier(structure, k, estimation="m", random_state=3).fit(X, y)
    b = BayesNetClassifier(structure, k, estimation="m", random_state=3).fit(ddf, "class",
                                                                         chunksize=60)
    assert b.n_passes_ == {"nb": 2, "tan": 3, "kdb": 3, "skdb": 4}[structure] + 1  # m="auto"
    assert a.encoder_.to_dict() == b.encoder_.to_dict()
    assert a.structure_ == b.structure_
    for ta, tb in zip(a.trees_, b.trees_, strict=True):
        np.testing.assert_array_equal(ta.counts, tb.counts)
    assert a.m_ == b.m_ and a.m_scores_ == b.m_scores_
    if structure == "skdb":
        # per-partition sums of the leave-one-out errors: equal up to rounding (module doc)
        np.testing.assert_allclose(a.selection_.rmse, b.selection_.rmse, rtol=1e-12)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


def test_dask_ensemble_fit_equals_in_memory_fit():
    # every member's stochastic cut points (the forced cut of a column of noise included),
    # order and tables are the in-memory fit's
    X, y, df = _frame("credit-a")
    noise = np.random.default_rng(0).normal(size=len(X)).round(1)
    X, df = X.assign(noise=noise), df.assign(noise=noise)[[*X.columns, "noise", "class"]]
    params = dict(n_estimators=3, k=2, estimation="m", random_state=1)
    import dask

    with dask.config.set(scheduler="synchronous"):
        b = ESKDBClassifier(**params).fit(dd.from_pandas(df, npartitions=4), "class")
    a = ESKDBClassifier(**params).fit(X, y)
    for ma, mb in zip(a.members_, b.members_, strict=True):
        assert ma.encoder.codings_ == mb.encoder.codings_ and ma.order == mb.order
        assert len(ma.encoder.codings_[X.columns.get_loc("noise")].cut_points) >= 1
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_dask_fit_without_a_client_uses_the_local_scheduler():
    X, y, df = _frame("car")
    import dask

    with dask.config.set(scheduler="threads"):
        b = BayesNetClassifier("kdb", 1, random_state=0).fit(dd.from_pandas(df, npartitions=3))
    a = BayesNetClassifier("kdb", 1, random_state=0).fit(X, y)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_bad_partition_names_partition_row_and_column(client):
    from dask import delayed

    rng = np.random.default_rng(0)
    n = 300
    df = pd.DataFrame({
        "a": rng.choice(["x", "y"], n),
        "b": rng.normal(size=n),
        "cls": rng.choice(["p", "q"], n),
    })
    parts = [df.iloc[s : s + 100] for s in range(0, n, 100)]
    bad = parts[2].assign(b=parts[2]["b"].astype(object))
    bad.iloc[17, 1] = "oops"  # row 217: partition 2's numeric column holds a string
    parts[2] = bad
    ddf = dd.from_delayed([delayed(p) for p in parts], meta=df.iloc[:0], verify_meta=False)
    clf = BayesNetClassifier("nb", numeric_errors="raise")
    with pytest.raises(StreamError, match=r"partition 2, row 17 of partition 2, column 'b'.*oops"):
        clf.fit(ddf, "cls", chunksize=7)
    with pytest.raises(NotFittedError):
        clf.predict(df.drop(columns="cls").iloc[:3])
    # by default the string is a missing value, as in memory, said once with its count
    with pytest.warns(UserWarning, match=r"column 'b' is read as numbers: 1 of its 300 .*'oops'"):
        streamed = BayesNetClassifier("nb", estimation="m").fit(ddf, "cls", chunksize=7)
    whole = pd.concat(parts)
    X = whole.drop(columns="cls").assign(b=pd.to_numeric(whole["b"], errors="coerce"))
    in_memory = BayesNetClassifier("nb", estimation="m").fit(X, whole["cls"])
    np.testing.assert_array_equal(streamed.predict_proba(X), in_memory.predict_proba(X))


def test_dask_fit_with_the_default_hdp_sampler_equals_in_memory_fit():
    # the default estimation method (HDP, adaptive sampler): the same counts and seed give the
    # same chains, so the same tables, iterations and diagnostics
    X, y, df = _frame("credit-a")
    ddf = dd.from_pandas(df, npartitions=4)
    a = BayesNetClassifier("tan", random_state=5).fit(X, y)
    b = BayesNetClassifier("tan", random_state=5).fit(ddf, "class", chunksize=100)
    assert a.estimation == "hdp" and a.sampler == "adaptive"
    for ta, tb in zip(a.probability_tables_, b.probability_tables_, strict=True):
        np.testing.assert_array_equal(ta, tb)
    assert a.n_iter_ == b.n_iter_ and a.diagnostics_.to_dict() == b.diagnostics_.to_dict()


# ---------------------------------------------------------------- predicting a Dask DataFrame
def _synchronous():
    import dask

    return dask.config.set(scheduler="synchronous")


@pytest.mark.parametrize("ensemble", [False, True])
def test_a_dask_frame_predicts_a_dask_array_equal_to_the_in_memory_prediction(ensemble):
    da = pytest.importorskip("dask.array")
    X, y, _ = _frame("credit-a")  # numeric and nominal columns, missing values
    model = (ESKDBClassifier(n_estimators=3, estimation="m", random_state=1) if ensemble
             else BayesNetClassifier("tan", estimation="m", random_state=0)).fit(X, y)
    ddf = dd.from_pandas(X, npartitions=4)
    with _synchronous():
        proba = model.predict_proba(ddf)
        log_proba = model.predict_log_proba(ddf)
        labels = model.predict(ddf)
        for lazy in (proba, log_proba, labels):
            assert isinstance(lazy, da.Array) and lazy.numblocks[0] == 4
        assert proba.shape[1] == log_proba.shape[1] == 2 and proba.dtype == np.float64
        assert labels.ndim == 1 and labels.dtype == model.classes_.dtype
        whole = ddf.compute()
        np.testing.assert_array_equal(proba.compute(), model.predict_proba(whole))
        np.testing.assert_array_equal(log_proba.compute(), model.predict_log_proba(whole))
        np.testing.assert_array_equal(labels.compute(), model.predict(whole))
        # the blocks' row counts are the partitions'
        sizes = proba.compute_chunk_sizes().chunks[0]
        assert sizes == tuple(len(p) for p in ddf.partitions)


def test_a_dask_frame_predicted_on_workers_by_a_dask_fitted_model(client):
    # the model travels pickled to the worker processes; fitted on a Dask DataFrame itself
    X, _, df = _frame("car")
    model = ESKDBClassifier(n_estimators=2, estimation="m", random_state=0)
    model.fit(dd.from_pandas(df, npartitions=3), "class")
    ddf = dd.from_pandas(X, npartitions=5)
    np.testing.assert_array_equal(model.predict_proba(ddf).compute(), model.predict_proba(X))
    np.testing.assert_array_equal(model.predict(ddf).compute(), model.predict(X))


def test_dask_prediction_matches_columns_by_name_and_refuses_a_wrong_set():
    X, y, _ = _frame("credit-a")
    model = BayesNetClassifier("nb", estimation="m").fit(X, y)
    ddf = dd.from_pandas(X, npartitions=3)
    expected = model.predict_proba(X)
    with _synchronous():
        reordered = ddf[list(X.columns[::-1])]
        np.testing.assert_array_equal(model.predict_proba(reordered).compute(), expected)
        # checked when called, on the frame's metadata, before anything is computed
        with pytest.raises(ValueError, match=r"missing columns \['A3'\]"):
            model.predict_proba(ddf.drop(columns="A3"))
        with pytest.raises(ValueError, match=r"unexpected columns \['extra'\]"):
            model.predict(ddf.assign(extra=1.0))
        with pytest.raises(ValueError, match="chunksize does not apply to a Dask DataFrame"):
            model.predict_proba(ddf, chunksize=10)
        with pytest.raises(TypeError, match=r"predict_proba\(ddf\) returns a Dask array"):
            next(model.iter_predict_proba(ddf))
        darr = pytest.importorskip("dask.array").from_array(X.to_numpy(), chunks=100)
        with pytest.raises(TypeError, match="Array of Dask: predict_proba takes a Dask DataFrame"):
            model.predict_proba(darr)
    with pytest.raises(NotFittedError):
        BayesNetClassifier("nb").predict_proba(ddf)


def test_dask_prediction_without_names_unknown_divisions_and_an_empty_partition():
    from dask import delayed

    X, y, _ = _frame("credit-a")
    numbers = X.select_dtypes("number")
    array = numbers.to_numpy()
    model = BayesNetClassifier("tan", estimation="m").fit(array, y)  # no column names
    expected = model.predict_proba(array)
    parts = [numbers.iloc[:300], numbers.iloc[:0], numbers.iloc[300:]]
    ddf = dd.from_delayed([delayed(p) for p in parts], meta=numbers.iloc[:0])
    assert not ddf.known_divisions
    with _synchronous():
        # names the model was fitted without: said once, by the call, not per partition
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            lazy = model.predict_proba(ddf)
            assert [str(w.message)[:22] for w in caught] == ["X has feature names, b"]
            np.testing.assert_array_equal(lazy.compute(), expected)
        assert len(caught) == 1
        assert lazy.compute_chunk_sizes().chunks[0] == (300, 0, len(X) - 300)
        # integer column labels (dd.from_array) are no names: matched by position, silently
        unnamed = dd.from_array(array, chunksize=250)
        np.testing.assert_array_equal(model.predict_proba(unnamed).compute(), expected)
        np.testing.assert_array_equal(model.predict(unnamed).compute(), model.predict(array))


@pytest.mark.parametrize("estimation", ["m", "hdp"])
def test_dask_discriminative_fit_equals_in_memory_fit(estimation):
    # the layer's rows are picked by position: Dask's partitions give the same weights
    X, y, df = _frame("credit-a")
    params = dict(n_estimators=2, k=2, estimation=estimation, random_state=1,
                  discriminative="attribute_class")
    import dask

    with dask.config.set(scheduler="synchronous"):
        b = ESKDBClassifier(**params).fit(dd.from_pandas(df, npartitions=4), "class")
    a = ESKDBClassifier(**params).fit(X, y)
    for ma, mb in zip(a.members_, b.members_, strict=True):
        np.testing.assert_array_equal(ma.term_weights, mb.term_weights)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))
