"""fastpath.encode._encoder: tables -> small integer codes.

Checked against independent computations: nominal codes are the positions in the sorted
distinct values (``np.unique``); numeric codes are the MDL intervals of the raw column
(``mdl_cut_points``, binned with ``np.digitize``); a missing value gets a code of its own (the
last one); values unseen in training get ``UNKNOWN`` (-1). Also: every form of
``categorical_features`` selects the same columns, ``to_dict``/``from_dict`` survive JSON, the
caller's frame is never modified, and bad input raises a ``ValueError`` naming the column.
"""

from __future__ import annotations

import dataclasses
import json
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastpath.encode import UNKNOWN, TableEncoder, as_frame, mdl_cut_points
from fastpath.encode._encoder import AttributeCoding, code_members, members_layout
from fastpath.io._column_types import type_columns


def _mixed_frame(n=120, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    frame = pd.DataFrame({
        "colour": rng.choice(["red", "green", "blue"], n),
        "size": np.where(y == 1, rng.normal(5, 1, n), rng.normal(0, 1, n)),
        "flag": rng.random(n) < 0.5,
        "count": rng.integers(0, 4, n),
        "grade": pd.Categorical(rng.choice(["lo", "mid", "hi"], n),
                                categories=["lo", "mid", "hi", "top"]),
    })
    frame.loc[::7, "colour"] = None
    frame.loc[::11, "size"] = np.nan
    return frame, y


# ====================================================================== nominal coding
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["b", "a", "zz", "A", "10", "9"]), min_size=1, max_size=40))
def test_nominal_codes_are_positions_in_the_sorted_values(values):
    frame = pd.DataFrame({"c": values})
    enc = TableEncoder().fit(frame, np.zeros(len(values), np.int64), 1)
    codes = enc.transform(frame)
    ref_values, ref_codes = np.unique(np.array(values, dtype=object), return_inverse=True)
    assert enc.codings_[0].kind == "nominal"
    assert list(enc.codings_[0].categories) == list(ref_values)
    np.testing.assert_array_equal(codes[:, 0], ref_codes)
    assert enc.cardinalities_ == (len(ref_values),)


def test_categorical_columns_keep_every_declared_category_in_order():
    frame, y = _mixed_frame()
    enc = TableEncoder().fit(frame, y, 2)
    grade = enc.codings_[4]
    assert grade.categories == ("lo", "mid", "hi", "top")  # "top" declared, never observed
    assert grade.cardinality == 4
    codes = enc.transform(frame)[:, 4]
    np.testing.assert_array_equal(codes, frame["grade"].cat.codes.to_numpy())


def test_booleans_are_nominal():
    frame, y = _mixed_frame()
    enc = TableEncoder().fit(frame, y, 2)
    flag = enc.codings_[2]
    assert flag.kind == "nominal" and flag.categories == (False, True)
    np.testing.assert_array_equal(enc.transform(frame)[:, 2], frame["flag"].astype(int))


# ====================================================================== numeric coding
@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 2), st.integers(-20, 20)), min_size=2, max_size=60),
    st.integers(0, 2**32 - 1),
)
def test_numeric_codes_are_the_mdl_intervals_of_the_raw_column(rows, seed):
    y = np.array([c for c, _ in rows])
    # values that mostly follow the class, so that MDL finds cut points
    noise = np.random.default_rng(seed).normal(0, 0.3, len(rows))
    x = np.array([10.0 * c + v / 10 for c, v in rows]) + noise
    frame = pd.DataFrame({"x": x})
    enc = TableEncoder().fit(frame, y, 3)
    cuts = mdl_cut_points(x, y, 3)
    assert enc.codings_[0].kind == "numeric"
    np.testing.assert_array_equal(enc.codings_[0].cut_points, cuts)
    # interval j holds cuts[j-1] < x <= cuts[j]
    np.testing.assert_array_equal(enc.transform(frame)[:, 0], np.digitize(x, cuts, right=True))
    assert enc.cardinalities_ == (len(cuts) + 1,)


def test_separable_numeric_column_is_cut_between_the_classes():
    x = np.array([0.0, 0.5, 1.0, 1.5, 4.0, 4.5, 5.0, 5.5])
    y = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    enc = TableEncoder().fit(pd.DataFrame({"x": x}), y, 2)
    assert enc.codings_[0].cut_points == ((1.5 + 4.0) / 2,)
    new = pd.DataFrame({"x": [-100.0, 2.75, 2.7500001, 100.0]})
    np.testing.assert_array_equal(enc.transform(new)[:, 0], [0, 0, 1, 1])


# ====================================================================== missing and unknown
def test_missing_values_get_the_last_code_of_their_column():
    frame, y = _mixed_frame()
    enc = TableEncoder().fit(frame, y, 2)
    codes = enc.transform(frame)
    colour, size = enc.codings_[0], enc.codings_[1]
    assert colour.missing_code == len(colour.categories) == 3
    assert size.missing_code == len(size.cut_points) + 1
    assert colour.cardinality == 4 and size.cardinality == len(size.cut_points) + 2
    np.testing.assert_array_equal(codes[:, 0] == 3, frame["colour"].isna())
    np.testing.assert_array_equal(codes[:, 1] == size.missing_code, frame["size"].isna())
    assert colour.value_labels()[-1] == "<missing>"
    # columns without missing values in training reserve no code for it
    assert enc.codings_[3].missing_code is None


def test_values_unseen_in_training_are_unknown():
    frame, y = _mixed_frame()
    enc = TableEncoder().fit(frame, y, 2)
    new = frame.iloc[:3].copy()
    new["colour"] = ["purple", "red", None]  # new category; missing was seen in training
    new["count"] = [np.nan, 9, 1]  # missing never seen in training; 9 is numeric: an interval
    new["grade"] = pd.Categorical(["top", "lo", "mid"], categories=["lo", "mid", "hi", "top"])
    codes = enc.transform(new)
    assert UNKNOWN == -1
    assert list(codes[:, 0]) == [UNKNOWN, enc.codings_[0].categories.index("red"), 3]
    assert codes[0, 3] == UNKNOWN and codes[1, 3] >= 0
    assert list(codes[:, 4]) == [3, 0, 1]


def test_unknown_categorical_category_is_unknown():
    train = pd.DataFrame({"g": pd.Categorical(["a", "b"], categories=["a", "b"])})
    enc = TableEncoder().fit(train, np.array([0, 1]), 2)
    test = pd.DataFrame({"g": pd.Categorical(["c", "b"], categories=["b", "c"])})
    np.testing.assert_array_equal(enc.transform(test)[:, 0], [UNKNOWN, 1])


def test_all_missing_column_is_one_constant_value():
    frame = pd.DataFrame({"a": [np.nan] * 4, "b": ["x", "y", "x", "y"]})
    with pytest.warns(UserWarning, match="'a' is missing in every training row"):
        enc = TableEncoder().fit(frame, np.array([0, 1, 0, 1]), 2)
    assert enc.cardinalities_[0] == 1
    np.testing.assert_array_equal(enc.transform(frame)[:, 0], 0)


def test_labels_typed_differently_still_match_by_text():
    enc = TableEncoder().fit(pd.DataFrame({"c": ["3", "4"]}), np.array([0, 1]), 2)
    np.testing.assert_array_equal(enc.transform(np.array([[4], [3], [5]], dtype=object))[:, 0],
                                  [1, 0, UNKNOWN])


# ====================================================================== categorical_features
FORMS = [
    ["colour", "count"],
    [0, 3],
    [0, -2],
    [True, False, False, True, False],
    np.array([True, False, False, True, False]),
]


@pytest.mark.parametrize("spec", FORMS, ids=["names", "indices", "negative", "mask", "array"])
def test_every_form_of_categorical_features_selects_the_same_columns(spec):
    frame, y = _mixed_frame()
    frame = frame.drop(columns="grade").assign(extra=frame["count"] * 2)
    enc = TableEncoder(spec)
    np.testing.assert_array_equal(enc.nominal_mask(frame), [True, False, False, True, False])
    enc.fit(frame, y, 2)
    kinds = [c.kind for c in enc.codings_]
    assert kinds == ["nominal", "numeric", "numeric", "nominal", "numeric"]
    # the integer column coded as nominal: one code per distinct integer, sorted
    assert enc.codings_[3].categories == tuple(sorted(frame["count"].unique()))
    # bools are nominal under "auto" only; an explicit list makes them numeric (0/1)
    np.testing.assert_array_equal(enc.transform(frame)[:, 3], frame["count"])


def test_auto_and_none_pick_non_numeric_columns():
    frame, _ = _mixed_frame()
    expected = [not pd.api.types.is_numeric_dtype(frame[c]) or frame[c].dtype == bool
                for c in frame.columns]
    for spec in ("auto", None):
        np.testing.assert_array_equal(TableEncoder(spec).nominal_mask(frame), expected)


@pytest.mark.parametrize(
    "spec,match",
    [(["nope"], "names column 'nope', which is not in the data"),
     ([7], "index 7 is out of range"),
     ([-8], "index -8 is out of range"),
     ([1.5], "got item 1.5")],
)
def test_bad_categorical_features_are_refused(spec, match):
    frame, _ = _mixed_frame()
    with pytest.raises(ValueError, match=match):
        TableEncoder(spec).nominal_mask(frame)


# ====================================================================== persistence
@pytest.mark.parametrize("spec", ["auto", ["colour", "count"], [0, 3]])
def test_to_dict_from_dict_round_trips_through_json(spec):
    frame, y = _mixed_frame()
    if spec != "auto":
        frame = frame.drop(columns="grade")
    enc = TableEncoder(spec).fit(frame, y, 2)
    d = json.loads(json.dumps(enc.to_dict()))
    back = TableEncoder.from_dict(d)
    assert back.codings_ == enc.codings_
    assert back.feature_names_ == enc.feature_names_
    assert back.to_dict() == enc.to_dict()
    other, _ = _mixed_frame(50, seed=1)
    if spec != "auto":
        other = other.drop(columns="grade")
    np.testing.assert_array_equal(back.transform(other), enc.transform(other))


# ====================================================================== the caller's data
def test_the_callers_frame_is_not_mutated():
    frame, y = _mixed_frame()
    before = frame.copy(deep=True)
    enc = TableEncoder().fit(frame, y, 2)
    enc.transform(frame)
    TableEncoder(["colour", "flag", "count", "grade"]).fit_transform(frame, y, 2)
    pd.testing.assert_frame_equal(frame, before)
    arr = frame.drop(columns="grade").to_numpy(dtype=object)
    arr_before = arr.copy()
    TableEncoder().fit_transform(arr, y, 2)
    assert all(
        (a is b) or (a == b) or (pd.isna(a) and pd.isna(b))
        for a, b in zip(arr.ravel(), arr_before.ravel(), strict=True)
    )


def test_as_frame_names_arrays_and_keeps_frames():
    arr = np.arange(6).reshape(3, 2)
    frame, has_names = as_frame(arr)
    assert list(frame.columns) == ["x0", "x1"] and not has_names
    df = pd.DataFrame({"a": [1], "b": [2]})
    out, has_names = as_frame(df)
    assert out is df and has_names


# ====================================================================== bad input
def test_infinite_value_is_refused_naming_the_column_and_row():
    frame = pd.DataFrame({"a": ["u", "v", "u"], "speed": [1.0, np.inf, 2.0]})
    with pytest.raises(ValueError, match=r"column 'speed' contains inf \(row 1\)"):
        TableEncoder().fit(frame, np.array([0, 1, 0]), 2)


def test_text_in_a_numeric_column_is_missing_or_refused_naming_the_column():
    train = pd.DataFrame({"w": [1.0, 2.0, 3.0]})
    bad = pd.DataFrame({"w": np.array([1.0, "heavy", 2.0], dtype=object)})
    enc = TableEncoder().fit(train, np.array([0, 1, 0]), 2)
    with pytest.warns(UserWarning, match="column 'w' was fitted as numeric, but 1 of these"):
        codes = enc.transform(bad)
    assert codes[1, 0] == UNKNOWN  # missing, never seen missing in training
    strict = TableEncoder(numeric_errors="raise").fit(train, np.array([0, 1, 0]), 2)
    with pytest.raises(ValueError, match="column 'w' was fitted as numeric but holds 'heavy'"):
        strict.transform(bad)


def test_a_text_column_left_out_of_a_list_stays_nominal():
    # a list of categorical_features adds nominal columns: it never makes text numeric (issue 17)
    frame = pd.DataFrame({"colour": ["red", "blue"], "n": [1, 2]})
    enc = TableEncoder(["n"]).fit(frame, np.array([0, 1]), 2)
    assert [c.kind for c in enc.codings_] == ["nominal", "nominal"]


def test_wrong_shapes_are_refused():
    enc = TableEncoder().fit(pd.DataFrame({"a": [1.0, 2.0]}), np.array([0, 1]), 2)
    with pytest.raises(ValueError, match="X has 2 columns, but the encoder was fitted with 1"):
        enc.transform(pd.DataFrame({"a": [1.0], "b": [2.0]}))
    with pytest.raises(ValueError, match="2-D"):
        as_frame(np.arange(3))
    with pytest.raises(ValueError, match="duplicated column names"):
        as_frame(pd.DataFrame([[1, 2]], columns=["a", "a"]))
    with pytest.raises(ValueError, match="Series"):
        as_frame(pd.Series([1, 2]))


# ====================================================================== stochastic discretisation
def test_stochastic_discretization_draws_each_numeric_column_in_column_order():
    from fastpath.encode import stochastic_mdl_cut_points

    rng = np.random.default_rng(3)
    n = 300
    y = rng.integers(0, 3, n)
    frame = pd.DataFrame({
        "u": y + rng.normal(0, 0.8, n),
        "colour": rng.choice(["red", "blue"], n),
        "v": np.round(2 * y + rng.normal(0, 1.5, n), 1),
    })
    frame.loc[::9, "v"] = np.nan
    enc = TableEncoder(discretization="stochastic", random_state=11).fit(frame, y, 3)
    # independent reading of the definition: one generator, one draw per numeric column in order
    gen = np.random.default_rng(11)
    for j, name in ((0, "u"), (2, "v")):
        x = frame[name].to_numpy()
        ok = ~np.isnan(x)
        expected = stochastic_mdl_cut_points(x[ok], y[ok], 3, gen)
        np.testing.assert_array_equal(enc.codings_[j].cut_points, expected)
    again = TableEncoder(discretization="stochastic", random_state=11).fit(frame, y, 3)
    assert again.to_dict() == enc.to_dict()
    draws = {TableEncoder(discretization="stochastic", random_state=s).fit(frame, y, 3)
             .codings_[0].cut_points for s in range(20)}
    assert len(draws) > 1  # the cuts are drawn, not fixed


def test_default_discretization_is_weka_mdl_and_round_trips():
    frame, y = _mixed_frame()
    enc = TableEncoder().fit(frame, y, 2)
    x = frame["size"].to_numpy()
    ok = ~np.isnan(x)
    np.testing.assert_array_equal(enc.codings_[1].cut_points, mdl_cut_points(x[ok], y[ok], 2))
    back = TableEncoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    assert back.discretization == "mdl"
    old = {k: v for k, v in enc.to_dict().items() if k != "discretization"}  # older model files
    assert TableEncoder.from_dict(old).discretization == "mdl"


@pytest.mark.parametrize("kw, match", [({"discretization": "mixed"}, "discretization must be"),
                                       ({"discretization": "stochastic", "random_state": -1},
                                        "random_state")])
def test_bad_discretization_options_are_refused_naming_them(kw, match):
    frame, y = _mixed_frame()
    with pytest.raises(ValueError, match=match):
        TableEncoder(**kw).fit(frame, y, 2)


# ====================================================================== stray tokens (issue 17)
def _radius(n=200, seed=1):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, n)
    radius = np.where(y == 1, rng.normal(17, 2, n), rng.normal(12, 2, n)).astype(object)
    return pd.DataFrame({"mean radius": radius, "colour": rng.choice(["a", "b"], n)}), y


def test_numeric_column_with_one_question_mark_stays_numeric_and_warns():
    frame, y = _radius()
    frame.loc[3, "mean radius"] = "?"
    with pytest.warns(UserWarning, match=r"column 'mean radius' is read as numbers: 1 of its "
                                         r"200 .*'\?' \(1x\).*categorical_features"):
        enc = TableEncoder().fit(frame, y, 2)
    radius = enc.codings_[0]
    assert radius.kind == "numeric" and radius.missing_tokens == ("?",)
    clean = frame.assign(**{"mean radius": frame["mean radius"].where(frame.index != 3)})
    ref = mdl_cut_points(clean["mean radius"].dropna().to_numpy(float), y[clean.index != 3], 2)
    np.testing.assert_allclose(radius.cut_points, ref)
    codes = enc.transform(frame)
    assert codes[3, 0] == radius.missing_code == len(ref) + 1
    # the "?" is missing in new rows too, and survives a model file (JSON)
    back = TableEncoder.from_dict(json.loads(json.dumps(enc.to_dict())))
    np.testing.assert_array_equal(back.transform(frame), codes)
    # listing the column keeps it nominal, without the warning
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        listed = TableEncoder(["mean radius"]).fit(frame, y, 2)
    assert not [w for w in caught if "read as numbers" in str(w.message)]
    assert listed.codings_[0].kind == "nominal" and "?" in listed.codings_[0].categories


def test_codings_without_stray_tokens_are_written_as_before():
    frame, y = _mixed_frame()
    d = TableEncoder().fit(frame, y, 2).to_dict()
    assert all("missing_tokens" not in c for c in d["codings"])
    for c in d["codings"]:
        c.pop("missing_tokens", None)
    assert TableEncoder.from_dict(d).codings_[1].missing_tokens == ()


@pytest.mark.parametrize("n_stray,kind", [(1, "numeric"), (2, "nominal")])
def test_a_text_column_is_numeric_from_95_percent_numbers(n_stray, kind):
    values = [*np.linspace(0, 1, 20 - n_stray), *["?"] * n_stray]  # 95 % or 90 % numbers
    frame = pd.DataFrame({"x": pd.Series(values, dtype=object)})
    y = np.arange(20) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enc = TableEncoder().fit(frame, y, 2)
    assert enc.codings_[0].kind == kind
    assert len([w for w in caught if "read as numbers" in str(w.message)]) == (kind == "numeric")


def test_a_list_of_categorical_features_adds_nominal_columns():
    frame, y = _mixed_frame()
    frame["flag"] = frame["flag"].astype(str)  # text, not bool
    enc = TableEncoder(["count"])
    np.testing.assert_array_equal(enc.nominal_mask(frame), [True, False, True, True, True])
    enc.fit(frame, y, 2)
    assert [c.kind for c in enc.codings_] == ["nominal", "numeric", "nominal", "nominal",
                                               "nominal"]
    assert enc.codings_[4].categories == ("lo", "mid", "hi", "top")
    np.testing.assert_array_equal(enc.transform(frame), TableEncoder(
        [True, False, False, True, False]).fit(frame, y, 2).transform(frame))


def test_a_string_in_a_numeric_column_is_named_with_its_value():
    train = pd.DataFrame({"alc": [1.0, 2.0, 3.0, 4.0], "alc_cat": ["low", "high", "low", "high"]})
    enc = TableEncoder(["alc_cat"]).fit(train, np.array([0, 1, 0, 1]), 2)
    assert enc.codings_[1].kind == "nominal"
    bad = train.assign(alc=pd.Series([1.0, "high", 2.0, 3.0], dtype=object))
    strict = TableEncoder(["alc_cat"], numeric_errors="raise").fit(train, np.array([0, 1, 0, 1]),
                                                                   2)
    with pytest.raises(ValueError, match=r"column 'alc' was fitted as numeric but holds 'high' "
                                         r"\(row 1\), which is not a number"):
        strict.transform(bad)
    with pytest.warns(UserWarning, match=r"column 'alc' was fitted as numeric, but 1 of these 4 "
                                         r"values is not a number \('high' \(1x\)\)"):
        codes = enc.transform(bad)
    assert codes[1, 0] == enc.transform(train.assign(alc=[1.0, np.nan, 2.0, 3.0]))[1, 0]


# ====================================================================== cells no coding can hold
def test_a_list_in_a_cell_is_refused_naming_the_column_and_row():
    frame = pd.DataFrame({"a": ["u", "v", "u"], "b": ["x", "y", "x"]}).astype(object)
    bad = frame.copy()
    bad.at[2, "b"] = ["y"]
    with pytest.raises(ValueError, match=r"column 'b', row 2: a list"):
        TableEncoder().fit(bad, np.array([0, 1, 0]), 2)
    enc = TableEncoder().fit(frame, np.array([0, 1, 0]), 2)
    with pytest.raises(ValueError, match=r"column 'b', row 2: a list"):
        enc.transform(bad)


def test_a_complex_column_is_refused_naming_it():
    frame = pd.DataFrame({"z": np.array([1 + 2j, 3 + 0j, 1 + 0j]), "b": ["x", "y", "x"]})
    with pytest.raises(ValueError, match=r"column 'z' holds complex numbers"):
        TableEncoder().fit(frame, np.array([0, 1, 0]), 2)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "3", 3, 3.0, "zz", None, float("nan"), 7]),
                min_size=1, max_size=40),
       st.sampled_from(["object", "category"]))
def test_short_and_long_columns_get_the_same_nominal_codes(values, kind):
    """A prediction's short column is coded value by value, a long one through pandas'
    factorisation: the same codes, the text fallback ("3" for 3) and unseen values included."""
    import fastpath.encode._encoder as encoder_module

    coding = AttributeCoding("c", "nominal", categories=("3", "a", "b"), missing_code=None)
    col = pd.Series(values, dtype=object)
    if kind == "category":
        col = col.astype(str).where(col.notna()).astype("category")
    short = TableEncoder._nominal_codes(col, coding)
    old = encoder_module.SMALL_BATCH
    encoder_module.SMALL_BATCH = -1  # every column the long way
    try:
        long = TableEncoder._nominal_codes(col, coding)
    finally:
        encoder_module.SMALL_BATCH = old
    missing = col.isna().to_numpy()
    np.testing.assert_array_equal(short[~missing], long[~missing])
    # equal values (3 and 3.0) are one value, read by the text of the first seen
    first: dict = {}
    expected = [{"3": 0, "a": 1, "b": 2}.get(str(first.setdefault(v, v)), -1)
                for v in col[~missing]]
    np.testing.assert_array_equal(short[~missing], expected)


def test_members_encoders_are_each_members_own_fit():
    """fit_members (one read of the table, each numeric column sorted once for every member's
    redraw) gives every member the encoder its own fit with its own generator learns."""
    from fastpath.encode._encoder import fit_members

    rng = np.random.default_rng(5)
    n = 200
    y = rng.integers(0, 3, n)
    frame = pd.DataFrame({
        "u": y + rng.normal(0, 0.8, n),
        "colour": rng.choice(["red", "blue", "green"], n),
        "v": np.round(2 * y + rng.normal(0, 1.5, n), 1),
    })
    frame.loc[::7, "v"] = np.nan
    seeds = np.random.SeedSequence(9).spawn(5)
    kinds = ["stochastic", "random", "stochastic", "random", "random"]
    encoders = fit_members(type_columns(frame), y, 3, kinds,
                           [np.random.default_rng(s) for s in seeds])
    for encoder, seed, kind in zip(encoders, seeds, kinds, strict=True):
        alone = TableEncoder(discretization=kind,
                             random_state=np.random.default_rng(seed)).fit(frame, y, 3)
        assert encoder.codings_ == alone.codings_ and encoder.discretization == kind
    assert len({e.codings_[0].cut_points for e in encoders}) > 1


def test_fit_codes_from_the_column_types_it_is_given():
    """``fit(..., types=...)`` codes the typed table of the record (the table is not typed
    again): the encoder ``fit`` learns from the rows themselves, stray tokens and declared
    missing values included, and no column is read for its type a second time."""
    frame, y = _mixed_frame(200)
    frame["stray"] = np.where(np.arange(200) == 3, "?", frame["size"].round(1).astype(str))
    frame["declared"] = np.where(np.arange(200) % 9 == 0, "-1", "a")
    enc = TableEncoder(["count"], na_values=["-1"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        typed = enc.column_types(frame)
        from_types = TableEncoder(["count"], na_values=["-1"]).fit(None, y, 2, types=typed)
        alone = TableEncoder(["count"], na_values=["-1"]).fit(frame, y, 2)
    assert from_types.codings_ == alone.codings_
    assert from_types.codings_[5].missing_tokens == ("?",)
    assert from_types.codings_[6].categories == ("a",)
    np.testing.assert_array_equal(from_types.transform(frame), alone.transform(frame))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=3),
       st.lists(st.sampled_from([-5.0, 90.0, np.nan, 0.0, 2.0, 7.0, 39.0, 40.0, 12.5]),
                max_size=6),
       st.integers(0, 2**32 - 1))
def test_members_codes_are_each_encoders_transform(n_cuts, specials, seed):
    """code_members (every distinct coding once; a value's rank among every coding's cuts,
    then each coding's count below it) gives each member's column exactly its encoder's
    ``transform`` (``np.searchsorted``): values on a cut, beyond every cut, missing values,
    codings of 0 to 40 cut points, shared or not; and a categorical column's codes, missing
    and unseen categories included."""
    from fastpath.encode._encoder import code_members

    rng = np.random.default_rng(seed)
    n = 30
    frame = pd.DataFrame({"u": rng.integers(0, 42, n).astype(float),
                          "colour": rng.choice(["red", "blue"], n),
                          "grade": pd.Categorical(rng.choice(["lo", "hi", None], n),
                                                  categories=["lo", "hi"])})
    frame.loc[: len(specials) - 1, "u"] = specials
    frame.loc[n - 1, "u"] = None
    y = rng.integers(0, 2, n)
    base = TableEncoder(discretization="mdl").fit(frame, y, 2)
    encoders = []
    for k in n_cuts:  # each member its own cut points, some sharing a value with the column's
        cuts = tuple(float(c) for c in np.sort(rng.choice(np.arange(-1, 45), k, replace=False)))
        coding = base.codings_[0]
        numeric = dataclasses.replace(coding, cut_points=cuts, missing_code=(
            None if coding.missing_code is None else k + 1))
        other = TableEncoder(discretization="mdl").fit(frame, y, 2)
        other.codings_ = (numeric, *base.codings_[1:])
        encoders.append(other)
    # and a later frame whose categorical has a category unseen in training, and missing rows
    later = frame.assign(grade=pd.Categorical(rng.choice(["top", "hi", "lo", None], n),
                                              categories=["top", "lo", "hi"]))
    for table in (frame, later):
        codes, columns = code_members(encoders, table)
        for e, encoder in enumerate(encoders):
            np.testing.assert_array_equal(codes[:, columns[e]], encoder.transform(table))


def test_members_code_categoricals_of_every_code_width_as_transform_does():
    # code_members maps the categorical columns of each code width (int8 below 128
    # categories, int16 above) in one call: each member's columns are its transform's,
    # missing values and categories unseen in training included
    from fastpath.encode._encoder import code_members

    rng = np.random.default_rng(4)
    n = 200
    wide = [f"v{i}" for i in range(300)]
    frame = pd.DataFrame({
        "small": pd.Categorical(rng.choice(["a", "b", None], n), categories=["a", "b"]),
        "wide": pd.Categorical(rng.choice([*wide[:250], None], n), categories=wide),
        "other": pd.Categorical(rng.choice(["x", "y", "z"], n)),
        "x": rng.normal(size=n)})
    assert {frame[c].cat.codes.dtype for c in ("small", "wide")} == {np.dtype(np.int8),
                                                                      np.dtype(np.int16)}
    y = rng.integers(0, 2, n)
    encoders = [TableEncoder().fit(frame, y, 2), TableEncoder().fit(frame.iloc[:120], y[:120], 2)]
    later = frame.assign(wide=pd.Categorical(rng.choice([*wide, None], n), categories=wide[::-1]))
    for table in (frame, later):
        codes, columns = code_members(encoders, table)
        for e, encoder in enumerate(encoders):
            np.testing.assert_array_equal(codes[:, columns[e]], encoder.transform(table))


def test_column_labels_follow_the_frame():
    from fastpath.encode._encoder import column_labels

    frame = pd.DataFrame({"a": [1], "b": [2]})
    assert column_labels(frame.columns) == ("a", "b")
    assert column_labels(frame.iloc[:1].columns) == ("a", "b")
    frame.columns = ["c", "d"]
    assert column_labels(frame.columns) == ("c", "d")
    assert as_frame(frame.rename(columns={"c": "e"}))[0].columns.tolist() == ["e", "d"]


def test_categorical_lookups_are_kept_on_the_layout_not_in_the_module():
    # issue 44, point 5: the lookup of a prediction's categorical dtypes is the model's state
    import fastpath.encode._encoder as encoder_module

    frame = pd.DataFrame({"a": pd.Categorical(list("xyzx")), "b": pd.Categorical(list("ppqq"))})
    y = np.array([0, 1, 0, 1])
    encoders = [TableEncoder().fit(frame, y, 2), TableEncoder().fit(frame, y, 2)]
    layout = members_layout(encoders)
    first, _ = code_members(encoders, frame, layout)
    kept = dict(layout._lookups)
    assert len(kept) == 2  # one per distinct nominal coding and dtype
    again, _ = code_members(encoders, frame.iloc[:2], layout)  # the same dtype objects
    assert layout._lookups == kept
    np.testing.assert_array_equal(again, first[:2])
    assert not [name for name, value in vars(encoder_module).items()
                if isinstance(value, dict) and name.startswith("_") and name.isupper()]
