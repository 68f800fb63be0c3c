"""Table -> integer codes: the first arrow of the pipeline.

:class:`TableEncoder` turns a table of mixed columns into a matrix of small non-negative integer
codes, one column per attribute:

* **nominal** columns (strings, booleans, pandas categoricals, object arrays) get one code per
  value seen in training — for a pandas ``Categorical`` (and ARFF nominal attributes), one per
  *declared* category, so a declared but unobserved value still counts in ``|X_i|``;
* **numeric** columns are discretised with MDL (Fayyad & Irani 1993) fitted on the training rows
  only; the codes are the intervals between cut points;
* a **missing value** is a value of its own (paper, "Experimental design and setting"): if a column
  has missing values in training, missing gets the last code of that column;
* which columns are nominal and which numeric, the declared missing values (``na_values``), the
  stray tokens of a text column that is at least 95 % numbers (such as a numeric column with a
  few ``"?"``: missing values, with a warning) and the identifiers and dates a fit leaves out
  are decided once, before coding, by :func:`~fastpath.io._column_types.type_columns`, whose
  record (:class:`~fastpath.io._column_types.ColumnTypes`) :meth:`TableEncoder.fit` codes
  from; :func:`~fastpath.io.read_table` and streamed fits follow the same rules.

Values never seen in training (a new category, or a missing value in a column that had none) are
coded ``-1`` (*unknown*). Downstream, an unknown value is treated as unobserved: its own factor is
left out of the product (it is marginalised: the factor sums to one over the column's values) and
the context trees of its children back off to the node above it. This is deterministic and does
not depend on the other rows.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numba import njit

from ..io._column_types import (
    NOMINAL,
    ColumnTypes,
    check_cell_types,
    check_na_values,
    check_numeric_errors,
    declare_missing,
    identifier_message,
    is_identifier,
    nominal_mask,
    numeric_values,
    raise_unhashable_cell,
    stray_warning,
    type_columns,
)
from ..io._typed_table import TableWithTypes
from ..utils._dtypes import column_arrays, python_scalar
from ..utils._validation import as_generator
from ..utils._warn import DataWarning, warn
from ._discretize import (
    _value_table,
    mdl_cut_points,
    random_cut_points,
    random_cut_points_of_table,
    stochastic_mdl_cut_points,
    stochastic_mdl_cut_points_of_table,
)

#: code of a value that was never seen in training
UNKNOWN = -1
#: the discretisations that draw their cut points from a generator
RANDOM_DISCRETIZATIONS: tuple[str, ...] = ("stochastic", "random")


@dataclass(frozen=True)
class AttributeCoding:
    """How one column is coded.

    Attributes
    ----------
    name : str
    kind : {"nominal", "numeric"}
    categories : tuple
        Nominal: the labels of codes ``0..len(categories)-1``. Numeric: empty.
    cut_points : tuple of float
        Numeric: sorted MDL cut points; interval ``j`` is code ``j``. Nominal: empty.
    missing_code : int or None
        Code of a missing value, when missing values were seen in training.
    missing_tokens : tuple of str
        Numeric: the values (as text) that are not numbers and were read as missing in training
        (the stray tokens of :func:`~fastpath.io._column_types.stray_tokens`); they are missing
        when transforming too. Usually empty.
    """

    name: str
    kind: str
    categories: tuple = ()
    cut_points: tuple[float, ...] = ()
    missing_code: int | None = None
    missing_tokens: tuple[str, ...] = ()

    @property
    def cardinality(self) -> int:
        base = len(self.categories) if self.kind == "nominal" else len(self.cut_points) + 1
        return base + (self.missing_code is not None)

    @property
    def code_of_missing(self) -> int:
        """The code a missing value gets: ``missing_code``, or ``UNKNOWN`` when training saw
        none."""
        return UNKNOWN if self.missing_code is None else self.missing_code

    def value_labels(self) -> list[str]:
        """Human-readable label of every code."""
        if self.kind == "nominal":
            labels = [str(c) for c in self.categories]
        else:
            edges = [-math.inf, *self.cut_points, math.inf]
            labels = [f"({edges[j]:.6g}, {edges[j + 1]:.6g}]" for j in range(len(edges) - 1)]
        if self.missing_code is not None:
            labels.append("<missing>")
        return labels

    def to_dict(self) -> dict:
        out = {
            "name": self.name,
            "kind": self.kind,
            "categories": [python_scalar(c) for c in self.categories],
            "cut_points": [float(c) for c in self.cut_points],
            "missing_code": self.missing_code,
        }
        if self.missing_tokens:  # only then: other codings are written as before
            out["missing_tokens"] = list(self.missing_tokens)
        return out

    @classmethod
    def from_dict(cls, d: dict) -> AttributeCoding:
        return cls(
            name=d["name"],
            kind=d["kind"],
            categories=tuple(d["categories"]),
            cut_points=tuple(d["cut_points"]),
            missing_code=d["missing_code"],
            missing_tokens=tuple(str(t) for t in d.get("missing_tokens", ())),
        )


def column_labels(columns: pd.Index) -> tuple:
    """``columns.tolist()`` as a tuple (iterating an Index label by label is slower)."""
    return tuple(columns.tolist())


def as_frame(X: Any) -> tuple[pd.DataFrame, bool]:
    """View ``X`` as a DataFrame without copying the caller's data when possible.

    Returns the frame and whether ``X`` carried column names (a DataFrame with string names).
    A :class:`~fastpath.io.TableWithTypes` (what :func:`~fastpath.io.read_table` returns) is
    its frame, whose dtypes carry the types the reader gave its columns. Raises on duplicated
    column names, sparse input and anything not two-dimensional.
    """
    if isinstance(X, TableWithTypes):
        X = X.frame
    if isinstance(X, pd.DataFrame):
        columns = column_labels(X.columns)  # one conversion (iterating an Index is slow)
        names = [str(c) for c in columns]
        if len(set(names)) != len(names):
            dup = sorted({n for n in names if names.count(n) > 1})
            raise ValueError(f"duplicated column names: {dup}")
        has_names = all(isinstance(c, str) for c in columns)
        frame = X if has_names else X.set_axis(names, axis=1)
        return frame, has_names
    if hasattr(X, "toarray") or type(X).__module__.startswith("scipy.sparse"):
        raise TypeError(
            "sparse input is not supported: BayesNetClassifier needs a dense table; "
            "convert with X.toarray()"
        )
    if isinstance(X, pd.Series):
        raise ValueError("expected a 2-D table, got a pandas Series; use series.to_frame()")
    arr = np.asarray(X)
    if arr.ndim != 2:
        raise ValueError(
            f"expected a 2-D table (n_samples, n_features), got an array of shape {arr.shape}. "
            "Reshape your data: X.reshape(-1, 1) for a single feature, X.reshape(1, -1) for a "
            "single sample"
        )
    if arr.dtype.kind == "c":
        raise ValueError("Complex data not supported")
    frame = pd.DataFrame(arr, columns=[f"x{j}" for j in range(arr.shape[1])], copy=False)
    if arr.dtype == object:
        # let pandas find numeric object columns (e.g. a mixed-type array of numbers)
        frame = frame.infer_objects()
    return frame, False


class TableEncoder:
    """Code a table's columns as small integers (nominal values, MDL intervals, missing).

    Parameters
    ----------
    categorical_features : "auto", sequence of str or int, or boolean mask
        Which columns are nominal. ``"auto"``: non-numeric dtypes (strings, booleans, object,
        category) are nominal, numeric dtypes are discretised. A list names (or indexes, or a
        boolean mask marks) columns to make nominal *in addition*: use it for integer-coded
        categories. It never makes a column numeric: an unlisted string, object or categorical
        column stays nominal (an unlisted bool column is coded as the numbers 0/1).

    Column types
    ------------
    The rules of :mod:`fastpath.io._column_types`. A string or object column whose non-missing
    values are at least 95 % numbers, and not all numbers (a numeric column with a stray
    ``"?"``), is **numeric**: the values that are not numbers become missing values, and
    ``fit`` warns with a ``DataWarning`` naming the column, those values and their counts. They
    are remembered (``AttributeCoding.missing_tokens``) and are missing in ``transform`` too;
    any other text in a numeric column is missing with a warning, or raises a ``ValueError``
    naming the column, the value and its row (``numeric_errors``). To keep such a column
    nominal, list it in ``categorical_features``; to say up front that a token means missing,
    declare it (``na_values``). Below 95 % the column stays nominal; a text column that is all
    numbers keeps its text type (nominal).
    discretization : {"mdl", "stochastic", "random"}, default="mdl"
        How numeric columns are cut: Fayyad & Irani's MDL as Weka computes it
        (:func:`~fastpath.encode._discretize.mdl_cut_points`); its stochastic variant
        (:func:`~fastpath.encode._discretize.stochastic_mdl_cut_points`), which draws every cut
        among the admissible ones, and one cut in proportion to information gain where none of
        a column's is admissible -- the discretisation of an ensemble member in ESKDB (Zhang,
        Petitjean & Buntine, KAIS 2020, and their code's forced cut); or cuts at random
        resolution (:func:`~fastpath.encode._discretize.random_cut_points`: 2 to 12 bins, each
        cut at a row's value drawn uniformly, as a forest draws split points; no class read).
    random_state : int, numpy Generator or None, default=None
        Seed of the stochastic or random discretisation (one draw per numeric column, in column
        order); unused with ``"mdl"``.
    na_values : str or sequence of str, optional
        Tokens that mean a missing value in every column, when fitting and when transforming
        (:func:`~fastpath.io._column_types.declare_missing`): ``"?"`` in a nominal column is
        then missing, not a category, and a numeric column's declared tokens are missing
        without a warning.
    numeric_errors : {"coerce", "raise"}, default="coerce"
        What a value that is not a number becomes in a numeric column, when it is neither
        declared (``na_values``) nor one of the stray tokens learned in training: a missing
        value, with one warning per column and call naming the tokens and their counts
        (``"coerce"``), or a ``ValueError`` naming the column, the value and its row
        (``"raise"``; then ``fit`` refuses stray tokens too).
    """

    DISCRETIZATIONS: tuple[str, ...] = ("mdl", "stochastic", "random")

    def __init__(self, categorical_features: Any = "auto", *, discretization: str = "mdl",
                 random_state: Any = None, na_values: Any = None,
                 numeric_errors: str = "coerce") -> None:
        self.categorical_features = categorical_features
        self.discretization = discretization
        self.random_state = random_state
        self.na_values = na_values
        self.numeric_errors = numeric_errors

    @property
    def na_tokens(self) -> tuple[str, ...]:
        """``na_values`` as a tuple of strings (checked)."""
        return check_na_values(getattr(self, "na_values", None))

    @property
    def errors(self) -> str:
        """``numeric_errors`` (checked; encoders written before it existed coerce)."""
        return check_numeric_errors(getattr(self, "numeric_errors", "coerce"))

    def declare_missing(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (rows to code) with the ``na_values`` missing
        (:func:`~fastpath.io._column_types.declare_missing`)."""
        return declare_missing(frame, self.na_tokens)

    def column_types(self, frame: pd.DataFrame, exclude_features: Any = None) -> ColumnTypes:
        """The :class:`~fastpath.io._column_types.ColumnTypes` of ``frame`` (training rows)
        under this encoder's ``categorical_features`` and ``na_values``, the columns
        ``exclude_features`` leaves out marked (:func:`~fastpath.io._column_types.
        type_columns`): what :meth:`fit` codes from."""
        return type_columns(frame, self.categorical_features, na_values=self.na_tokens,
                            exclude_features=exclude_features)

    # ------------------------------------------------------------------ fit
    def nominal_mask(self, frame: pd.DataFrame) -> np.ndarray:
        """Which columns of ``frame`` are nominal under ``categorical_features``: the columns
        chosen by the data (non-numeric dtypes, less the text columns that are almost all
        numbers: see the class docstring), plus those ``categorical_features`` lists
        (:func:`~fastpath.io._column_types.nominal_mask`)."""
        return nominal_mask(frame, self.categorical_features)

    def fit(self, X: Any, y_codes: np.ndarray, n_classes: int, *,
            numeric_rows: dict[int, tuple[np.ndarray, np.ndarray]] | None = None,
            types: ColumnTypes | None = None) -> TableEncoder:
        """Learn the coding of every column from training rows (MDL uses the class).

        ``numeric_rows``: a dict that receives every numeric column's non-missing values and
        their classes (by column index), from which :meth:`redrawn` draws other cut points.
        ``types``: the :meth:`column_types` of ``X``, when the caller has them (``X`` is then
        not read again: the encoder codes ``types.frame``).
        """
        if self.discretization not in self.DISCRETIZATIONS:
            raise ValueError(f"discretization must be one of {self.DISCRETIZATIONS}, got "
                             f"{self.discretization!r}")
        # checked (and, for an int, seeded) before any work; only drawn from when stochastic
        rng = (as_generator(self.random_state) if self.discretization in RANDOM_DISCRETIZATIONS
               else None)
        check_numeric_errors(self.numeric_errors)  # before any work
        if types is None:
            types = self.column_types(as_frame(X)[0])
        frame = types.frame
        check_cell_types(frame)
        try:
            return self._fit(types, np.asarray(y_codes, dtype=np.int64), n_classes, rng,
                             numeric_rows)
        except TypeError:  # e.g. a list in a cell: name the column and the row
            raise_unhashable_cell(frame)
            raise

    def _fit(self, types: ColumnTypes, y_codes: np.ndarray, n_classes: int,
             rng: np.random.Generator | None,
             numeric_rows: dict[int, tuple[np.ndarray, np.ndarray]] | None = None
             ) -> TableEncoder:
        frame = types.frame
        codings = []
        for j, (name, typed) in enumerate(zip(frame.columns, types.columns, strict=True)):
            col = frame.iloc[:, j]
            missing = col.isna().to_numpy()
            values = None
            tokens = typed.stray_tokens  # rule 3: read as missing, said here
            if typed.kind != NOMINAL:
                values, stray = numeric_values(col, name, None)
                if tokens:
                    message = stray_warning(name, tokens, int((~missing).sum()))
                    if self.errors == "raise":
                        raise ValueError(f"{message} (numeric_errors='raise' refuses them)")
                    warn(message, DataWarning)
                    missing = missing | stray
            if missing.all():
                warn(
                    f"column {name!r} is missing in every training row; it is kept as a "
                    "constant attribute that carries no information",
                    DataWarning)
            if missing.all():
                # nothing to discretise or enumerate: one value, "missing"
                codings.append(AttributeCoding(name=str(name), kind="nominal", missing_code=0))
            elif typed.kind == NOMINAL:
                if isinstance(col.dtype, pd.CategoricalDtype):
                    categories = tuple(python_scalar(c) for c in col.cat.categories)
                    codes = col.cat.codes.to_numpy()
                    n_seen = np.unique(codes[codes >= 0]).size  # observed, not declared
                else:
                    uniq = pd.unique(col[~missing])
                    try:
                        categories = tuple(python_scalar(c) for c in sorted(uniq))
                    except TypeError:  # mixed types: order by their text
                        categories = tuple(python_scalar(c) for c in sorted(uniq, key=str))
                    n_seen = len(categories)
                n_present = len(categories)
                if is_identifier(n_seen, int((~missing).sum())):  # kept by exclude_features
                    warn(identifier_message(name, n_seen, int((~missing).sum()), False),
                         DataWarning)
                codings.append(
                    AttributeCoding(
                        name=str(name),
                        kind="nominal",
                        categories=categories,
                        missing_code=n_present if missing.any() else None,
                    )
                )
            else:
                finite = ~np.isnan(values)
                if numeric_rows is not None and finite.any():
                    numeric_rows[j] = values[finite], y_codes[finite]
                if not finite.any():
                    cuts = np.empty(0)
                elif rng is None:
                    cuts = mdl_cut_points(values[finite], y_codes[finite], n_classes)
                elif self.discretization == "random":
                    cuts = random_cut_points(values[finite], y_codes[finite], n_classes, rng)
                else:
                    cuts = stochastic_mdl_cut_points(values[finite], y_codes[finite], n_classes,
                                                     rng)
                codings.append(
                    AttributeCoding(
                        name=str(name),
                        kind="numeric",
                        cut_points=tuple(float(c) for c in cuts),
                        missing_code=len(cuts) + 1 if missing.any() else None,
                        missing_tokens=tuple(tokens or ()),
                    )
                )
        self.codings_ = tuple(codings)
        self.feature_names_ = tuple(str(c) for c in frame.columns)
        return self

    def redrawn(self, numeric_rows: dict[int, tuple[np.ndarray, np.ndarray]], n_classes: int,
                random_state: Any, *, tables: dict | None = None,
                discretization: str = "stochastic") -> TableEncoder:
        """This fitted encoder with every numeric column's cut points drawn anew from
        ``random_state`` by ``discretization`` (``"stochastic"``: the stochastic MDL;
        ``"random"``: at random resolution), one draw per column in column order -- what
        :meth:`fit` with that ``discretization`` and ``random_state`` learns from the same
        rows (``numeric_rows``: each numeric column's non-missing values and their classes, as
        :meth:`fit` recorded them), without reading the table again. The nominal codings are
        this encoder's. ``tables``: a dict kept by
        the caller across calls, filled here with each numeric column's sorted values and class
        counts, so that several redraws sort a column once."""
        rng = as_generator(random_state)
        tables = {} if tables is None else tables
        codings = []
        for j, coding in enumerate(self.codings_):
            if coding.kind == "numeric":
                if j in numeric_rows:
                    if j not in tables:
                        tables[j] = _value_table(*numeric_rows[j], n_classes, coding.name)
                    cuts = (random_cut_points_of_table(tables[j], rng)
                            if discretization == "random"
                            else stochastic_mdl_cut_points_of_table(tables[j], rng))
                else:
                    cuts = np.empty(0)
                coding = dataclasses.replace(
                    coding, cut_points=tuple(float(c) for c in cuts),
                    missing_code=len(cuts) + 1 if coding.missing_code is not None else None,
                )
            codings.append(coding)
        out = copy.copy(self)
        out.random_state = random_state
        out.discretization = discretization
        out.codings_ = tuple(codings)
        return out

    # ------------------------------------------------------------------ transform
    @property
    def cardinalities_(self) -> tuple[int, ...]:
        return tuple(c.cardinality for c in self.codings_)

    def transform(self, X: Any) -> np.ndarray:
        """Codes of every row, shape (n, n_attributes), ``-1`` for values unseen in training.

        ``X`` must have the fitted columns (matched by position; callers check names).
        """
        frame, _ = as_frame(X)
        if frame.shape[1] != len(self.codings_):
            raise ValueError(
                f"X has {frame.shape[1]} columns, but the encoder was fitted with "
                f"{len(self.codings_)}"
            )
        frame = self.declare_missing(frame)
        check_cell_types(frame)
        try:
            return self._transform(frame)
        except TypeError:
            raise_unhashable_cell(frame)
            raise

    def transform_shared(self, X: Any, cache: dict) -> np.ndarray:
        """:meth:`transform` for encoders that code some columns alike (an ensemble's members:
        every nominal column; every numeric column is parsed once): ``cache``, filled by
        earlier calls on the same ``X`` (or by :func:`column_cache`), keeps each column, its
        missing mask, its numbers and its nominal codes; a call that finds every entry only
        reads it, so threads may share a filled cache."""
        frame, _ = as_frame(X)
        if frame.shape[1] != len(self.codings_):
            raise ValueError(
                f"X has {frame.shape[1]} columns, but the encoder was fitted with "
                f"{len(self.codings_)}"
            )
        if not cache:
            frame = self.declare_missing(frame)
            check_cell_types(frame)
        try:
            return self._transform(frame, cache)
        except TypeError:
            raise_unhashable_cell(frame)
            raise

    def _transform(self, frame: pd.DataFrame, parsed: dict | None = None) -> np.ndarray:
        parsed = {} if parsed is None else parsed
        if not parsed:
            parsed.update(_columns_parsed(frame))
        out = np.empty((frame.shape[0], len(self.codings_)), dtype=np.int64)
        for j, coding in enumerate(self.codings_):
            out[:, j] = _column_codes(frame, j, coding, parsed, self.errors)
        return out

    @staticmethod
    def _nominal_codes(col: pd.Series, coding: AttributeCoding) -> np.ndarray:
        """Codes of a nominal column: its distinct values (a categorical's categories, or
        pandas' factorisation, C speed) mapped to the fitted codes. A short column (at most
        :data:`SMALL_BATCH` rows, a prediction's usual batch) maps value by value instead,
        without the factorisation's fixed cost per call."""
        if isinstance(col.dtype, pd.CategoricalDtype):
            return TableEncoder._categorical_codes(col.array, coding)
        if len(col) <= SMALL_BATCH:
            return _nominal_codes_by_lookup(col, coding)
        row_codes, uniques = pd.factorize(col, use_na_sentinel=True)
        return TableEncoder._mapped_codes(row_codes, uniques, coding)

    @staticmethod
    def _categorical_codes(values: pd.Categorical, coding: AttributeCoding,
                           missing: int = UNKNOWN) -> np.ndarray:
        """:meth:`_nominal_codes` of a categorical: its categories mapped to the fitted codes
        (computed once per coding and categories: a prediction's batches share them) in one
        take, a missing value's -1 landing on the lookup's last entry, ``missing``."""
        lookup = _categories_lookup(coding.categories, values.dtype, missing)
        return _take_codes(values.codes, lookup)

    @staticmethod
    def _mapped_codes(row_codes: np.ndarray, uniques: Any,
                      coding: AttributeCoding) -> np.ndarray:
        """Codes of a factorised column (``row_codes`` into ``uniques``, -1 missing)."""
        categories = coding.categories
        lookup = _uniques_lookup(categories, tuple(type(c) for c in categories), uniques)
        return _take_codes(row_codes, lookup)

    def fit_transform(self, X: Any, y_codes: np.ndarray, n_classes: int) -> np.ndarray:
        return self.fit(X, y_codes, n_classes).transform(X)

    # ------------------------------------------------------------------ persistence
    def to_dict(self) -> dict:
        out = {
            "categorical_features": _jsonable_spec(self.categorical_features),
            "discretization": self.discretization,
            "codings": [c.to_dict() for c in self.codings_],
        }
        # only when set: encoders without them are written as before
        if self.na_tokens:
            out["na_values"] = list(self.na_tokens)
        if self.errors != "coerce":
            out["numeric_errors"] = self.errors
        return out

    @classmethod
    def from_dict(cls, d: dict) -> TableEncoder:
        # model files written before the stochastic discretisation have no "discretization"
        enc = cls(d["categorical_features"], discretization=d.get("discretization", "mdl"),
                  na_values=d.get("na_values"),
                  numeric_errors=d.get("numeric_errors", "coerce"))
        enc.codings_ = tuple(AttributeCoding.from_dict(c) for c in d["codings"])
        enc.feature_names_ = tuple(c.name for c in enc.codings_)
        return enc


def _column_codes(frame: pd.DataFrame, j: int, coding: AttributeCoding,
                  parsed: dict, errors: str = "coerce") -> np.ndarray:
    """The codes of column ``j`` of ``frame`` under ``coding`` (``-1`` for a value unseen in
    training); ``parsed`` keeps each column (:class:`_Column`), a numeric column's values and
    a nominal column's codes for the call, so several codings (an ensemble's members) read
    a column once and code a nominal column once."""
    if coding.kind == "nominal":
        return _nominal_column_codes(frame, j, coding, parsed).copy()
    values, missing = _numeric_column(frame, j, coding, parsed, errors)
    cuts = np.asarray(coding.cut_points, dtype=float)
    # every row at once (a missing value's NaN lands past the cuts, then is overwritten)
    codes = np.searchsorted(cuts, values, side="left").astype(np.int64, copy=False)
    codes[missing] = coding.code_of_missing
    return codes


def _entry(frame: pd.DataFrame, j: int, parsed: dict) -> _Column:
    if j not in parsed:
        parsed[j] = _Column(frame, j, frame.iloc[:, j].array)
    return parsed[j]


def _nominal_column_codes(frame: pd.DataFrame, j: int, coding: AttributeCoding,
                          parsed: dict) -> np.ndarray:
    """The codes of nominal column ``j`` under ``coding``, computed once per call (read only:
    callers copy)."""
    key = ("nominal", j, coding)
    if key not in parsed:
        entry = _entry(frame, j, parsed)
        missing = coding.code_of_missing
        if isinstance(entry.array, pd.Categorical):
            codes = TableEncoder._categorical_codes(entry.array, coding, missing)
        else:
            codes = TableEncoder._nominal_codes(entry.series(), coding)
            codes[entry.missing] = missing
        parsed[key] = codes
    return parsed[key]


def _numeric_column(frame: pd.DataFrame, j: int, coding: AttributeCoding,
                    parsed: dict, errors: str = "coerce") -> tuple[np.ndarray, np.ndarray]:
    """``(values, missing)`` of numeric column ``j`` (NaN where missing or a stray token),
    parsed once per call (so a warning about its non-numbers is said once per call)."""
    key = (j, coding.missing_tokens)
    if key not in parsed:
        entry = _entry(frame, j, parsed)
        array = entry.array
        if isinstance(array, np.ndarray) and array.dtype.kind in "iuf":
            # plain numbers: parse_numbers' values, without a Series
            values = array.astype(np.float64, copy=False)
            if np.isinf(values).any():  # the slow path raises the error naming the row
                numeric_values(entry.series(), coding.name, coding.missing_tokens)
            parsed[key] = values, entry.missing
        else:
            values, stray = numeric_values(entry.series(), coding.name, coding.missing_tokens,
                                           errors)
            parsed[key] = values, entry.missing | stray
    return parsed[key]


class _Column:
    """A column of the frame being coded: its values as pandas stores them (read without
    building a Series: pandas 3's Series construction costs more than coding a small
    prediction batch; docs/performance.md, "The ensemble's cost"), its missing mask (computed
    when first asked for: a categorical's codes carry it), and the Series when a slower path
    needs it."""

    __slots__ = ("_frame", "_j", "_missing", "_series", "array")

    def __init__(self, frame: pd.DataFrame, j: int, array: Any) -> None:
        self._frame, self._j, self._series, self._missing = frame, j, None, None
        self.array = array

    @property
    def missing(self) -> np.ndarray:
        if self._missing is None:
            array = self.array
            if isinstance(array, pd.Categorical):
                self._missing = array.codes < 0
            elif isinstance(array, np.ndarray) and array.dtype.kind in "iub":
                self._missing = np.zeros(array.shape[0], dtype=bool)
            elif isinstance(array, np.ndarray) and array.dtype.kind == "f":
                self._missing = np.isnan(array)
            else:
                self._missing = self.series().isna().to_numpy()
        return self._missing

    def series(self) -> pd.Series:
        if self._series is None:
            self._series = self._frame.iloc[:, self._j]
        return self._series


#: the most rows a nominal column may have for the dict lookup of :func:`_nominal_codes_by_lookup`
#: (a Python call per row; pandas' factorisation has a fixed cost per column but is faster
#: per row, so it wins only on longer columns)
SMALL_BATCH = 2048


def _nominal_codes_by_lookup(col: pd.Series, coding: AttributeCoding) -> np.ndarray:
    """:meth:`TableEncoder._nominal_codes` of a short column, value by value (a missing
    value gets ``UNKNOWN`` here; its caller codes it)."""
    code_of = _category_lookup(coding.categories)
    values = col.to_numpy(dtype=object)
    missing = pd.isna(values)
    codes = np.empty(len(values), dtype=np.int64)
    # equal values (3 and 3.0) take the code of the first, as pandas' factorisation groups them
    first: dict = {}
    for i, (value, gone) in enumerate(zip(values, missing, strict=True)):
        if gone:
            codes[i] = UNKNOWN
        else:
            code = first.get(value)
            if code is None:
                code = first[value] = code_of(value)
            codes[i] = code
    return codes


def _columns_parsed(frame: pd.DataFrame) -> dict:
    """The cache of :func:`_column_codes` with every column of ``frame`` read (each column's
    array straight from the frame's blocks when pandas lets us, see :class:`_Column`)."""
    return {j: _Column(frame, j, array) for j, array in enumerate(column_arrays(frame))}


def _category_lookup(categories: tuple) -> Callable[[Any], int]:
    """The code of a value under the fitted ``categories``: the category equal to it (Python's
    hash and ``==``, as pandas' indexer), else -- the same labels typed differently, e.g. "3"
    in training and 3 when a file is re-read as numbers -- the one with the same text (when no
    two categories share a text), else ``UNKNOWN``. Built once per coding."""
    # keyed by the types too: (1, 2) == (1.0, 2.0), but their text differs ("1" vs "1.0")
    return _category_lookup_of(categories, tuple(type(c) for c in categories))


def _categories_lookup(categories: tuple, dtype: pd.CategoricalDtype,
                       missing: int = UNKNOWN) -> np.ndarray:
    """The fitted code of each of ``dtype``'s categories (``UNKNOWN`` for one not fitted), then
    ``missing`` (where a missing value's -1 lands), read-only."""
    lookup = _uniques_lookup(categories, tuple(type(c) for c in categories), dtype.categories)
    lookup[-1] = missing
    lookup.flags.writeable = False
    return lookup


def _uniques_lookup(categories: tuple, types: tuple, uniques: Any) -> np.ndarray:
    """The fitted code of each of ``uniques`` (``UNKNOWN`` for one not fitted), then
    ``UNKNOWN`` (where a missing value's -1 lands): :func:`_take_codes`' lookup."""
    code_of = _category_lookup_of(categories, types)
    lookup = np.fromiter((code_of(u) for u in uniques), dtype=np.int64, count=len(uniques))
    return np.append(lookup, UNKNOWN)


def _take_codes(row_codes: np.ndarray, lookup: np.ndarray) -> np.ndarray:
    """``lookup[row_codes]`` where ``lookup``'s last entry is ``UNKNOWN`` (row code -1)."""
    return lookup[np.asarray(row_codes, dtype=np.intp)]


@functools.lru_cache(maxsize=4096)
def _category_lookup_of(categories: tuple, types: tuple) -> Callable[[Any], int]:
    by_value: dict = {}
    for code, value in enumerate(categories):
        by_value.setdefault(value, code)  # as an indexer: the first of equal labels
    texts = [str(c) for c in categories]
    by_text = dict(zip(texts, range(len(texts)), strict=True)) if (
        len(set(texts)) == len(texts)) else {}

    def code_of(value: Any) -> int:
        code = by_value.get(value, UNKNOWN)
        return by_text.get(str(value), UNKNOWN) if code == UNKNOWN else code

    return code_of


def fit_members(types: ColumnTypes, y_codes: np.ndarray, n_classes: int,
                discretizations: Sequence[str], streams: Sequence[np.random.Generator | None],
                *, na_values: Any = None, numeric_errors: str = "coerce") -> list[TableEncoder]:
    """One encoder per member (``streams``: each member's generator; ``discretizations``: each
    member's), each what ``TableEncoder(types.categorical_features, discretization=...,
    random_state=stream).fit`` learns from the typed table ``types``
    (:func:`~fastpath.io._column_types.type_columns`), the table read once: member 0 fits it
    (and says what the data warns about), the others copy its nominal codings and, unless
    theirs is Weka's MDL, draw their cut points from the same rows."""
    numeric_rows: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    tables: dict = {}  # each numeric column sorted once for every member's redraw
    first = TableEncoder(types.categorical_features, discretization=discretizations[0],
                         random_state=streams[0], na_values=na_values,
                         numeric_errors=numeric_errors).fit(types.frame, y_codes, n_classes,
                                                            numeric_rows=numeric_rows,
                                                            types=types)
    encoders = [first]
    for stream, discretization in zip(streams[1:], discretizations[1:], strict=True):
        if discretization in RANDOM_DISCRETIZATIONS:
            encoders.append(first.redrawn(numeric_rows, n_classes, stream, tables=tables,
                                          discretization=discretization))
        else:  # Weka's cut points: every member codes alike
            other = copy.copy(first)
            other.random_state = stream
            encoders.append(other)
    return encoders


def column_cache(encoder: TableEncoder, X: Any) -> dict:
    """The cache of :meth:`TableEncoder.transform_shared` for ``X``, filled for ``encoder``'s
    codings (and so for every member that shares its nominal codings and missing tokens)."""
    cache: dict = {}
    encoder.transform_shared(X, cache)
    return cache


@dataclass(frozen=True)
class MembersLayout:
    """Where several encoders' codes go (:func:`code_members`), computed once per model.

    ``columns[e, j]``: the column of the shared codes holding encoder ``e``'s attribute ``j``
    (one per distinct ``(j, coding)``). ``nominal``: ``(column, j, coding)`` of each distinct
    nominal coding. ``numeric``: per numeric column and missing tokens, ``(j, coding, cuts,
    below, missing_codes, targets)``: every cut point of its codings, sorted and distinct
    (``cuts``), then for each number ``rank`` of them below a value and each coding ``i`` the
    number of coding ``i``'s own cut points below that value (``below[rank, i]``, its code),
    the code of a missing value under each coding, and the shared column each fills.
    """

    n_attributes: int
    n_codes: int
    columns: np.ndarray
    nominal: tuple
    numeric: tuple
    #: :meth:`categories_lookup`'s entries: (shared column, id of a dtype) -> (the dtype, its
    #: lookup); the entry holds the dtype, so that its id cannot be reused while it is kept
    _lookups: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def categories_lookup(self, column: int, coding: AttributeCoding,
                          dtype: pd.CategoricalDtype) -> np.ndarray:
        """:func:`_categories_lookup` of the nominal ``coding`` filling the shared ``column``,
        kept per dtype object: a prediction's batches sliced from one frame share their dtype
        objects, and an ensemble's members map each of them once per distinct coding (equal
        dtypes are not compared: pandas' comparison of two categoricals' dtypes costs more
        than the lookup it would save; docs/performance.md, "The ensemble's cost")."""
        key = (column, id(dtype))
        hit = self._lookups.get(key)
        if hit is not None and hit[0] is dtype:
            return hit[1]
        lookup = _categories_lookup(coding.categories, dtype, coding.code_of_missing)
        if len(self._lookups) >= 4096:  # bounded: a caller may predict on ever new frames
            self._lookups.clear()
        self._lookups[key] = (dtype, lookup)
        return lookup


def members_layout(encoders: Sequence[TableEncoder]) -> MembersLayout:
    """The :class:`MembersLayout` of ``encoders`` (an ensemble's members)."""
    n_attributes = len(encoders[0].codings_)
    position: dict[tuple[int, AttributeCoding], int] = {}
    columns = np.empty((len(encoders), n_attributes), dtype=np.int64)
    for e, encoder in enumerate(encoders):
        for j, coding in enumerate(encoder.codings_):
            columns[e, j] = position.setdefault((j, coding), len(position))
    nominal = []
    numeric: dict[tuple, list] = {}
    for (j, coding), d in position.items():
        if coding.kind == "nominal":
            nominal.append((d, j, coding))
        else:
            numeric.setdefault((j, coding.missing_tokens), []).append((d, coding))
    groups = []
    for (j, _), codings in numeric.items():
        cuts = np.unique(np.asarray([v for _, c in codings for v in c.cut_points],
                                    dtype=np.float64))
        # a value with `rank` of the cuts below it has, below it, the coding's cuts among
        # cuts[:rank]: those at most cuts[rank - 1]
        below = np.zeros((cuts.size + 1, len(codings)), dtype=np.int64)
        for i, (_, coding) in enumerate(codings):
            own = np.asarray(coding.cut_points, dtype=np.float64)
            below[1:, i] = np.searchsorted(own, cuts, side="right")
        missing_codes = np.asarray([c.code_of_missing for _, c in codings], dtype=np.int64)
        targets = np.asarray([d for d, _ in codings], dtype=np.int64)
        groups.append((j, codings[0][1], cuts, below, missing_codes, targets))
    columns.flags.writeable = False
    return MembersLayout(n_attributes, len(position), columns, tuple(nominal), tuple(groups))


def _categorical_columns_codes(columns: list[tuple[int, np.ndarray, np.ndarray]],
                               out: np.ndarray) -> None:
    """``out[:, d] = lookup[row_codes]`` for every ``(d, row_codes, lookup)`` of ``columns``
    (:meth:`TableEncoder._categorical_codes` of each: a row code -1 reads the lookup's last
    entry), the columns of one integer width in one compiled call: a prediction of a few hundred
    rows spent more on numpy's per-column calls than on the lookups."""
    by_width: dict[np.dtype, list[tuple[int, np.ndarray, np.ndarray]]] = {}
    for column in columns:
        by_width.setdefault(column[1].dtype, []).append(column)
    for group in by_width.values():
        lookups = [lookup for _, _, lookup in group]
        sizes = np.array([lookup.size for lookup in lookups], dtype=np.int64)
        ends = np.cumsum(sizes)
        _take_columns(np.array([d for d, _, _ in group], dtype=np.int64),
                      np.stack([row_codes for _, row_codes, _ in group]),
                      np.concatenate(lookups), ends - sizes, ends, out)


@njit(cache=True, nogil=True)
def _take_columns(dest, row_codes, lookups, starts, ends, out):
    """``out[r, dest[i]] = lookups[starts[i] + row_codes[i, r]]``, or ``lookups[ends[i] - 1]``
    where the row code is -1 (:func:`_categorical_columns_codes`)."""
    for i in range(dest.shape[0]):
        d = dest[i]
        first = starts[i]
        last = ends[i] - 1
        for r in range(row_codes.shape[1]):
            c = row_codes[i, r]
            out[r, d] = lookups[last if c < 0 else first + c]


@njit(cache=True, nogil=True)
def _interval_codes(values, missing, cuts, below, missing_codes, targets, out):
    """``out[:, targets[i]]``: the interval of every value among coding ``i``'s cut points,
    ``np.searchsorted(coding_cuts, values, side="left")`` (a NaN past every cut), or the
    coding's missing code where ``missing``: :func:`_column_codes` for several codings in one
    call. Row by row (each coding's column of ``out`` written in order): one bisection of the
    value among every coding's cuts (``cuts``, sorted, distinct) gives the number of them below
    it, whose row of ``below`` holds every coding's code (:class:`MembersLayout`)."""
    n_cuts = cuts.shape[0]
    for r in range(values.shape[0]):
        if missing[r]:
            for i in range(targets.shape[0]):
                out[r, targets[i]] = missing_codes[i]
            continue
        v = values[r]
        if v != v:
            rank = n_cuts
        else:
            a = 0
            b = n_cuts
            while a < b:  # the first cut >= v
                mid = (a + b) >> 1
                if cuts[mid] < v:
                    a = mid + 1
                else:
                    b = mid
            rank = a
        for i in range(targets.shape[0]):
            out[r, targets[i]] = below[rank, i]


def code_members(encoders: Sequence[TableEncoder], X: Any,
                 layout: MembersLayout | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``X`` coded for several encoders at once (an ensemble's members), each distinct column
    coding once: ``codes`` of shape (n_rows, n_distinct), int32 in Fortran order, and
    ``columns`` of shape (n_encoders, n_attributes), where member ``e``'s column ``j`` is
    ``codes[:, columns[e, j]]`` -- exactly ``encoders[e].transform(X)[:, j]``. ``layout``:
    :func:`members_layout` of ``encoders``, when the caller keeps it."""
    frame, _ = as_frame(X)
    layout = members_layout(encoders) if layout is None else layout
    if frame.shape[1] != layout.n_attributes:
        raise ValueError(f"X has {frame.shape[1]} columns, but the encoder was fitted with "
                         f"{layout.n_attributes}")
    frame = encoders[0].declare_missing(frame)  # the members share the model's policy
    errors = encoders[0].errors
    parsed = _columns_parsed(frame)
    check_cell_types(frame, [parsed[j].array for j in range(frame.shape[1])])
    # column by column: each column is written, and the members' kernel reads it, as one run;
    # 32-bit (a code is below a column's number of values): half the bytes of a prediction's
    # largest array
    codes = np.empty((frame.shape[0], layout.n_codes), dtype=np.int32, order="F")
    try:
        categorical = []  # (destination, the column's categorical codes, its lookup)
        for d, j, coding in layout.nominal:
            entry = _entry(frame, j, parsed)
            if isinstance(entry.array, pd.Categorical):
                categorical.append((d, entry.array.codes, layout.categories_lookup(
                    d, coding, entry.array.dtype)))
            else:
                codes[:, d] = _nominal_column_codes(frame, j, coding, parsed)
        _categorical_columns_codes(categorical, codes)
        for j, coding, cuts, below, missing_codes, targets in layout.numeric:
            values, missing = _numeric_column(frame, j, coding, parsed, errors)
            _interval_codes(values, missing, cuts, below, missing_codes, targets, codes)
    except TypeError:
        raise_unhashable_cell(frame)
        raise
    return codes, layout.columns


def _jsonable_spec(spec: Any) -> Any:
    if isinstance(spec, str) or spec is None:
        return spec
    if isinstance(spec, Sequence | np.ndarray):
        return [python_scalar(v) for v in spec]
    return str(spec)
