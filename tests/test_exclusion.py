"""fastpath.encode._exclusion: the columns ``exclude_features="auto"`` leaves out (issue 46,
point 7: dates in common formats, numeric identifiers and high-cardinality nominal columns
were used as parents and over-fitted, without a word)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.encode._exclusion import (
    DATE_PATTERN,
    DISTINCT_SKETCH,
    HIGH_CARDINALITY_MIN,
    HIGH_CARDINALITY_ROWS,
    NUMERIC_IDENTIFIER_MIN_ROWS,
    distinct_sketch,
    estimated_distinct,
)


@pytest.mark.parametrize("text", [
    "2024-01-31", "2024-01-31T12:00:00Z", "2024/01/31 12:00:00", "31/01/2024", "31.01.2024",
    "31-01-2024", "Jan 31, 2024", "jan 31 2024", "31 January 2024", "Sept. 3, 2021",
    "1/2/2003 10:00 PM", "2024.01.31",
])
def test_common_date_formats_read_as_dates(text):
    assert DATE_PATTERN.fullmatch(text)


@pytest.mark.parametrize("text", ["12.5", "1.2.3", "2024", "jan 2024", "3.14159", "31/01",
                                  "A-12-2024", "12:00"])
def test_numbers_and_codes_are_not_dates(text):
    assert not DATE_PATTERN.fullmatch(text)


def _table(n: int = 3000, seed: int = 0) -> tuple[pd.DataFrame, pd.Series]:
    """A few genuine columns and one of each kind the auto rule leaves out."""
    rng = np.random.default_rng(seed)
    a = rng.choice(list("xyz"), n)
    b = rng.normal(size=n)
    y = pd.Series(np.where((a == "x") ^ (rng.random(n) < 0.2), "p", "q"))
    when = pd.Timestamp("2020-01-01") + pd.to_timedelta(rng.integers(0, 2000, n), unit="D")
    balance = rng.normal(600, 80, n).round(2).astype(object)
    balance[rng.random(n) < 0.10] = "?"  # 90 % numbers: stays nominal
    X = pd.DataFrame({
        "a": a, "b": b,
        "id": rng.permutation(np.arange(10_000, 10_000 + n)),
        "signup": when.strftime("%Y/%m/%d %H:%M:%S"),
        "visit": when.strftime("%d.%m.%Y"),
        "birthday": when.strftime("%b %d, %Y"),
        "city": [f"city-{c}" for c in rng.integers(0, 600, n)],  # 5 rows a value
        "balance": balance,
    })
    return X, y


def _fit(X, y, **params):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = BayesNetClassifier(estimator="m", random_state=0, **params).fit(X, y)
    return model, [str(w.message) for w in caught]


def test_the_auto_rule_leaves_out_dates_identifiers_and_high_cardinality_columns():
    X, y = _table()
    model, said = _fit(X, y)
    assert model.excluded_features_ == ("id", "signup", "visit", "birthday", "city", "balance")
    text = " ".join(said)
    assert "numeric column 'id' holds integers of which 3000 are distinct" in text
    for date in ("signup", "visit", "birthday"):
        assert f"column {date!r} holds dates" in text
    assert "nominal column 'city' has 59" in text and "group its rare" in text
    assert "'balance'" in text and "na_values" in text  # mostly numbers: the remedy says so
    assert all(text.count(f"'{c}'") >= 1 for c in model.excluded_features_)
    # the model is the one fitted without them; a user keeps them with None
    without, _ = _fit(X[["a", "b"]], y)
    np.testing.assert_array_equal(model.predict_proba(X), without.predict_proba(X[["a", "b"]]))
    kept, _ = _fit(X, y, exclude_features=None)
    assert kept.excluded_features_ == ()


def test_thresholds_keep_columns_below_them():
    rng = np.random.default_rng(1)
    n = NUMERIC_IDENTIFIER_MIN_ROWS - 1
    y = pd.Series(rng.choice(["p", "q"], 3000))
    X = pd.DataFrame({
        # integers nearly all distinct, but fewer rows than a numeric identifier needs
        "few": np.concatenate([rng.permutation(n), np.zeros(3000 - n, dtype=int)]),
        # all distinct, not integers: a measurement
        "real": rng.normal(size=3000),
        # integers half distinct
        "half": rng.integers(0, 1500, 3000),
        # many values, but enough rows each
        "plenty": [f"v{c}" for c in rng.integers(0, 3000 // HIGH_CARDINALITY_ROWS, 3000)],
        # few rows each, but too few values to be high-cardinality
        "some": [f"w{c}" for c in rng.integers(0, HIGH_CARDINALITY_MIN - 100, 3000)],
    })
    X.loc[n:, "few"] = np.nan
    model, said = _fit(X, y)
    assert model.excluded_features_ == (), said


@pytest.mark.parametrize("chunksize", [500, 1000])
def test_a_fit_in_chunks_leaves_out_the_same_columns(tmp_path, chunksize):
    X, y = _table()
    path = tmp_path / "t.csv"
    X.assign(label=y).to_csv(path, index=False)
    frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
    in_memory, _ = _fit(frame.drop(columns="label"), frame["label"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        streamed = BayesNetClassifier(estimator="m", random_state=0).fit(
            str(path), "label", chunksize=chunksize)
    assert streamed.excluded_features_ == in_memory.excluded_features_
    Xf = frame.drop(columns="label")
    np.testing.assert_array_equal(streamed.predict_proba(Xf), in_memory.predict_proba(Xf))


def test_the_distinct_sketch_is_the_same_in_chunks_and_exact_below_its_size():
    rng = np.random.default_rng(2)
    values = rng.integers(0, 10**9, 20_000).astype(np.float64)
    whole = distinct_sketch(values)
    parts = None
    for chunk in np.array_split(values, 7):
        parts = distinct_sketch(chunk, parts)
    np.testing.assert_array_equal(whole, parts)
    estimate = estimated_distinct(whole)
    assert abs(estimate - np.unique(values).size) < 0.08 * np.unique(values).size
    small = np.repeat(np.arange(DISTINCT_SKETCH - 1, dtype=np.float64), 3)
    assert estimated_distinct(distinct_sketch(small)) == DISTINCT_SKETCH - 1
    assert estimated_distinct(distinct_sketch(np.array([0.0, -0.0]))) == 1


def _quiet_fit(X, y, **params):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return BayesNetClassifier(estimator="m", random_state=0, **params).fit(X, y)


def test_an_array_of_every_column_predicts_as_the_frame_after_exclusions():
    # issue 55, point 1: the array's columns are fit's by position, the left-out ones ignored
    # (an array of all 8 columns was refused: "the encoder was fitted with 2")
    X, y = _table(n=600)
    model = _quiet_fit(X, y)
    assert model.excluded_features_ and model.n_features_in_ == X.shape[1]
    expected = model.predict_proba(X)
    arr = X.to_numpy()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*X does not have valid feature names")
        np.testing.assert_array_equal(model.predict_proba(arr), expected)
        np.testing.assert_array_equal(model.predict(arr), model.predict(X))
        np.testing.assert_array_equal(np.vstack(list(model.iter_predict_proba(arr, chunksize=97))),
                                      expected)
        # streamed: chunks of unnamed columns (e.g. arrays made frames) by position too
        chunks = (pd.DataFrame(arr[i:i + 250]) for i in range(0, len(arr), 250))
        np.testing.assert_array_equal(model.predict_proba(chunks), expected)
    np.testing.assert_array_equal(arr, X.to_numpy())  # the caller's array is untouched


def test_an_array_of_the_kept_columns_only_is_refused_naming_the_left_out_ones():
    X, y = _table(n=600)
    model = _quiet_fit(X, y)
    kept = X.drop(columns=list(model.excluded_features_)).to_numpy()
    named = ", ".join(repr(c) for c in model.excluded_features_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match=rf"expecting 8 features .*\[{named}\]"):
            model.predict_proba(kept)


def test_a_frame_predicts_by_position_a_model_fitted_on_an_array_with_exclusions():
    X, y = _table(n=600)
    model = _quiet_fit(X.to_numpy(), y, exclude_features=[2, 3])
    assert model.excluded_features_ == ("x2", "x3")
    expected = model.predict_proba(X.to_numpy())
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="X has feature names")
        np.testing.assert_array_equal(model.predict_proba(X), expected)
