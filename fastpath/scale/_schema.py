"""Pass 1 of a fit out of core: the schema (columns, classes, categories, cut points).

Column types are fixed by the first chunk, by the rules of in-memory fits
(:func:`~fastpath.io._column_types.type_columns`, the declared ``na_values`` made missing): a
text column whose first chunk is at least 95 % numbers is numeric, and the values of a numeric
column that are not numbers (its *stray tokens*, such as ``"?"``), in any chunk, are missing
values; the one warning naming them, with their counts over the whole stream, comes at
the end of pass 1, as an in-memory fit of the same rows says it. With
``numeric_errors="raise"``, a non-number in a numeric column stops the fit with an error naming
the chunk, the row, the column and the value.

Also the coder that turns later chunks into integer codes with it, and
:func:`declare_schema`, a schema declared up front for ``partial_fit``.
"""

from __future__ import annotations

import collections.abc
import copy
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..encode._encoder import AttributeCoding, TableEncoder
from ..encode._sketch import DEFAULT_MAX_BINS, ClassHistogram
from ..io._column_types import (
    count_tokens,
    date_message,
    declare_missing,
    distinct_sketch,
    estimated_distinct,
    high_cardinality_message,
    identifier_message,
    is_date_column,
    is_high_cardinality,
    is_identifier,
    is_numeric_dtype,
    is_numeric_identifier,
    listed_columns,
    number_share,
    numeric_identifier_message,
    parse_numbers,
    stray_warning,
)
from ..utils._dtypes import python_scalar
from ..utils._validation import as_generator, check_labels
from ..utils._warn import DataWarning, warn
from ._errors import Where, check_columns, fail, first_true
from ._sources import target_name


def labels_of(y: pd.Series, where: Where, numeric: bool) -> tuple[np.ndarray, list]:
    """Per-row index into the chunk's distinct labels, and those labels (Python scalars).

    ``numeric``: the target was numeric in the first chunk, so every label must be a number.
    """
    missing = y.isna().to_numpy()
    if missing.any():
        row = first_true(missing)
        raise fail(
            where, y.name, row,
            f"the target has a missing value ({int(missing.sum())} in this chunk); drop those "
            "rows before fitting",
        )
    if numeric and not is_numeric_dtype(y.dtype):
        bad = (pd.to_numeric(y, errors="coerce").isna() & ~y.isna()).to_numpy()
        if bad.any():
            row = first_true(bad)
            raise fail(
                where, y.name, row,
                f"class label {y.iloc[row]!r} is not a number, but the target column held "
                "numbers in the first chunk (its type is fixed by the first chunk)",
            )
    if pd.api.types.is_float_dtype(y.dtype):
        v = y.to_numpy(dtype=float)
        bad = ~np.isfinite(v) | (np.mod(v, 1) != 0)
        if bad.any():
            row = first_true(bad)
            raise fail(
                where, y.name, row,
                f"class label {v[row]!r}: the target holds continuous or infinite values; a "
                "classifier needs class labels",
            )
    codes, uniques = pd.factorize(y, use_na_sentinel=True)
    return codes.astype(np.int64), [python_scalar(u) for u in list(uniques)]


def numeric_column(col: pd.Series, where: Where, known: tuple[str, ...] = (),
                   errors: str = "raise") -> tuple[np.ndarray, np.ndarray]:
    """``(values, stray)`` of a numeric column: float64 values (NaN = missing, or a stray
    token, which ``stray`` marks). ``errors="raise"``: only the ``known`` stray tokens may be
    missing, the first other non-number is named in an error; ``"coerce"``: any may."""
    stray = np.zeros(len(col), dtype=bool)
    if not is_numeric_dtype(col.dtype):
        values, stray = parse_numbers(col)
        bad = stray.copy() if errors == "raise" else np.zeros_like(stray)
        if known and stray.any() and errors == "raise":
            bad[stray] = ~np.isin(col[stray].astype(str).to_numpy(),
                                  np.asarray(known, dtype=object))
        if pd.api.types.is_bool_dtype(col.dtype) or bad.any():
            row = first_true(bad) if bad.any() else 0
            missing = f" (only {list(known)} are read as missing)" if known else ""
            raise fail(
                where, col.name, row,
                f"value {col.iloc[row]!r} is not a number, but the column is numeric{missing} "
                "and numeric_errors='raise' (column types are fixed by the first chunk: a CSV "
                "column whose first chunk is all numbers is read as numbers; list the column in "
                "categorical_features, declare the token with na_values, or fix the data)",
            )
    else:
        values = col.to_numpy(dtype=np.float64, na_value=np.nan)
    inf = np.isinf(values)
    if inf.any():
        row = first_true(inf)
        raise fail(
            where, col.name, row,
            f"value {values[row]} is infinite; use NaN for a missing value or a finite number",
        )
    return values, stray


class SchemaStats:
    """Pass 1: what the encoder and the class labels need, mergeable (chunks, partitions).

    Parameters
    ----------
    features : sequence of str
        Feature columns, in order.
    target : str
    nominal : array of bool
        Which features are nominal (the others are numeric).
    max_bins : int
        Bound of each numeric column's :class:`~fastpath.encode.ClassHistogram`.
    """

    def __init__(self, features, target, nominal, max_bins=DEFAULT_MAX_BINS) -> None:
        self.features = [str(c) for c in features]
        self.target = str(target)
        self.nominal = np.asarray(nominal, dtype=bool)
        self.n_rows = 0
        self.n_missing = np.zeros(len(self.features), dtype=np.int64)
        self.values: list[dict | None] = [{} if nom else None for nom in self.nominal]
        # declared categories of categorical chunks: None = none seen yet, False = not all
        # chunks are categorical with the same categories
        self.declared: list[Any] = [None] * len(self.features)
        self.hists = [None if nom else ClassHistogram(0, max_bins) for nom in self.nominal]
        self.labels: dict[Any, int] = {}
        self.lengths: dict[int, int] = {}
        self.target_numeric = False  # set from the first chunk (or the Dask meta)
        self.has_names = True  # the columns are strings (else feature_names_in_ is not set)
        # numeric columns: the stray tokens of the first chunk (missing values), and how often
        # each stray token occurred over the chunks
        self.known_tokens: list[tuple[str, ...]] = [() for _ in self.features]
        self.token_counts: list[dict[str, int]] = [{} for _ in self.features]
        # nominal columns: whether every chunk's values read as dates (None: no value yet)
        self.dates: list[bool | None] = [None if nom else False for nom in self.nominal]
        # numeric columns: whether every value is an integer, and the distinct_sketch of
        # their values while it is (a numeric identifier, io._column_types)
        self.integral: list[bool] = [not nom for nom in self.nominal]
        self.sketches: list[np.ndarray | None] = [None] * len(self.features)
        # the model's missing-value policy (TableEncoder's na_values and numeric_errors)
        self.na_values: tuple[str, ...] = ()
        self.numeric_errors = "coerce"

    def fresh(self) -> SchemaStats:
        """An empty copy with the same columns."""
        out = SchemaStats(self.features, self.target, self.nominal, DEFAULT_MAX_BINS)
        out.hists = [None if h is None else ClassHistogram(0, h.max_bins) for h in self.hists]
        out.has_names = self.has_names
        out.target_numeric = self.target_numeric
        out.known_tokens = list(self.known_tokens)
        out.na_values, out.numeric_errors = self.na_values, self.numeric_errors
        return out

    # ------------------------------------------------------------------ chunks
    def update(self, frame: pd.DataFrame, where: Where) -> SchemaStats:
        """Add a chunk (all feature columns and the target, any column order)."""
        frame = check_columns(frame, [*self.features, self.target], where)
        n = len(frame)
        self.lengths[where.index] = self.lengths.get(where.index, 0) + n
        if n == 0:
            return self
        frame = declare_missing(frame, self.na_values)
        local, uniques = labels_of(frame[self.target], where, self.target_numeric)
        ids = np.empty(len(uniques), dtype=np.int64)
        for i, u in enumerate(uniques):
            ids[i] = self.labels.setdefault(u, len(self.labels))
        y_ids = ids[local]
        for j, name in enumerate(self.features):
            col = frame[name]
            if self.nominal[j]:
                missing = col.isna().to_numpy()
                self.n_missing[j] += int(missing.sum())
                self._add_nominal(j, col, missing)
            else:
                values, stray = numeric_column(col, where, self.known_tokens[j],
                                               self.numeric_errors)
                if stray.any():
                    counts = self.token_counts[j]
                    for t, c in count_tokens(col[stray]).items():
                        counts[t] = counts.get(t, 0) + c
                finite = ~np.isnan(values)
                self.n_missing[j] += int(n - finite.sum())
                present = values[finite]
                self.hists[j].update(present, y_ids[finite])
                if self.integral[j]:
                    if np.all(present == np.round(present)):
                        self.sketches[j] = distinct_sketch(present, self.sketches[j])
                    else:
                        self.integral[j], self.sketches[j] = False, None
        self.n_rows += n
        return self

    def _add_nominal(self, j: int, col: pd.Series, missing: np.ndarray) -> None:
        seen = self.values[j]
        if isinstance(col.dtype, pd.CategoricalDtype):
            cats = tuple(python_scalar(c) for c in col.cat.categories)
            self._declare(j, cats)
            present = np.unique(col.cat.codes.to_numpy())
            present = present[present >= 0]
            for c in present:
                seen.setdefault(cats[c], None)
            uniques = [cats[c] for c in present]
        else:
            self.declared[j] = False
            uniques = pd.unique(col[~missing])
            for v in uniques:
                seen.setdefault(python_scalar(v), None)
        if self.dates[j] is not False and len(uniques):
            self.dates[j] = is_date_column(col, uniques)

    def excluded(self, spec: Any) -> dict[int, str]:
        """The features a fit leaves out under ``exclude_features=spec``
        (:func:`fastpath.io._column_types.excluded_columns` on every chunk's rows), by
        position, with their warnings."""
        if spec is None:
            return {}
        if not isinstance(spec, str):
            return listed_columns(spec, self.features)
        out: dict[int, str] = {}
        for j, name in enumerate(self.features):
            n_present = self.n_rows - int(self.n_missing[j])
            if not self.nominal[j]:
                sketch = self.sketches[j]
                if self.integral[j] and sketch is not None:
                    n_distinct = estimated_distinct(sketch)
                    if is_numeric_identifier(n_distinct, n_present):
                        out[j] = numeric_identifier_message(name, n_distinct, n_present)
                continue
            n_distinct = len(self.values[j])
            if self.dates[j]:
                out[j] = date_message(name)
            elif is_identifier(n_distinct, n_present):
                out[j] = identifier_message(name, n_distinct, n_present, True)
            elif is_high_cardinality(n_distinct, n_present):
                out[j] = high_cardinality_message(name, n_distinct, n_present,
                                                  number_share(list(self.values[j])))
        return out

    def _declare(self, j: int, cats: Any) -> None:
        cur = self.declared[j]
        if cur is None:
            self.declared[j] = cats
        elif cur is not False and (cats is False or cur != cats):
            self.declared[j] = False

    # ------------------------------------------------------------------ merge
    def merge(self, other: SchemaStats) -> SchemaStats:
        """Add another partial's statistics (same columns); returns self."""
        if other.features != self.features or other.target != self.target:
            raise ValueError("cannot merge statistics of different columns")
        mapping = np.asarray(
            [self.labels.setdefault(u, len(self.labels)) for u in other.labels], dtype=np.int64
        )
        for j in range(len(self.features)):
            if self.nominal[j]:
                for v in other.values[j]:
                    self.values[j].setdefault(v, None)
                if other.declared[j] is not None:
                    self._declare(j, other.declared[j])
                if other.dates[j] is not None and self.dates[j] is not False:
                    self.dates[j] = other.dates[j]
            else:
                theirs = copy.deepcopy(other.hists[j])
                theirs.grow(len(other.labels))
                theirs.remap_classes(mapping, len(self.labels))
                self.hists[j].merge(theirs)
                if self.integral[j] and other.integral[j]:
                    if other.sketches[j] is not None:
                        self.sketches[j] = distinct_sketch(np.empty(0), np.concatenate(
                            [other.sketches[j], self.sketches[j]]
                            if self.sketches[j] is not None else [other.sketches[j]]))
                else:
                    self.integral[j], self.sketches[j] = False, None
        for mine, theirs in zip(self.token_counts, other.token_counts, strict=True):
            for t, c in theirs.items():
                mine[t] = mine.get(t, 0) + c
        self.n_missing += other.n_missing
        self.n_rows += other.n_rows
        for k, v in other.lengths.items():
            self.lengths[k] = self.lengths.get(k, 0) + v
        return self

    # ------------------------------------------------------------------ result
    def classes(self) -> tuple[np.ndarray, np.ndarray]:
        """The sorted classes (as the in-memory fit sorts them) and, for each final class, its
        provisional index."""
        labels = list(self.labels)
        arr = pd.Series(labels).to_numpy() if labels else np.empty(0)
        classes, final_of_label = check_labels(arr, arr.shape[0])
        class_order = np.empty(classes.size, dtype=np.int64)
        class_order[final_of_label] = np.arange(len(labels))
        return classes, class_order

    def encoder(self, categorical_features: Any, class_order: np.ndarray, *,
                discretization: str = "mdl", random_state: Any = None,
                excluded: Any = ()) -> TableEncoder:
        """The encoder ``TableEncoder.fit`` would learn from all the rows (module doc), of the
        features but the ``excluded`` positions (:meth:`excluded`).

        ``discretization="stochastic"``: ESKDB's stochastic MDL cut points
        (:func:`~fastpath.encode.stochastic_mdl_cut_points_from_counts`), one draw from
        ``random_state`` per numeric column in column order, as ``TableEncoder.fit`` draws them;
        ``"random"``: cut points at random resolution, drawn the same way.
        """
        rng = (as_generator(random_state) if discretization in ("stochastic", "random")
               else None)
        codings = []
        n = self.n_rows
        kept = [j for j in range(len(self.features)) if j not in set(excluded)]
        for j in kept:
            name = self.features[j]
            n_missing = int(self.n_missing[j])
            if n_missing == n:
                warn(
                    f"column {name!r} is missing in every training row; it is kept as a "
                    "constant attribute that carries no information",
                    DataWarning)
                codings.append(AttributeCoding(name=name, kind="nominal", missing_code=0))
            elif self.nominal[j]:
                declared = self.declared[j]
                if declared not in (None, False):
                    categories = tuple(declared)
                else:
                    uniq = list(self.values[j])
                    try:
                        categories = tuple(sorted(uniq))
                    except TypeError:  # mixed types: order by their text
                        categories = tuple(sorted(uniq, key=str))
                n_present = len(categories)
                n_seen = len(self.values[j])  # observed, not declared
                if is_identifier(n_seen, n - n_missing):  # kept by exclude_features
                    warn(identifier_message(name, n_seen, n - n_missing, False), DataWarning)
                codings.append(
                    AttributeCoding(
                        name=name,
                        kind="nominal",
                        categories=categories,
                        missing_code=n_present if n_missing else None,
                    )
                )
            else:
                # every chunk's stray tokens, ordered as an in-memory fit orders them
                tokens = dict(sorted(self.token_counts[j].items(),
                                     key=lambda kv: (-kv[1], kv[0])))
                if tokens:
                    warn(stray_warning(name, tokens, n - n_missing + sum(tokens.values())),
                         DataWarning)
                hist = self.hists[j]
                hist.grow(len(self.labels))
                if rng is None:
                    cuts = hist.cut_points(class_order, name=name)
                elif discretization == "random":
                    cuts = hist.random_cut_points(rng)
                else:
                    cuts = hist.stochastic_cut_points(rng, class_order, name=name)
                codings.append(
                    AttributeCoding(
                        name=name,
                        kind="numeric",
                        cut_points=tuple(float(c) for c in cuts),
                        missing_code=len(cuts) + 1 if n_missing else None,
                        missing_tokens=tuple(tokens),
                    )
                )
        enc = TableEncoder(categorical_features, discretization=discretization,
                           random_state=random_state, na_values=self.na_values or None,
                           numeric_errors=self.numeric_errors)
        enc.codings_ = tuple(codings)
        enc.feature_names_ = tuple(self.features[j] for j in kept)
        return enc


# ====================================================================== passes 2-4: codes
class Coder:
    """Chunk -> (codes, class codes) with a fixed encoder; names what does not fit it."""

    def __init__(self, encoder: TableEncoder, target: str, classes: np.ndarray,
                 ignored: Sequence[str] = ()) -> None:
        self.encoder = encoder
        self.features = list(encoder.feature_names_)
        self.ignored = list(ignored)  # columns the fit left out: read past, never coded
        self.target = target
        self.classes = classes
        self._class_index = pd.Index(classes)

    def encode(self, frame: pd.DataFrame, where: Where) -> tuple[np.ndarray, np.ndarray]:
        frame = check_columns(frame, [*self.features, *self.ignored, self.target], where)
        X = frame[self.features]
        try:
            codes = self.encoder.transform(X)
        except ValueError as exc:
            raise fail(where, None, None, str(exc)) from None
        if codes.size and codes.min() < 0:
            r, j = np.argwhere(codes < 0)[0]
            value = X.iloc[int(r), int(j)]
            raise fail(
                where, self.features[j], int(r),
                f"value {value!r} was not in the data of the first pass (the source changed "
                "between passes?)",
            )
        y = frame[self.target]
        y_codes = self._class_index.get_indexer(y)
        if (y_codes < 0).any():
            r = first_true(y_codes < 0)
            raise fail(
                where, self.target, r,
                f"class label {y.iloc[r]!r} was not in the data of the first pass (the source "
                "changed between passes?)",
            )
        return codes, y_codes.astype(np.int64)


class MemberCoder:
    """Chunk -> (one code matrix per ensemble member, class codes): every member codes the
    rows with its own encoder (its own cut points) in the same pass."""

    def __init__(self, coders: Sequence[Coder]) -> None:
        self.coders = list(coders)

    def encode(self, frame: pd.DataFrame, where: Where) -> tuple[tuple[np.ndarray, ...],
                                                                 np.ndarray]:
        coded = [coder.encode(frame, where) for coder in self.coders]
        return tuple(codes for codes, _ in coded), coded[0][1]


def first_stats(frame: pd.DataFrame, y: Any, categorical_features: Any, max_bins: int,
                where: Where, *, na_values: Any = None,
                numeric_errors: str = "coerce") -> SchemaStats:
    names = [str(c) for c in frame.columns]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise fail(where, None, None, f"duplicated column names {dup}")
    target = target_name(y, names)
    features = [c for c in names if c != target]
    encoder = TableEncoder(categorical_features, na_values=na_values,
                           numeric_errors=numeric_errors)
    # the types of the first chunk, as an in-memory fit types its rows
    types = encoder.column_types(frame.set_axis(names, axis=1)[features])
    stats = SchemaStats(features, target, types.nominal, max_bins)
    stats.na_values, stats.numeric_errors = encoder.na_tokens, encoder.errors
    if stats.numeric_errors == "coerce":
        # a text column that is almost all numbers in the first chunk: its stray tokens
        stats.known_tokens = [tuple(c.stray_tokens) for c in types.columns]
    stats.has_names = all(isinstance(c, str) for c in frame.columns)
    stats.target_numeric = is_numeric_dtype(frame.iloc[:, names.index(target)].dtype)
    return stats


def declare_schema(columns: Mapping[str, Any], *, missing: bool | Sequence[str] = True,
                   categorical_features: Any = "auto") -> TableEncoder:
    """A fitted :class:`~fastpath.encode.TableEncoder` from declared categories/cut points.

    Parameters
    ----------
    columns : mapping column name -> declaration, in the column order of the data
        A sequence of categories (nominal column), or ``{"categories": [...]}``, or
        ``{"cut_points": [...]}`` (numeric column: sorted finite cut points, possibly empty;
        a value equal to a cut goes to the lower interval).
    missing : bool or sequence of str, default=True
        Reserve a code for a missing value in every column (True), none (False) or the listed
        columns.

    Returns
    -------
    TableEncoder
        Use it as ``partial_fit(..., schema=...)``.
    """
    if not isinstance(columns, Mapping) or not columns:
        raise ValueError("columns must be a non-empty mapping of column name -> declaration")
    with_missing = set(columns) if missing is True else set() if missing is False else set(
        missing
    )
    unknown = sorted(with_missing - set(columns))
    if unknown:
        raise ValueError(f"missing names columns that are not declared: {unknown}")
    codings = []
    for name, decl in columns.items():
        if isinstance(decl, Mapping):
            keys = set(decl)
            if keys == {"categories"}:
                decl = decl["categories"]
            elif keys == {"cut_points"}:
                cuts = np.asarray(decl["cut_points"], dtype=np.float64).ravel()
                if cuts.size and (not np.all(np.isfinite(cuts)) or np.any(np.diff(cuts) <= 0)):
                    raise ValueError(
                        f"column {name!r}: cut points must be finite and strictly increasing"
                    )
                codings.append(AttributeCoding(
                    name=str(name), kind="numeric", cut_points=tuple(float(c) for c in cuts),
                    missing_code=cuts.size + 1 if name in with_missing else None,
                ))
                continue
            else:
                raise ValueError(
                    f"column {name!r}: declare {{'categories': [...]}} or {{'cut_points': [...]}}"
                    f", got keys {sorted(map(str, keys))}"
                )
        if isinstance(decl, str) or not isinstance(decl, collections.abc.Iterable):
            raise ValueError(f"column {name!r}: categories must be a sequence, got {decl!r}")
        cats = tuple(python_scalar(c) for c in decl)
        if len(set(cats)) != len(cats):
            raise ValueError(f"column {name!r}: categories are not distinct")
        codings.append(AttributeCoding(
            name=str(name), kind="nominal", categories=cats,
            missing_code=len(cats) if name in with_missing else None,
        ))
    enc = TableEncoder(categorical_features)
    enc.codings_ = tuple(codings)
    enc.feature_names_ = tuple(str(c) for c in columns)
    return enc
