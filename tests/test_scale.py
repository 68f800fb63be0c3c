"""Streaming fits, partial_fit and the bounded-memory discretisation statistics.

The reference for every streaming fit is the in-memory fit of the concatenated chunks: counts,
structures and (same seed) predictions must be identical, not close.
"""

from __future__ import annotations

import functools
import os
import tempfile
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath import BayesNetClassifier, HDPOptions
from fastpath.classifier import NotFittedError
from fastpath.counts import CountAccumulator
from fastpath.encode import ClassHistogram, TableEncoder, mdl_cut_points, mdl_cut_points_from_counts
from fastpath.io import load_dataset, read_table
from fastpath.pipeline import FitConfig
from fastpath.pipeline._holdout import holdout_key, holdout_rows, holdout_threshold, row_hashes
from fastpath.pipeline._stages import choose_m
from fastpath.scale import StreamError, declare_schema, fit_stream
from fastpath.utils._validation import as_generator

STRUCTURES = [("nb", 0), ("tan", 1), ("kdb", 2), ("skdb", 2)]


# the out-of-core drivers are checked with m-estimates (no sampling: fast, exact to compare);
# the HDP path of each driver has tests of its own below
_m_classifier = functools.partial(BayesNetClassifier, estimation="m")


def _fit_stream(est, X, y, **driver_options):
    """The streaming driver with options the estimator does not expose (``pair_memory``,
    ``max_bins``); its result assigned to ``est`` as ``fit`` assigns it."""
    est._assign(fit_stream(FitConfig.from_params(est.get_params()), X, y, **driver_options))
    return est


def _frame(name):
    X, y = load_dataset(name)
    df = X.copy()
    df["class"] = np.asarray(y)
    return X, np.asarray(y), df


def _chunks(df, size):
    return lambda: (df.iloc[s : s + size] for s in range(0, len(df), size))


def _assert_same_model(a, b, X):
    assert a.encoder_.to_dict() == b.encoder_.to_dict()
    assert a.structure_ == b.structure_
    assert a.tree_specs_ == b.tree_specs_
    for ta, tb in zip(a.trees_, b.trees_, strict=True):
        np.testing.assert_array_equal(ta.counts, tb.counts)
        np.testing.assert_array_equal(ta.parent, tb.parent)
    assert a.m_ == b.m_ and a.m_scores_ == b.m_scores_
    np.testing.assert_array_equal(a.classes_, b.classes_)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


# ====================================================================== holdout rows
def test_holdout_threshold_selects_the_same_rows_as_holdout_rows():
    n, n_hold, key = 12_345, 1_234, 987654321
    rows = holdout_rows(n, n_hold, key)
    t = holdout_threshold(n, n_hold, key, block=1000)  # several blocks
    by_chunks = np.concatenate(
        [s + np.flatnonzero(row_hashes(s, min(s + 777, n), key) <= t) for s in range(0, n, 777)]
    )
    np.testing.assert_array_equal(rows, by_chunks)
    assert rows.size == n_hold and np.all(np.diff(rows) > 0)
    # hashes are distinct (a bijection of the index) and depend on the key
    h = row_hashes(0, n, key)
    assert np.unique(h).size == n
    assert not np.array_equal(holdout_rows(n, n_hold, key + 1), rows)


def test_in_memory_fit_holds_out_the_hashed_rows():
    """m="holdout" scores m on exactly holdout_rows(n, min(n/10, 5000), key)."""
    X, y, _ = _frame("car")
    clf = _m_classifier("nb", m="holdout", random_state=7).fit(X, y)
    key = holdout_key(as_generator(7))
    hold = holdout_rows(len(X), len(X) // 10, key)
    train = np.setdiff1d(np.arange(len(X)), hold)
    ref = _m_classifier("nb", m="holdout", random_state=7)
    ref.fit(X, y)  # to get encoder and specs
    codes, y_codes = ref.transform_codes(X), ref.classes_.searchsorted(y)
    acc = CountAccumulator(ref.tree_specs_).update(codes[train], y_codes[train])
    m, scores = choose_m(ref.tree_specs_, acc, codes[hold], y_codes[hold])
    assert scores == clf.m_scores_ and m == clf.m_


# ====================================================================== counts-based MDL
@settings(max_examples=150, deadline=None)
@given(
    st.integers(2, 300),
    st.integers(1, 4),
    st.integers(1, 40),
    st.integers(1, 6),
    st.integers(0, 2**31 - 1),
)
def test_exact_histogram_gives_the_in_memory_cut_points(n, n_classes, n_values, n_chunks, seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, n_values, n) * rng.choice([1.0, 0.37, 1e-3, 1e6])
    y = rng.integers(0, n_classes, n)
    if n_classes > 1 and seed % 2:
        y = ((x > np.median(x)) ^ (rng.random(n) < 0.1)).astype(int) % n_classes
    h = ClassHistogram(max_bins=64)
    for part in np.array_split(np.arange(n), n_chunks):
        h.update(x[part], y[part])
    assert h.exact and h.n_rows == n
    counts = np.zeros((h.n_bins, n_classes), np.int64)
    counts[:, : h.n_classes] = h.counts
    got = mdl_cut_points_from_counts(h.lo, h.hi, counts)
    np.testing.assert_array_equal(got, mdl_cut_points(x, y, n_classes))


def test_histogram_merge_is_order_free_while_exact_and_bounded_after():
    rng = np.random.default_rng(1)
    x = rng.integers(0, 500, 5000).astype(float)
    y = rng.integers(0, 3, 5000)
    a = ClassHistogram(max_bins=1000).update(x[:2000], y[:2000])
    b = ClassHistogram(max_bins=1000).update(x[2000:], y[2000:])
    whole = ClassHistogram(max_bins=1000).update(x, y)
    merged = b.merge(a)
    np.testing.assert_array_equal(merged.lo, whole.lo)
    np.testing.assert_array_equal(merged.counts, whole.counts)
    # continuous values: bounded, counts conserved, ranges sorted and disjoint, cuts are
    # midpoints between observed values
    h = ClassHistogram(max_bins=64)
    z = rng.normal(size=20_000)
    cls = (z + rng.normal(size=z.size) > 0).astype(int)
    for part in np.array_split(np.arange(z.size), 13):
        h.update(z[part], cls[part])
        assert h.n_bins <= 64
    assert not h.exact and h.counts.sum() == z.size and h.n_rows == z.size
    assert np.all(h.hi[:-1] < h.lo[1:]) and np.all(h.lo <= h.hi)
    cuts = h.cut_points()
    values = np.sort(z)
    for c in cuts:
        i = np.searchsorted(values, c)
        assert values[i - 1] < c < values[i]
        assert c == (values[i - 1] + values[i]) / 2


def test_merging_compressed_histograms_keeps_their_resolution():
    """Partials (Dask partitions) whose ranges interleave must not fuse into a few ranges."""
    rng = np.random.default_rng(5)
    n = 200_000
    x = rng.normal(size=n).round(3)
    y = (x + 0.7 * rng.normal(size=n) > 0.3).astype(int)
    parts = []
    for idx in np.array_split(np.arange(n), 8):
        h = ClassHistogram(max_bins=512)
        for sub in np.array_split(idx, 3):
            h.update(x[sub], y[sub])
        assert not h.exact
        parts.append(h)
    merged = parts[0]
    for h in parts[1:]:
        merged.merge(h)
    assert 256 <= merged.n_bins <= 512
    assert merged.counts.sum() == n and merged.n_rows == n
    assert np.all(merged.hi[:-1] < merged.lo[1:])
    one = ClassHistogram(max_bins=512).update(x, y)
    assert abs(len(merged.cut_points()) - len(one.cut_points())) <= 3


def test_approximate_cut_points_keep_the_class_information():
    """Beyond max_bins distinct values the cuts move (MDL is unstable on noisy data), but the
    discretised column keeps the information about the class of the in-memory cuts."""
    from fastpath.encode import apply_cut_points

    rng = np.random.default_rng(3)
    n = 50_000
    x = rng.normal(size=n)
    y = (x + 0.7 * rng.normal(size=n) > 0.4).astype(int)

    def information(cuts):
        table = np.zeros((len(cuts) + 1, 2))
        np.add.at(table, (apply_cut_points(x, cuts), y), 1)
        p = table / n
        indep = p.sum(axis=1, keepdims=True) @ p.sum(axis=0, keepdims=True)
        return float(np.sum(p[p > 0] * np.log(p[p > 0] / indep[p > 0])))

    ref = mdl_cut_points(x, y, 2)
    for max_bins in (64, 1024):
        h = ClassHistogram(max_bins=max_bins)
        for part in np.array_split(np.arange(n), 10):
            h.update(x[part], y[part])
        got = h.cut_points()
        assert abs(len(got) - len(ref)) <= 0.25 * len(ref)
        assert information(got) > 0.99 * information(ref)


def test_mdl_counts_input_checks():
    with pytest.raises(ValueError, match="sorted and disjoint"):
        mdl_cut_points_from_counts([0.0, 0.0], [0.0, 1.0], [[1], [1]])
    with pytest.raises(ValueError, match="finite"):
        mdl_cut_points_from_counts([0.0, np.inf], [0.0, np.inf], [[1], [1]])
    with pytest.raises(ValueError, match="max_bins"):
        ClassHistogram(max_bins=2)


# ====================================================================== streaming = in memory
@pytest.mark.parametrize("structure,k", STRUCTURES)
@pytest.mark.parametrize("name", ["car", "credit-a"])
def test_stream_of_chunks_equals_in_memory_fit(name, structure, k):
    X, y, df = _frame(name)
    a = _m_classifier(structure, k, random_state=1).fit(X, y)
    b = _m_classifier(structure, k, random_state=1).fit(_chunks(df, 97), "class")
    _assert_same_model(a, b, X)
    assert b.n_passes_ == {"nb": 2, "tan": 3, "kdb": 3, "skdb": 4}[structure] + 1  # m="auto"
    if structure == "skdb":
        np.testing.assert_array_equal(a.selection_.rmse, b.selection_.rmse)


def test_threaded_leave_one_out_sums_rows_in_the_in_memory_order(monkeypatch):
    import fastpath.scale._stats as stats

    X, y, df = _frame("kr-vs-kp")
    monkeypatch.setattr(stats, "LOO_BLOCK", 37)  # many blocks straddling row chunks
    a = _m_classifier("skdb", 3, random_state=0).fit(X, y)
    for n_jobs in (1, 3):
        b = _m_classifier("skdb", 3, random_state=0, n_jobs=n_jobs)
        b.fit(_chunks(df, 333), "class")
        np.testing.assert_array_equal(a.selection_.rmse, b.selection_.rmse)


@pytest.mark.parametrize("suffix", [".csv", ".csv.gz", ".parquet"])
def test_stream_from_file_equals_in_memory_fit_of_read_table(tmp_path, suffix):
    _, _, df = _frame("credit-a")
    path = tmp_path / f"data{suffix}"
    if suffix == ".parquet":
        df.to_parquet(path)
    else:
        df.to_csv(path, index=False)
    table = read_table(path).frame
    X, y = table.drop(columns="class"), table["class"]
    a = _m_classifier("kdb", 2, random_state=5).fit(X, y)
    b = _m_classifier("kdb", 2, random_state=5).fit(str(path), chunksize=50)
    _assert_same_model(a, b, X)
    assert list(b.feature_names_in_) == list(X.columns)


def test_sparse_pair_tables_and_pair_groups_keep_the_summation_order():
    """Pairs with more cells than rows are summed in first-row order by structure.py."""
    rng = np.random.default_rng(4)
    n = 60
    df = pd.DataFrame({f"a{j}": rng.integers(0, 12, n).astype(str) for j in range(6)})
    df["y"] = np.where(rng.random(n) < 0.5, "p", "q")
    X, y = df.drop(columns="y"), df["y"]
    for structure, k in [("tan", 1), ("kdb", 3)]:
        a = _m_classifier(structure, k, random_state=0).fit(X, y)
        b = _fit_stream(_m_classifier(structure, k, random_state=0), _chunks(df, 7), "y",
                        pair_memory=1)  # one pass per pair
        assert b.n_passes_ == 2 + 15 + 1  # + the m="auto" pass
        np.testing.assert_array_equal(
            a.structure_.conditional_mutual_information, b.structure_.conditional_mutual_information
        )
        _assert_same_model(a, b, X)


def test_one_shot_iterator_is_spilled_and_cleaned_up():
    X, y, df = _frame("tic-tac-toe")
    before = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("hdpbn-stream-")}
    it = (df.iloc[s : s + 100] for s in range(0, len(df), 100))
    b = _m_classifier("tan", random_state=2).fit(it, "class")
    after = {p for p in os.listdir(tempfile.gettempdir()) if p.startswith("hdpbn-stream-")}
    assert after == before
    _assert_same_model(_m_classifier("tan", random_state=2).fit(X, y), b, X)


@pytest.mark.parametrize("structure,k", [("kdb", 2), ("skdb", 2)])
@pytest.mark.parametrize("m", [1.0, "auto", "holdout"])
def test_stream_copies_the_counts_only_for_a_holdout(monkeypatch, structure, k, m):
    # the counts of every row: without a holdout the training counts themselves (read, never
    # updated, by the later passes: the same model as in memory), with one a copy of them
    import copy

    from fastpath.counts import CountAccumulator as Accumulator

    copied = []
    deepcopy = copy.deepcopy

    def counting_deepcopy(x, memo=None):
        if isinstance(x, Accumulator):
            copied.append(x)
        return deepcopy(x, memo)

    monkeypatch.setattr(copy, "deepcopy", counting_deepcopy)
    X, y, df = _frame("credit-a")
    a = _m_classifier(structure, k, m=m, random_state=2).fit(X, y)
    b = _m_classifier(structure, k, m=m, random_state=2).fit(_chunks(df, 97), "class")
    _assert_same_model(a, b, X)
    assert len(copied) == (1 if m == "holdout" else 0)


def test_hdp_stream_equals_in_memory():
    X, y, df = _frame("car")
    params = dict(estimation="hdp", sampler=HDPOptions.preset("adaptive", n_iter=60),
                  random_state=3, n_jobs=1)
    a = _m_classifier("kdb", 1, **params).fit(X, y)
    b = _m_classifier("kdb", 1, **params).fit(_chunks(df, 500), "class")
    for ta, tb in zip(a.probability_tables_, b.probability_tables_, strict=True):
        np.testing.assert_array_equal(ta, tb)
    assert not hasattr(b, "m_")  # no m to choose for HDP estimates, as in memory


def test_numeric_columns_with_many_values_are_about_as_accurate_as_in_memory():
    rng = np.random.default_rng(8)

    def sample(n):
        x = rng.normal(size=(n, 3))
        y = np.where(x[:, 0] + 0.5 * x[:, 1] + 0.5 * rng.normal(size=n) > 0, "a", "b")
        return pd.DataFrame(x, columns=["u", "v", "w"]), y

    X, y = sample(20_000)
    X_test, y_test = sample(20_000)
    a = _m_classifier("nb", random_state=0).fit(X, y)
    b = _fit_stream(_m_classifier("nb", random_state=0), _chunks(X.assign(cls=y), 3000),
                    "cls", max_bins=256)
    for ca, cb in zip(a.encoder_.codings_, b.encoder_.codings_, strict=True):
        assert abs(len(ca.cut_points) - len(cb.cut_points)) <= 0.25 * len(ca.cut_points) + 1
    assert abs(a.score(X_test, y_test) - b.score(X_test, y_test)) < 0.005


# ====================================================================== arguments
def test_stream_arguments_are_checked():
    _, _, df = _frame("car")
    with pytest.raises(TypeError, match="name of the target column"):
        _m_classifier().fit(_chunks(df, 100), np.zeros(len(df)))
    with pytest.raises(ValueError, match="not in the data"):
        _m_classifier().fit(_chunks(df, 100), "nope")
    with pytest.raises(ValueError, match="chunksize"):
        _m_classifier().fit("whatever.csv", chunksize=0)
    with pytest.raises(ValueError, match="chunksize applies"):
        X, y, _ = _frame("car")
        _m_classifier().fit(X, y, chunksize=10)
    with pytest.raises(FileNotFoundError):
        _m_classifier().fit("/nonexistent/file.csv")
    with pytest.raises(TypeError, match="fresh iterator"):
        _m_classifier().fit(lambda: df, "class")


# ====================================================================== bad input
def _write_csv(tmp_path, df, edit=None):
    path = tmp_path / "data.csv"
    df.to_csv(path, index=False)
    if edit is not None:
        lines = path.read_text().splitlines()
        edit(lines)
        path.write_text("\n".join(lines) + "\n")
    return path


def _bad_frame():
    rng = np.random.default_rng(0)
    n = 400
    return pd.DataFrame({
        "a": rng.choice(["x", "y", "z"], n),
        "b": rng.normal(size=n).round(2),
        "c": rng.choice(["u", "v"], n),
        "cls": rng.choice([0, 1], n),
    })


def _fitted_before():
    X, y, _ = _frame("car")
    clf = _m_classifier("kdb", 1, random_state=0).fit(X, y)
    return clf, X, clf.predict_proba(X)


def _extra_field(lines):
    lines[1 + 375] += ",extra"


def _not_a_number(lines):
    parts = lines[1 + 375].split(",")
    parts[1] = "abc"
    lines[1 + 375] = ",".join(parts)


def _infinite(lines):
    parts = lines[1 + 375].split(",")
    parts[1] = "inf"
    lines[1 + 375] = ",".join(parts)


def _text_class(lines):
    parts = lines[1 + 375].split(",")
    parts[3] = "maybe"
    lines[1 + 375] = ",".join(parts)


def _missing_class(lines):
    parts = lines[1 + 375].split(",")
    parts[3] = ""
    lines[1 + 375] = ",".join(parts)


@pytest.mark.parametrize(
    "edit,pattern",
    [
        (_extra_field, r"chunk 37 \(rows 370-379\), row 375 \(line 377 of the file\).*malformed"),
        (_not_a_number, r"chunk 37 \(rows 370-379\), row 375, column 'b': value 'abc' is not.*"
                        r"numeric_errors='raise'"),
        (_infinite, r"chunk 37 \(rows 370-379\), row 375, column 'b': value inf is infinite"),
        (_missing_class, r"chunk 37 \(rows 370-379\), row 375, column 'cls': .*missing value"),
        (_text_class, r"chunk 37 \(rows 370-379\), row 375, column 'cls': class label 'maybe'"),
    ],
)
def test_bad_csv_row_in_chunk_37_names_it_and_leaves_the_model_alone(tmp_path, edit, pattern):
    path = _write_csv(tmp_path, _bad_frame(), edit)
    with pytest.raises(StreamError, match=pattern):
        _m_classifier("kdb", 2, numeric_errors="raise").fit(path, chunksize=10)
    fresh = _m_classifier("kdb", 2, numeric_errors="raise")
    with pytest.raises(StreamError):
        fresh.fit(path, chunksize=10)
    with pytest.raises(NotFittedError):
        fresh.predict(_bad_frame().drop(columns="cls"))
    assert not [k for k in vars(fresh) if k.endswith("_")]
    clf, X, before = _fitted_before()
    with pytest.raises(StreamError):
        clf.set_params(numeric_errors="raise").fit(path, chunksize=10)
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    assert list(clf.feature_names_in_) == list(X.columns)


@pytest.mark.parametrize(
    "mutate,pattern",
    [
        (lambda c: c.assign(d=1.0), r"chunk 37 \(rows 370-379\), column 'd': a new column"),
        (lambda c: c.drop(columns="c"), r"chunk 37 \(rows 370-379\), column 'c': missing"),
        (
            lambda c: c.assign(b=c["b"].astype(object).where(c.index != 375, "oops")),
            r"chunk 37 \(rows 370-379\), row 375, column 'b': value 'oops' is not a number",
        ),
    ],
)
def test_bad_chunk_in_an_iterator_names_chunk_row_column(mutate, pattern):
    df = _bad_frame()

    def chunks():
        for i, s in enumerate(range(0, len(df), 10)):
            c = df.iloc[s : s + 10]
            yield mutate(c) if i == 37 else c

    clf, X, before = _fitted_before()
    with pytest.raises(StreamError, match=pattern):
        clf.set_params(numeric_errors="raise").fit(chunks, "cls")
    np.testing.assert_array_equal(clf.predict_proba(X), before)


def test_source_that_changes_between_passes_is_caught():
    df = _bad_frame()
    calls = [0]

    def chunks():
        calls[0] += 1
        frame = df if calls[0] == 1 else df.assign(a=df["a"].where(df.index != 123, "new"))
        return (frame.iloc[s : s + 50] for s in range(0, len(frame), 50))

    with pytest.raises(StreamError, match=r"chunk 2 .*row 123, column 'a'.*changed between"):
        _m_classifier("nb").fit(chunks, "cls")


# ====================================================================== partial_fit
def test_partial_fit_with_declared_schema_equals_fit():
    X, y, _ = _frame("credit-a")
    schema = TableEncoder().fit(X, np.unique(y, return_inverse=True)[1], 2)
    a = _m_classifier("nb", m="holdout", random_state=4).fit(X, y)
    b = _m_classifier("nb", m="holdout", random_state=4)
    for s in range(0, len(X), 111):
        b.partial_fit(X.iloc[s : s + 111], y[s : s + 111], classes=np.unique(y), schema=schema,
                      refresh=False)
    assert b._partial_state.stale and not hasattr(b, "trees_")
    with pytest.raises(NotFittedError, match="refresh_tables"):
        b.predict_proba(X.iloc[:1])  # prediction never re-estimates
    b.refresh_tables()  # the deferred re-estimation
    assert not b._partial_state.stale
    _assert_same_model(a, b, X)


@pytest.mark.parametrize("rows", [None, 200])
def test_partial_fit_weighs_the_rows_a_fit_weighs(monkeypatch, rows):
    # every row, or (rows=200) a sample by position: the reservoir keeps the fit's rows
    import fastpath.pipeline._weights as weights
    import fastpath.scale._partial as partial
    if rows is not None:
        monkeypatch.setattr(weights, "layer_rows", lambda n_classes: rows)
        monkeypatch.setattr(partial, "layer_rows", lambda n_classes: rows)
    X, y, _ = _frame("credit-a")
    schema = TableEncoder().fit(X, np.unique(y, return_inverse=True)[1], 2)
    params = dict(m="holdout", random_state=4, discriminative="attribute_class")
    a = _m_classifier("nb", **params).fit(X, y)
    b = _m_classifier("nb", **params)
    for s in range(0, len(X), 111):
        b.partial_fit(X.iloc[s : s + 111], y[s : s + 111], classes=np.unique(y), schema=schema)
    _assert_same_model(a, b, X)
    np.testing.assert_array_equal(a.members_[0].term_weights, b.members_[0].term_weights)
    np.testing.assert_array_equal(a.predict_proba(X), b.predict_proba(X))


def test_partial_fit_counts_every_row_and_reestimates_at_the_call():
    X, y, _ = _frame("car")
    perm = np.random.default_rng(0).permutation(len(X))  # car is sorted: mix its rows
    X, y = X.iloc[perm].reset_index(drop=True), y[perm]
    clf = _m_classifier("kdb", 2, random_state=0)
    clf.partial_fit(X.iloc[:700], y[:700], classes=np.unique(y))
    p1 = clf.predict_proba(X)
    clf.partial_fit(X.iloc[700:], y[700:], refresh=False)
    assert clf._partial_state.stale
    np.testing.assert_array_equal(clf.predict_proba(X), p1)  # the last estimate, unchanged
    clf.refresh_tables()  # re-estimates from every row
    assert not clf._partial_state.stale
    p2 = clf.predict_proba(X)
    assert not np.array_equal(p1, p2)
    specs = clf.tree_specs_
    codes = clf.transform_codes(X)
    ref = CountAccumulator(specs).update(codes, np.searchsorted(clf.classes_, y))
    for i, tree in enumerate(clf.trees_):
        np.testing.assert_array_equal(tree.counts, ref.tree(i).counts)
    # structure and schema come from the first chunk and stay
    first = _m_classifier("kdb", 2, random_state=0).fit(X.iloc[:700], y[:700])
    assert clf.structure_ == first.structure_
    # fit() starts afresh
    clf.fit(X, y)
    assert not hasattr(clf, "_partial_state")


def test_partial_fit_rejects_values_outside_the_schema_and_adds_nothing():
    X, y, _ = _frame("car")
    clf = _m_classifier("nb", m=1.0).partial_fit(X.iloc[:500], y[:500], classes=np.unique(y))
    before = clf.predict_proba(X)
    bad = X.iloc[500:600].copy()
    bad.iloc[17, 2] = "eleven"
    with pytest.raises(StreamError, match=r"call 1, row 17, column 'doors': value 'eleven'"):
        clf.partial_fit(bad, y[500:600])
    with pytest.raises(StreamError, match="class label 'nope'"):
        clf.partial_fit(X.iloc[500:510], np.array(["nope"] * 10, dtype=object))
    np.testing.assert_array_equal(clf.predict_proba(X), before)
    with pytest.raises(ValueError, match="expecting 6 features"):
        clf.partial_fit(X.iloc[:5, :5].to_numpy(), y[:5])


def test_partial_fit_declared_schema_accepts_later_values():
    schema = declare_schema(
        {"colour": ["red", "green", "blue"], "size": {"cut_points": [1.0, 2.0]}}, missing=["size"]
    )
    assert schema.cardinalities_ == (3, 4)
    first = pd.DataFrame({"colour": ["red", "red", "green"], "size": [0.5, 1.5, np.nan]})
    later = pd.DataFrame({"colour": ["blue", "green"], "size": [3.0, 2.0]})
    clf = _m_classifier("nb", m=1.0)
    clf.partial_fit(first, ["a", "b", "a"], classes=["a", "b", "c"], schema=schema)
    clf.partial_fit(later, ["c", "b"])
    proba = clf.predict_proba(later)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert clf.trees_[0].counts[0].tolist() == [2, 2, 1]
    with pytest.raises(ValueError, match="cut points"):
        declare_schema({"s": {"cut_points": [2.0, 1.0]}})
    with pytest.raises(ValueError, match="distinct"):
        declare_schema({"s": ["a", "a"]})


def test_partial_fit_first_chunk_needs_two_classes():
    X, y, _ = _frame("car")
    one = y == y[0]
    with pytest.raises(ValueError, match="classes="):
        _m_classifier().partial_fit(X[one].iloc[:20], y[one][:20])
    # accepted with classes=, but no longer silently (issue 17, item 10): the chunk fixes the
    # coding of every column without the other classes' rows
    with pytest.warns(UserWarning, match="first chunk holds no row of the classes"):
        _m_classifier().partial_fit(X[one].iloc[:20], y[one][:20], classes=np.unique(y))


# ---------------------------------------------------------------- stray tokens (issue 17, item 3)
def _stray_csv(tmp_path, later_token="?"):
    df = _bad_frame()
    b = df["b"].astype(object)
    b[[3, 150, 390]] = ["?", "?", later_token]  # "?" in the first chunk: 1 of 100 values
    path = tmp_path / "stray.csv"
    df.assign(b=b).to_csv(path, index=False)
    return path


def test_streamed_fit_reads_stray_tokens_of_the_first_chunk_as_missing(tmp_path):
    path = _stray_csv(tmp_path)
    with pytest.warns(UserWarning, match=r"column 'b' is read as numbers: 3 of its 400 .*"
                                         r"'\?' \(3x\).*na_values=\['\?'\]"):
        streamed = _m_classifier(m=1).fit(path, chunksize=100)
    b = streamed.encoder_.codings_[1]
    assert b.kind == "numeric" and b.missing_tokens == ("?",) and b.missing_code is not None
    with pytest.warns(UserWarning, match="column 'b' is read as numbers"):
        table = read_table(path).frame
    X, y = table.drop(columns="cls"), table["cls"]
    in_memory = _m_classifier(m=1).fit(X, y)
    assert in_memory.encoder_.codings_[1].cut_points == b.cut_points
    np.testing.assert_array_equal(streamed.predict_proba(X), in_memory.predict_proba(X))


def test_streamed_fit_reads_a_new_token_after_the_first_chunk_as_missing(tmp_path):
    """Issue 29, point 1: a token first seen in a later chunk is missing, as in memory (it
    stopped the fit before), said once with its count over the stream; with
    numeric_errors="raise" it stops the fit naming the chunk, row, column and value."""
    path = _stray_csv(tmp_path, later_token="oops")
    with pytest.warns(UserWarning, match=r"column 'b' is read as numbers: 3 of its 400 .*"
                                         r"'\?' \(2x\), 'oops' \(1x\)") as caught:
        streamed = _m_classifier(m=1).fit(path, chunksize=100)
    assert sum("'b'" in str(w.message) for w in caught) == 1
    assert streamed.encoder_.codings_[1].missing_tokens == ("?", "oops")
    table = read_table(path, na_values=["?", "oops"]).frame
    X, y = table.drop(columns="cls"), table["cls"]
    in_memory = _m_classifier(m=1).fit(X, y)
    np.testing.assert_array_equal(streamed.predict_proba(X), in_memory.predict_proba(X))
    with pytest.raises(StreamError, match=r"chunk 0 \(rows 0-99\), row 3, column 'b': value "
                                          r"'\?' is not a number.*numeric_errors='raise'"):
        _m_classifier(numeric_errors="raise").fit(path, chunksize=100)


def test_partial_fit_warns_when_the_first_chunk_lacks_classes():
    rng = np.random.default_rng(0)
    n = 400
    y = np.repeat(["a", "b"], n // 2)  # class-sorted rows
    X = pd.DataFrame({"x": np.where(y == "a", 0.0, 3.0) + rng.normal(0, 0.5, n)})
    clf = _m_classifier("nb", m=1)
    with pytest.warns(UserWarning, match=r"first chunk holds no row of the classes \['b'\].*'x'"):
        clf.partial_fit(X.iloc[:100], y[:100], classes=["a", "b"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a first chunk with every class: no warning
        _m_classifier("nb", m=1).partial_fit(X.iloc[::4], y[::4])


# ====================================================================== sampled selection
def test_sampled_selection_streams_like_in_memory(monkeypatch):
    """selection_rows: a chunked fit scores the same sampled rows as the in-memory fit."""
    import fastpath.scale._stats as stats

    X, y, df = _frame("kr-vs-kp")
    monkeypatch.setattr(stats, "LOO_BLOCK", 37)  # blocks straddling the global row chunks
    a = _m_classifier("skdb", 3, random_state=0, selection_rows=400).fit(X, y)
    full = _m_classifier("skdb", 3, random_state=0).fit(X, y)
    assert not np.array_equal(a.selection_.rmse, full.selection_.rmse)
    for n_jobs in (1, 3):
        b = _m_classifier("skdb", 3, random_state=0, selection_rows=400, n_jobs=n_jobs)
        b.fit(_chunks(df, 333), "class")
        np.testing.assert_array_equal(a.selection_.rmse, b.selection_.rmse)
        _assert_same_model(a, b, X)


def test_selection_rows_at_least_the_data_scores_every_row():
    X, y, _ = _frame("car")
    a = _m_classifier("skdb", 3, random_state=0).fit(X, y)
    b = _m_classifier("skdb", 3, random_state=0, selection_rows=len(y)).fit(X, y)
    np.testing.assert_array_equal(a.selection_.rmse, b.selection_.rmse)
    with pytest.raises(ValueError, match="selection_rows"):
        _m_classifier("skdb", 3, selection_rows=0).fit(X, y)
    with pytest.raises(ValueError, match="selection_rows must be a positive integer, 'auto'"):
        _m_classifier("skdb", 3, selection_rows="all").fit(X, y)


def test_selection_rows_auto_grows_with_the_classes():
    config = FitConfig.from_params({**_m_classifier("skdb", 3).get_params(),
                                    "selection_rows": "auto"})
    assert config.selection_sample(2) == 5000 and config.selection_sample(23) == 23000
    assert FitConfig.from_params(_m_classifier("skdb", 3).get_params()).selection_sample(9) is None
