"""Columns a model leaves out by default: identifiers and dates.

A nominal column whose values are nearly all distinct (a customer id, an order number, a
timestamp read as text) lets a Bayesian network classifier memorise the training rows: chosen
as the parent of every attribute (its conditional mutual information with any column is as
large as that column's entropy), it splits every context into one row each, and the model
predicts its training labels with certainty while new rows, whose values it never saw, get no
benefit. A date carries its information in what a user derives from it (month, weekday,
age), not in its raw value, and its values keep changing between training and deployment.
So ``exclude_features="auto"`` (the default) leaves out:

* an **identifier**: a nominal column with at least :data:`IDENTIFIER_MIN_ROWS` non-missing
  values of which at least :data:`IDENTIFIER_SHARE` (95 %) are distinct (counted on the rows
  seen in training, never on a categorical's declared categories);
* a **date**: a column of datetime, timedelta or period dtype, or a text column whose values
  all read as dates (``2024-01-31``, ``2024-01-31T12:00:00``, ``31/01/2024``: see
  :data:`DATE_PATTERN`).

The fit warns once per column, naming it, the reason and how to keep it; the exclusion is
recorded in the model (``excluded_features_``) and applied at predict time, where the column
may hold anything. ``exclude_features=None`` keeps every column (an identifier then draws the
old warning); a list of names (or positions) leaves out exactly those.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from ..utils._dtypes import column_arrays, is_text_dtype
from ..utils._warn import warn

#: an identifier has at least this share of distinct values among its non-missing ones
IDENTIFIER_SHARE = 0.95
#: and at least this many non-missing values (fewer rows cannot tell an identifier)
IDENTIFIER_MIN_ROWS = 20
#: a text value that reads as a date: ISO 8601 (date, optional time and zone) or d/m/yyyy
DATE_PATTERN = re.compile(
    r"\d{4}-\d{1,2}-\d{1,2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
    r"|\d{1,2}/\d{1,2}/\d{4}"
)


def check_exclude_features(spec: Any) -> Any:
    """``exclude_features`` checked: ``"auto"``, ``None`` or a tuple of column names or
    positions (``ValueError`` naming the parameter otherwise)."""
    if spec is None or (isinstance(spec, str) and spec == "auto"):
        return spec
    if isinstance(spec, str):
        raise ValueError(f"exclude_features must be 'auto', None or a list of columns, got "
                         f"{spec!r} (a single column: pass [{spec!r}])")
    try:
        items = tuple(spec)
    except TypeError:
        raise ValueError(f"exclude_features must be 'auto', None or a list of columns, got "
                         f"{spec!r}") from None
    for item in items:
        if not (isinstance(item, str)
                or (isinstance(item, int | np.integer) and not isinstance(item, bool))):
            raise ValueError(f"exclude_features lists column names or positions, got {item!r}")
    return items


def is_date_column(col: pd.Series, uniques: Any = None) -> bool:
    """Whether ``col`` holds dates: a datetime, timedelta or period dtype, or text whose
    distinct values (``uniques`` when the caller has them) all match :data:`DATE_PATTERN`."""
    dtype = col.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        if _is_date_dtype(dtype.categories.dtype):
            return True
        if uniques is None:
            codes = col.cat.codes.to_numpy()
            uniques = dtype.categories[np.unique(codes[codes >= 0])]
        return _reads_as_dates(uniques)
    if _is_date_dtype(dtype):
        return True
    if not (pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)):
        return False
    return _reads_as_dates(pd.unique(col.dropna()) if uniques is None else uniques)


def identifier_message(name: Any, n_distinct: int, n_present: int, excluded: bool) -> str:
    """The warning about an identifier-like column (left out, or kept by the user)."""
    what = (f"nominal column {name!r} has {n_distinct} distinct values in {n_present} "
            "non-missing rows (an identifier)")
    if excluded:
        return (f"{what}: it is left out of the model, as it would make the model memorise "
                "its training rows; to keep it, pass exclude_features=None (hdpbn fit "
                "--exclude none) or a list of the columns to leave out")
    return f"{what}; each value will be seen about once"


def date_message(name: Any) -> str:
    return (f"column {name!r} holds dates: it is left out of the model (derive what matters "
            "from it, e.g. the month or an age, as columns of their own); to keep it, pass "
            "exclude_features=None (hdpbn fit --exclude none) or a list of the columns to "
            "leave out")


def say_excluded(excluded: dict[int, str], names: Sequence[str]) -> tuple[str, ...]:
    """Warn about each left-out column (once) and return their names; ``ValueError`` when
    every column would be left out."""
    if len(excluded) == len(names):
        raise ValueError(
            f"every column is left out of the model ({list(names)}): identifiers and dates are "
            "left out by default; pass exclude_features=None to keep them")
    for message in excluded.values():
        if message:
            warn(message, UserWarning)
    return tuple(str(names[j]) for j in sorted(excluded))


def is_identifier(n_distinct: int, n_present: int) -> bool:
    return n_present >= IDENTIFIER_MIN_ROWS and n_distinct >= IDENTIFIER_SHARE * n_present


def listed_columns(spec: Sequence, names: Sequence[str]) -> dict[int, str]:
    """The positions ``exclude_features`` lists (names or positions) with their warning-free
    reason; ``ValueError`` naming a column that is not in the data."""
    out: dict[int, str] = {}
    for item in spec:
        if isinstance(item, str):
            if item not in names:
                raise ValueError(f"exclude_features names column {item!r}, which is not in "
                                 "the data")
            out[names.index(item)] = ""
        else:
            if not -len(names) <= item < len(names):
                raise ValueError(f"exclude_features position {item} is out of range for "
                                 f"{len(names)} columns")
            out[int(item) % len(names)] = ""
    return out


def excluded_columns(frame: pd.DataFrame, is_nominal: Callable[[int], bool],
                     spec: Any) -> dict[int, str]:
    """The columns of ``frame`` a fit leaves out under ``exclude_features=spec`` (module
    doc), by position, with the warning to give (empty for a column the user listed; nothing
    for ``spec=None``). ``is_nominal(j)``: whether column ``j`` is nominal
    (:meth:`TableEncoder.is_nominal`), asked only of a column of other than categorical or date
    dtype whose values are nearly all distinct (a text column's answer parses its values, which
    the fit does again). Reads each column's array without a Series (a few microseconds a
    column: a fit of a wide table of few rows pays this for every column)."""
    names = [str(c) for c in frame.columns]
    if spec is None:
        return {}
    if not isinstance(spec, str):
        return listed_columns(spec, names)
    out: dict[int, str] = {}
    for j, array in enumerate(column_arrays(frame)):
        dtype = array.dtype
        if isinstance(array, pd.Categorical):
            codes = array.codes
            present = codes[codes >= 0]
            # one category read before them all (indexing categories costs ~0.2 ms a call)
            if _is_date_dtype(dtype.categories.dtype) or (
                    len(present) and _reads_as_dates([dtype.categories[present[0]]])
                    and _reads_as_dates(dtype.categories[np.unique(present)])):
                out[j] = date_message(names[j])
            elif len(dtype.categories) >= IDENTIFIER_SHARE * len(present):  # else it cannot be
                n_distinct = np.unique(present).size  # observed, never declared
                if is_identifier(n_distinct, len(present)):
                    out[j] = identifier_message(names[j], n_distinct, len(present), True)
        elif _is_date_dtype(dtype):
            out[j] = date_message(names[j])
        elif not pd.api.types.is_bool_dtype(dtype):
            text = is_text_dtype(dtype)
            if not text and not is_nominal(j):  # numbers: nominal only when listed (cheap)
                continue
            values = np.asarray(array, dtype=object)
            values = values[~pd.isna(values)]
            uniques = pd.unique(values)
            # text that reads as dates is never numbers, so it is nominal
            if _reads_as_dates(uniques):
                out[j] = date_message(names[j])
            elif is_identifier(len(uniques), len(values)) and (not text or is_nominal(j)):
                out[j] = identifier_message(names[j], len(uniques), len(values), True)
    return out


def _is_date_dtype(dtype: Any) -> bool:
    return (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype))


def _reads_as_dates(values: Any) -> bool:
    """Every one of ``values`` (distinct, non-missing) is text that reads as a date (the first
    one is tried alone: most columns fail there)."""
    if len(values) == 0:
        return False
    return all(isinstance(v, str) and DATE_PATTERN.fullmatch(v.strip()) for v in values)
