"""fastpath.io._column_types: what each column is, decided once.

The record of :func:`type_columns` against the rules one by one (kinds, declared and stray
tokens, the columns left out); the stray-token rule (issue 17, item 3); the columns
``exclude_features="auto"`` leaves out (issue 46, point 7: dates in common formats, numeric
identifiers and high-cardinality nominal columns were used as parents and over-fitted, without
a word)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from fastpath import BayesNetClassifier
from fastpath.io._column_types import (
    DATE_PATTERN,
    DISTINCT_SKETCH,
    HIGH_CARDINALITY_MIN,
    HIGH_CARDINALITY_ROWS,
    NUMERIC_IDENTIFIER_MIN_ROWS,
    declare_missing,
    declared_missing,
    distinct_sketch,
    estimated_distinct,
    excluded_columns,
    is_numeric_dtype,
    nominal_mask,
    parse_numbers,
    stray_message,
    stray_tokens,
    type_columns,
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
        model = BayesNetClassifier(estimation="m", random_state=0, **params).fit(X, y)
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
        streamed = BayesNetClassifier(estimation="m", random_state=0).fit(
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
        return BayesNetClassifier(estimation="m", random_state=0, **params).fit(X, y)


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


# ====================================================================== rule 2: kinds
@pytest.mark.parametrize(
    "series,numeric",
    [
        (pd.Series([1, 2]), True),
        (pd.Series([1.5, np.nan]), True),
        (pd.Series([1, None], dtype="Int64"), True),
        (pd.Series([True, False]), False),
        (pd.Series([True, None], dtype="boolean"), False),
        (pd.Series(["a", "b"]), False),
        (pd.Series(["a", 1], dtype=object), False),
        (pd.Series([1, 2], dtype="category"), False),
    ],
)
def test_is_numeric_dtype_excludes_bools(series, numeric):
    assert is_numeric_dtype(series.dtype) is numeric
    # pandas' own notion, bools removed
    assert numeric == (pd.api.types.is_numeric_dtype(series)
                       and series.dtype.kind != "b" and str(series.dtype) != "boolean")


# ====================================================================== rule 3: stray tokens
def test_stray_tokens_read_a_column_of_95_percent_numbers_as_numeric():
    at_95 = pd.Series([str(i) for i in range(19)] + ["?"])
    assert stray_tokens(at_95) == {"?": 1}
    just_below = pd.Series([*range(94), "?", "n/a", "?", "x", "x", "x"], dtype=object)
    assert stray_tokens(just_below) is None  # 94 %
    at_least = pd.Series([*range(95), "?", "n/a", "?", "x", "x"], dtype=object)
    assert stray_tokens(at_least) == {"?": 2, "x": 2, "n/a": 1}  # most frequent first
    # missing values are left out of the share
    assert stray_tokens(pd.Series([*range(19), "?", *[None] * 10], dtype=object)) == {"?": 1}


@pytest.mark.parametrize(
    "series",
    [
        pd.Series(["1", "2", "3"]),  # text of numbers only: keeps its type
        pd.Series([1.0, 2.0, None], dtype=object),
        pd.Series(["a", "b", "1"]),
        pd.Series(pd.Categorical([*map(str, range(40)), "?"])),  # declared nominal
        pd.Series([True, False] * 20 + [None]),
        pd.Series(np.arange(40.0)),
    ],
)
def test_stray_tokens_leave_other_columns_alone(series):
    assert stray_tokens(series) is None


def test_parse_numbers_marks_text_and_bools_in_a_text_column():
    values, stray = parse_numbers(pd.Series([1.5, "2", "?", None, True], dtype=object))
    np.testing.assert_array_equal(values, [1.5, 2.0, np.nan, np.nan, np.nan])
    np.testing.assert_array_equal(stray, [False, False, True, False, True])


def test_stray_message_names_column_tokens_counts_and_remedy():
    tokens = {f"t{i}": 7 - i for i in range(7)}
    msg = stray_message("age", tokens, 500, "do this")
    assert msg.startswith("column 'age' is read as numbers: 28 of its 500")
    assert "'t0' (7x)" in msg and "'t4' (3x) and 2 more" in msg and "'t5'" not in msg
    assert "95%" in msg and msg.endswith("do this")


# ====================================================================== the record
def _typed_frame(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    x = rng.normal(size=n).round(2)
    return pd.DataFrame({
        "id": [f"c{i}" for i in range(n)],
        "x": x,
        "stray": [("?" if i == 5 else str(v)) for i, v in enumerate(x)],  # 59 of 60 numbers
        "declared": [("-999" if i % 10 == 0 else str(v)) for i, v in enumerate(x)],
        "code": rng.integers(-999, -997, n),
        "grade": pd.Categorical(rng.choice(["lo", "hi", "n/a"], n)),
        "flag": rng.random(n) < 0.5,
        "day": [f"2024-01-{1 + i % 28:02d}" for i in range(n)],
    })


@pytest.mark.parametrize("spec", ["auto", ["code"], [False, True, False, False, True, False,
                                                     False, False]])
def test_the_record_is_the_rules_one_by_one(spec):
    frame = _typed_frame()
    tokens = ("-999", "n/a")
    types = type_columns(frame, spec, na_values=tokens, exclude_features="auto")
    # rule 1, then rule 2 on what rule 1 left, then rule 4 on both
    pd.testing.assert_frame_equal(types.frame, declare_missing(frame, tokens, fitting=True))
    nominal = nominal_mask(types.frame, spec)
    assert types.excluded == excluded_columns(types.frame, lambda j: nominal[j], "auto")
    assert set(types.excluded) == {0, 7}  # the identifier and the dates
    for j, typed in enumerate(types.columns):
        assert typed.name == frame.columns[j]
        if j not in types.excluded:
            assert (typed.kind == "nominal") == nominal[j]
        # rule 3: the stray tokens of a numeric text column, nothing for any other
        col = types.frame.iloc[:, j]
        numeric_text = typed.kind == "numeric" and not is_numeric_dtype(col.dtype)
        assert typed.stray_tokens == ((stray_tokens(col) or {}) if numeric_text else {})
    by_name = {c.name: c for c in types.columns}
    assert by_name["stray"].stray_tokens == {"?": 1} and by_name["stray"].kind == "numeric"
    # the declared tokens found: as text, as a number (-999 in an integer column), a category
    assert by_name["declared"].na_tokens == ("-999",)
    assert by_name["code"].na_tokens == ("-999",)
    assert by_name["grade"].na_tokens == ("n/a",)
    assert by_name["x"].na_tokens == () and by_name["flag"].na_tokens == ()
    # a text column all numbers once its tokens are missing is read as numbers (rule 1)
    assert by_name["declared"].kind == "numeric" and by_name["declared"].stray_tokens == {}


def test_kept_columns_keep_their_records_and_the_listed_mask():
    frame = _typed_frame()
    types = type_columns(frame, ["code", "id"], exclude_features="auto")
    kept = types.kept()
    assert [c.name for c in kept.columns] == ["x", "stray", "declared", "code", "grade", "flag"]
    assert list(kept.frame.columns) == [c.name for c in kept.columns]
    # positions would shift: the listed columns become the kept columns' mask
    assert kept.categorical_features == [False, False, False, True, False, False]
    assert kept.columns == tuple(c for c in types.columns if c.excluded is None)
    # nothing left out: the record and its spec as they were
    whole = type_columns(frame, ["code"], exclude_features=None)
    assert whole.kept() is whole and whole.categorical_features == ["code"]


def test_say_excluded_warns_once_per_column_and_refuses_leaving_out_everything():
    types = type_columns(_typed_frame(), exclude_features="auto")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert types.say_excluded() == ("id", "day")
    assert [str(w.message).split(":")[0] for w in caught] == [
        "nominal column 'id' has 60 distinct values in 60 non-missing rows (an identifier)",
        "column 'day' holds dates"]
    only = type_columns(_typed_frame()[["id", "day"]], exclude_features="auto")
    with pytest.raises(ValueError, match=r"every column is left out .*\['id', 'day'\]"):
        only.say_excluded()


def test_a_column_listed_in_exclude_features_is_never_read():
    frame = _typed_frame()
    frame["cells"] = [[1, 2]] * len(frame)  # no coding represents a list
    types = type_columns(frame, exclude_features=["cells"])
    assert types.columns[-1].kind is None and types.columns[-1].excluded == ""
    assert types.kept().frame.columns[-1] == "day"


@pytest.mark.parametrize("exclude", ["auto", None])
def test_a_cell_that_is_no_label_is_named_with_its_row(exclude):
    frame = _typed_frame()[["x", "grade"]]
    frame["cells"] = ["a", "b"] * 29 + [{"k": 1}, "a"]
    with pytest.raises(ValueError, match=r"column 'cells', row 58: a dict"):
        BayesNetClassifier(estimation="m", exclude_features=exclude).fit(
            frame, np.resize(["p", "q"], len(frame)))


@pytest.mark.parametrize("values", [[None] * 6, ["a", None, 3, "-999", 2.5, "b"]])
def test_a_token_that_is_a_number_is_found_in_an_object_column(values):
    """A column of Python objects (mixed values, or only missing ones) with a declared token
    that is a number: its cells equal to the token, as text or as a number, are missing."""
    col = pd.Series(values, dtype=object)
    mask = declared_missing(col, ("-999", "b"))
    expected = [v in ("-999", "b") for v in values]
    if any(expected):
        np.testing.assert_array_equal(mask, expected)
    else:
        assert mask is None
    frame = pd.DataFrame({"v": values * 10, "x": np.arange(60) % 3})
    model = BayesNetClassifier(estimation="m", na_values=["-999", "b"]).fit(
        frame, np.resize(["p", "q"], 60))
    assert model.predict_proba(frame).shape == (60, 2)


def test_a_listed_text_column_of_numbers_keeps_its_text_under_na_values():
    # rule 1: a text column of numbers and declared tokens becomes numbers when fitting, but
    # one that categorical_features lists holds labels: its text stays, as new rows bring it
    rng = np.random.default_rng(5)
    n = 400
    code = rng.integers(0, 30, n).astype(str).astype(object)
    code[rng.choice(n, 20, replace=False)] = "n/a"
    X = pd.DataFrame({"code": code, "a": rng.choice(list("xyz"), n)})
    y = rng.choice(["p", "q"], n)
    params = dict(estimation="m", categorical_features=["code"], random_state=0)
    declared = BayesNetClassifier("kdb", 1, na_values=["n/a"], **params).fit(X, y)
    missing = X.assign(code=X["code"].where(X["code"] != "n/a", None))
    plain = BayesNetClassifier("kdb", 1, **params).fit(missing, y)
    np.testing.assert_array_equal(declared.predict_proba(X), plain.predict_proba(missing))
    # ... and as a streamed fit reads it
    frame = X.assign(target=y)
    streamed = BayesNetClassifier("kdb", 1, na_values=["n/a"], **params).fit(
        lambda: (frame.iloc[i:i + 100] for i in range(0, n, 100)), "target")
    np.testing.assert_allclose(streamed.predict_proba(X), declared.predict_proba(X),
                               rtol=1e-12)
