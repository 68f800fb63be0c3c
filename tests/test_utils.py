"""fastpath.utils: the argument checks every layer shares, and the column-type helpers.

``validation``: ``check_int`` / ``check_float`` name the parameter and refuse bools, NaN and
infinities; ``as_generator`` / ``seed_int`` turn seeds into generators reproducibly;
``n_threads`` follows scikit-learn's ``n_jobs`` convention; ``check_labels`` codes class labels
as ``np.unique`` would and refuses missing or continuous targets. ``dtypes``: bools are not
numbers, ``as_nominal`` keeps a categorical's order, ``duplicates`` finds repeated names.
"""

from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from sklearn.exceptions import DataConversionWarning

from fastpath.utils._dtypes import as_nominal, duplicates, python_scalar, to_float64
from fastpath.utils._exp import exp_in_place
from fastpath.utils._sums import pairwise_sum
from fastpath.utils._validation import (
    as_generator,
    check_float,
    check_int,
    check_labels,
    n_threads,
    readonly,
    seed_int,
)


# ====================================================================== check_int
@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3)])
def test_check_int_returns_a_python_int(value):
    out = check_int("n_iter", value, 1)
    assert out == 3 and type(out) is int


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 3.0, "3", None, np.float64(2)])
def test_check_int_refuses_non_integers_and_names_the_parameter(value):
    with pytest.raises(ValueError, match=r"^n_iter must be an integer"):
        check_int("n_iter", value, 0)


def test_check_int_minimum_is_inclusive_and_named():
    assert check_int("burn_in", 0, 0) == 0
    with pytest.raises(ValueError, match=r"burn_in must be >= 1, got 0"):
        check_int("burn_in", 0, 1)


# ====================================================================== check_float
@pytest.mark.parametrize("value", [0.5, 2, np.float32(0.25), np.int64(4)])
def test_check_float_returns_a_python_float(value):
    out = check_float("alpha0", value, positive=True)
    assert out == float(value) and type(out) is float


@pytest.mark.parametrize(
    "value", [math.nan, math.inf, -math.inf, np.float64("nan"), -1.0, -1e-300]
)
def test_check_float_refuses_nan_inf_and_negatives(value):
    with pytest.raises(ValueError, match=r"^alpha0 must be finite and >= 0"):
        check_float("alpha0", value, positive=False)


@pytest.mark.parametrize("value", [True, np.bool_(False), "1.0", None, 1 + 0j])
def test_check_float_refuses_non_numbers(value):
    with pytest.raises(ValueError, match=r"^m must be a number"):
        check_float("m", value, positive=False)


def test_check_float_positive_refuses_zero_only_when_asked():
    assert check_float("m", 0.0, positive=False) == 0.0
    with pytest.raises(ValueError, match=r"m must be finite and > 0, got 0"):
        check_float("m", 0, positive=True)


# ====================================================================== seeds
def test_as_generator_int_and_none_give_fresh_default_rng():
    assert as_generator(7).random() == np.random.default_rng(7).random()
    assert isinstance(as_generator(None), np.random.Generator)
    assert as_generator(np.int32(7)).random() == np.random.default_rng(7).random()


def test_as_generator_returns_a_generator_as_is():
    g = np.random.default_rng(1)
    assert as_generator(g) is g


def test_as_generator_from_random_state_is_one_draw_of_it():
    expected_seed = np.random.RandomState(3).randint(0, 2**31 - 1)
    got = as_generator(np.random.RandomState(3)).random(4)
    np.testing.assert_array_equal(got, np.random.default_rng(expected_seed).random(4))


@pytest.mark.parametrize("name", ["random_state", "seed"])
def test_negative_seed_is_refused_naming_the_parameter(name):
    with pytest.raises(ValueError, match=rf"^{name} must be None, a non-negative int"):
        as_generator(-1, name)
    with pytest.raises(ValueError, match=rf"^{name} must be None, a non-negative int"):
        seed_int(-5, name)


@pytest.mark.parametrize("seed", [True, 1.5, "0", [1, 2]])
def test_as_generator_refuses_other_types(seed):
    with pytest.raises(ValueError, match="random_state must be None, an int"):
        as_generator(seed)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, 2**63 - 1))
def test_seed_int_is_reproducible(seed):
    assert seed_int(seed) == seed
    a = seed_int(np.random.default_rng(seed))
    b = seed_int(np.random.default_rng(seed))
    assert a == b and 0 <= a < 2**63 - 1
    assert a == int(np.random.default_rng(seed).integers(0, 2**63 - 1))


def test_seed_int_of_none_is_an_int_in_range():
    s = seed_int(None)
    assert isinstance(s, int) and 0 <= s < 2**63 - 1


# ====================================================================== n_threads
@pytest.mark.parametrize(
    "n_jobs,expected", [(None, 8), (-1, 8), (-2, 7), (-8, 1), (-20, 1), (1, 1), (3, 3), (16, 16)]
)
def test_n_threads_follows_scikit_learn(monkeypatch, n_jobs, expected):
    monkeypatch.setattr(os, "cpu_count", lambda: 8)
    assert n_threads(n_jobs) == expected


@pytest.mark.parametrize("n_jobs", [0, True, 1.0, "2"])
def test_n_threads_refuses_zero_and_non_integers(n_jobs):
    with pytest.raises(ValueError, match=r"^n_jobs must be None or a non-zero integer"):
        n_threads(n_jobs)


def test_n_threads_unknown_core_count_means_one(monkeypatch):
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert n_threads(None) == 1 and n_threads(-2) == 1


# ====================================================================== readonly
def test_readonly_is_a_frozen_copy():
    src = np.arange(4)
    out = readonly(src)
    assert not out.flags.writeable and not np.shares_memory(out, src)
    src[0] = 99
    assert out[0] == 0
    with pytest.raises(ValueError):
        out[1] = 5


# ====================================================================== check_labels
@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([-3, 0, 2, 7, 11]), min_size=1, max_size=40))
def test_check_labels_codes_integer_labels_as_np_unique(labels):
    classes, codes = check_labels(labels, len(labels))
    ref_classes, ref_codes = np.unique(np.array(labels), return_inverse=True)
    np.testing.assert_array_equal(classes, ref_classes)
    np.testing.assert_array_equal(codes, ref_codes)
    assert codes.dtype == np.int64 and codes.ndim == 1


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["b", "a", "ccc", "B"]), min_size=1, max_size=40))
def test_check_labels_string_labels_are_sorted_and_decode_back(labels):
    classes, codes = check_labels(np.array(labels, dtype=object), len(labels))
    assert list(classes) == sorted(set(labels))
    assert list(classes[codes]) == labels


def test_check_labels_integral_floats_are_labels():
    classes, codes = check_labels([1.0, 0.0, 1.0], 3)
    np.testing.assert_array_equal(classes, [0.0, 1.0])
    np.testing.assert_array_equal(codes, [1, 0, 1])


def test_check_labels_column_vector_warns_and_ravels():
    y = np.array([[2], [1], [2]])
    with pytest.warns(DataConversionWarning, match="column-vector y"):
        classes, codes = check_labels(y, 3)
    np.testing.assert_array_equal(classes, [1, 2])
    np.testing.assert_array_equal(codes, [1, 0, 1])


def test_check_labels_single_column_frame_is_its_column():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        classes, codes = check_labels(pd.DataFrame({"y": ["x", "y", "x"]}), 3)
    assert list(classes) == ["x", "y"] and list(codes) == [0, 1, 0]
    with pytest.raises(ValueError, match="one column"):
        check_labels(pd.DataFrame({"a": [1, 2], "b": [1, 2]}), 2)


@pytest.mark.parametrize(
    "y", [[1.0, np.nan, 2.0], np.array(["a", None, "b"], dtype=object),
          pd.Series(["a", pd.NA, "b"], dtype="string")]
)
def test_check_labels_refuses_missing_labels_and_says_where(y):
    with pytest.raises(ValueError, match=r"1 missing value\(s\) \(first at row 1\)"):
        check_labels(y, 3)


def test_check_labels_refuses_continuous_and_infinite_targets():
    with pytest.raises(ValueError, match="continuous"):
        check_labels([0.0, 0.5, 1.0], 3)
    with pytest.raises(ValueError, match="infinite"):
        check_labels([0.0, np.inf, 1.0], 3)


def test_check_labels_refuses_wrong_shapes():
    with pytest.raises(ValueError, match="y to be passed"):
        check_labels(None, 3)
    with pytest.raises(ValueError, match="X has 3 rows but y has 2"):
        check_labels([0, 1], 3)
    with pytest.raises(ValueError, match="one-dimensional"):
        check_labels(np.zeros((3, 2)), 3)


def test_check_labels_mixed_types_are_ordered_by_their_text():
    y = np.array([10, "b", 2, "a", 10], dtype=object)
    classes, codes = check_labels(y, 5)
    # by text: "10" < "2" < "a" < "b"
    assert list(classes) == [10, 2, "a", "b"]
    assert [type(c) for c in classes] == [int, int, str, str]
    assert list(classes[codes]) == list(y)


# ====================================================================== dtypes
def test_to_float64_maps_missing_to_nan():
    out = to_float64(pd.Series([1, None, 3], dtype="Int64"))
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, np.nan, 3.0])


def test_as_nominal_keeps_the_categorical_order():
    s = pd.Series(pd.Categorical(["lo", "hi", "mid", "lo"], categories=["lo", "mid", "hi"]))
    cat = as_nominal(s)
    assert list(cat.categories) == ["lo", "mid", "hi"]
    assert list(cat) == ["lo", "hi", "mid", "lo"]


def test_as_nominal_of_a_numeric_categorical_keeps_order_as_text():
    s = pd.Series(pd.Categorical([3, 1, None, 3], categories=[3, 1, 2]))
    cat = as_nominal(s)
    assert list(cat.categories) == ["3", "1", "2"]
    assert list(cat.codes) == [0, 1, -1, 0]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-3, 3), st.sampled_from(["x", "y"])),
                min_size=1, max_size=30))
def test_as_nominal_of_plain_values_is_their_text(values):
    cat = as_nominal(pd.Series(values, dtype=object))
    expected = [None if v is None else str(v) for v in values]
    got = [None if pd.isna(v) else v for v in cat]
    assert got == expected
    assert all(isinstance(c, str) for c in cat.categories)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(list("abcde")), max_size=20))
def test_duplicates_are_the_names_seen_twice_in_first_order(names):
    expected = []
    for i, n in enumerate(names):
        if n in names[:i] and n not in expected:
            expected.append(n)
    # order of *first occurrence*, not of the second one
    expected.sort(key=names.index)
    assert duplicates(names) == expected


def test_python_scalar_unwraps_numpy_scalars_only():
    assert type(python_scalar(np.int64(3))) is int
    assert type(python_scalar(np.float32(0.5))) is float
    assert type(python_scalar(np.bool_(True))) is bool
    obj = object()
    assert python_scalar(obj) is obj


# ---------------------------------------------------------------------- numba_cache
def test_flush_stale_cache_flushes_when_a_dependency_changes(tmp_path, monkeypatch):
    import importlib
    import sys

    from fastpath.utils._numba_cache import flush_stale_cache

    (tmp_path / "dep_for_cache.py").write_text("from numba import njit\n\n\n"
                                               "@njit(cache=True)\ndef f(x):\n    return x + 1\n")
    (tmp_path / "kern_for_cache.py").write_text(
        "from numba import njit\n\nfrom dep_for_cache import f\n\n\n"
        "@njit(cache=True)\ndef g(x):\n    return f(x) * 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    dep = importlib.import_module("dep_for_cache")
    kern = importlib.import_module("kern_for_cache")
    try:
        assert kern.g(1) == 4  # compiled and written to the cache
        # next to the module, or under NUMBA_CACHE_DIR when it is set: where numba put it
        (index,) = Path(kern.g._cache._cache_path).glob("kern_for_cache.g-*.nbi")
        written = index.read_bytes()
        assert flush_stale_cache(vars(kern), [dep])  # no digest yet: flushed, digest stored
        assert index.read_bytes() != written  # numba rewrites a flushed index without entries
        assert kern.g(1) == 4
        assert not flush_stale_cache(vars(kern), [dep])  # unchanged dependency: cache kept
        (tmp_path / "dep_for_cache.py").write_text(
            (tmp_path / "dep_for_cache.py").read_text().replace("x + 1", "x + 2"))
        assert flush_stale_cache(vars(kern), [dep])  # changed dependency: flushed
    finally:
        sys.modules.pop("kern_for_cache", None)
        sys.modules.pop("dep_for_cache", None)


def test_pairwise_sum_is_numpys_sum():
    rng = np.random.default_rng(2)
    for n in [*range(0, 300), *rng.integers(300, 30_000, 60).tolist()]:
        x = rng.random(n) * 10.0 ** rng.integers(-300, 3)
        assert pairwise_sum(x) == np.sum(x), n


def _exps(values):
    out = np.array(values, dtype=np.float64)
    exp_in_place(out, out.size, np.empty(out.size, dtype=np.int64))
    return out


def test_exp_in_place_is_within_one_ulp_of_the_exact_exponential():
    """Against mpmath at 120 bits: |exp_in_place(x) - exp(x)| <= 1 ulp of the exact value
    (so it rounds as well as the C library's exp), over the whole normal range and near 0,
    where the polynomial does all the work."""
    mpmath = pytest.importorskip("mpmath")
    rng = np.random.default_rng(4)
    x = np.concatenate([rng.uniform(-708.0, 709.0, 1500), rng.uniform(-0.35, 0.35, 500),
                        rng.uniform(-1e-9, 1e-9, 100), -rng.exponential(8.0, 500)])
    got = _exps(x)
    with mpmath.workprec(120):
        for xi, gi in zip(x, got, strict=True):
            exact = mpmath.exp(mpmath.mpf(float(xi)))
            ulp = np.spacing(float(exact))
            assert abs(mpmath.mpf(float(gi)) - exact) <= ulp, xi


def test_exp_in_place_limits_and_exact_values():
    got = _exps([0.0, -0.0, -np.inf, np.inf, np.nan, -708.5, -1e4, 709.5, 1e4, 1.0])
    assert got[0] == 1.0 and got[1] == 1.0  # exp(0) exactly: a row's largest class
    assert got[2] == 0.0 and got[3] == np.inf and np.isnan(got[4])
    assert got[5] == 0.0 and got[6] == 0.0  # below the normal floats: 0
    assert got[7] == np.inf and got[8] == np.inf
    assert abs(got[9] - math.e) <= np.spacing(math.e)


@given(st.lists(st.floats(-800.0, 800.0, allow_nan=False), max_size=70),
       st.integers(0, 70))
@example([709.5], 1)  # between the limit and the largest finite exponential
def test_exp_in_place_touches_only_the_first_n_values(values, n):
    n = min(n, len(values))
    x = np.array(values, dtype=np.float64)
    out = x.copy()
    exp_in_place(out, n, np.empty(len(values), dtype=np.int64))
    np.testing.assert_array_equal(out[n:], x[n:])
    with np.errstate(over="ignore"):
        # the module's limits: 0 below -708, inf above 709 (exp(709.5) is finite, but beyond)
        want = np.where(x[:n] < -708.0, 0.0, np.where(x[:n] > 709.0, np.inf, np.exp(x[:n])))
    # each within an ulp of the exact value, so within two of numpy's
    np.testing.assert_allclose(out[:n], want, rtol=4.5e-16, atol=0)


def test_near_matches_names_what_a_missing_column_most_likely_became():
    from fastpath.utils._validation import near_matches

    assert near_matches(["x1"], ["X1", "x2"]) == {"x1": "X1"}
    assert near_matches(["first name"], ["first_name", "last_name"]) == {
        "first name": "first_name"}
    assert near_matches(["income"], ["incme", "age"]) == {"income": "incme"}
    assert near_matches(["income"], ["age", "class"]) == {}
    # a name that is itself wanted is not offered; one name is offered once
    assert near_matches(["a1", "A1"], ["A1"]) == {}
    assert near_matches(["ab", "AB"], ["Ab"]) == {"ab": "Ab"}


def test_missing_columns_message_names_another_separator_or_the_renamed_column():
    from fastpath.utils._validation import missing_columns_message, other_separator

    assert other_separator(["a;b;class"], ",") == (";", "';'")
    assert other_separator(["a\tb"], ",") == ("\t", "tab")
    assert other_separator(["a", "b"], ",") is None
    assert other_separator(["a,b"], ",") is None  # a comma in a name read with commas
    text = missing_columns_message(["a", "b"], ["a;b;class"], what="'t.csv'", sep=",")
    assert "';'-separated" in text and "--sep ';'" in text
    text = missing_columns_message(["x1"], ["X1", "x2"], what="'t.csv'", sep=",")
    assert text.endswith("renamed? 'x1' (it has 'X1')")
    assert missing_columns_message(["q"], ["z"], what="X") == (
        "X lacks columns the model was fitted on: ['q']")
