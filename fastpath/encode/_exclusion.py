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
* a **numeric identifier**: a numeric column of integers with at least
  :data:`NUMERIC_IDENTIFIER_MIN_ROWS` non-missing values of which at least
  :data:`IDENTIFIER_SHARE` are distinct (a customer number, a row number), the distinct values
  counted exactly up to :data:`DISTINCT_SKETCH` of them and estimated beyond (the
  :func:`distinct_sketch` of the ``DISTINCT_SKETCH`` smallest hashes of the values, the same in
  memory and in chunks);
* a **high-cardinality** nominal column: at least :data:`HIGH_CARDINALITY_MIN` distinct values
  with fewer than :data:`HIGH_CARDINALITY_ROWS` rows a value on average (a free-text field, a
  city among thousands, a numeric column whose stray tokens keep it nominal): as a parent it
  splits every context into cells of a few rows, and it is chosen as every attribute's parent,
  over-fitting (measured in docs/usage.md);
* a **date**: a column of datetime, timedelta or period dtype, or a text column whose values
  all read as dates (``2024-01-31``, ``2024-01-31T12:00:00``, ``2024/01/31 12:00:00``,
  ``31/01/2024``, ``31.01.2024``, ``Jan 31, 2024``, ``31 January 2024``: see
  :data:`DATE_PATTERN`).

The thresholds are set so that no attribute of the 41 datasets of the experiments
(docs/validation.md) is left out, on all their rows or on the half a 2-fold cross-validation
trains on: genuine attributes of those tables stay clear of them (docs/usage.md, "Identifiers
and dates", names the most distinct ones).

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
from ..utils._warn import DataWarning, warn

#: an identifier has at least this share of distinct values among its non-missing ones
IDENTIFIER_SHARE = 0.95
#: and at least this many non-missing values (fewer rows cannot tell an identifier)
IDENTIFIER_MIN_ROWS = 20
#: a numeric identifier has at least this many non-missing values (fewer: a genuine integer
#: attribute of a small table may be nearly all distinct; docs/usage.md, "Identifiers and
#: dates", has an example)
NUMERIC_IDENTIFIER_MIN_ROWS = 1000
#: a nominal column with at least this many distinct values ...
HIGH_CARDINALITY_MIN = 500
#: ... and fewer than this many rows a value on average is left out
HIGH_CARDINALITY_ROWS = 20
#: the distinct values of a numeric column are counted exactly up to this many
DISTINCT_SKETCH = 4096

_MONTH = (r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
          r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?")
_TIME = r"(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:\s?[ap]m)?(?:Z|\s?[+-]\d{2}:?\d{2})?)?"
#: a text value that reads as a date, with an optional time: ISO 8601 (``2024-01-31``,
#: ``2024-01-31T12:00:00Z``), ``2024/01/31``, ``31/01/2024``, ``31-01-2024``, ``31.01.2024``,
#: ``Jan 31, 2024``, ``31 Jan 2024``, ``January 31 2024`` (case-insensitive)
DATE_PATTERN = re.compile(
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[-/.]\d{1,2}[-/.]\d{4}"
    rf"|{_MONTH}\s\d{{1,2}}(?:st|nd|rd|th)?,?\s\d{{4}}"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s{_MONTH},?\s\d{{4}})"
    + _TIME,
    re.IGNORECASE,
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


def numeric_identifier_message(name: Any, n_distinct: int, n_present: int) -> str:
    """The warning about a numeric column of integers that are nearly all distinct."""
    about = "about " if n_distinct >= DISTINCT_SKETCH else ""  # estimated beyond the sketch
    return (f"numeric column {name!r} holds integers of which {about}{n_distinct} are "
            f"distinct in {n_present} non-missing rows (an identifier): it is left out of the "
            "model; to keep it, pass exclude_features=None (hdpbn fit --exclude none) or a "
            "list of the columns to leave out")


def high_cardinality_message(name: Any, n_distinct: int, n_present: int,
                             numbers: float = 0.0) -> str:
    """The warning about a nominal column of many values, each in a few rows."""
    text = (f"nominal column {name!r} has {n_distinct} distinct values in {n_present} "
            f"non-missing rows (about {n_present / n_distinct:.1f} rows a value): it is left out "
            "of the model, as it would be chosen as the parent of every attribute and split "
            "every context into cells of a few rows (over-fitting); group its rare values, or "
            "to keep it pass exclude_features=None (hdpbn fit --exclude none) or a list of the "
            "columns to leave out")
    if numbers >= 0.5:  # rounded down: never "100 %" while a token is not a number
        text += (f"; {int(numbers * 100)}% of its distinct values are numbers: declare its "
                 "other tokens missing (na_values, hdpbn --na-values) to read it as numeric")
    return text


def is_high_cardinality(n_distinct: int, n_present: int) -> bool:
    return (n_distinct >= HIGH_CARDINALITY_MIN
            and n_present < HIGH_CARDINALITY_ROWS * n_distinct)


def distinct_sketch(values: np.ndarray, sketch: np.ndarray | None = None) -> np.ndarray:
    """The :data:`DISTINCT_SKETCH` smallest 64-bit hashes of the distinct finite ``values``
    (merged with ``sketch``, another one's): the same for a column whole or in chunks, in any
    order. :func:`estimated_distinct` reads the number of distinct values from it."""
    x = np.ascontiguousarray(np.asarray(values, dtype=np.float64) + 0.0)  # -0.0 is 0.0
    z = x.view(np.uint64) + np.uint64(0x9E3779B97F4A7C15)  # splitmix64's finaliser
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    z = z ^ (z >> np.uint64(31))
    if sketch is not None:
        z = np.concatenate([z, sketch])
    return np.unique(z)[:DISTINCT_SKETCH]


def estimated_distinct(sketch: np.ndarray) -> int:
    """The number of distinct values a :func:`distinct_sketch` holds: exact below
    :data:`DISTINCT_SKETCH`, else the k-minimum-values estimate (relative error about 1.6 %)."""
    if len(sketch) < DISTINCT_SKETCH:
        return len(sketch)
    return round((DISTINCT_SKETCH - 1) / ((float(sketch[-1]) + 1.0) / 2.0 ** 64))


def is_numeric_identifier(n_distinct: int, n_present: int) -> bool:
    """Whether an integer column of ``n_present`` values, ``n_distinct`` of them distinct, is
    left out as an identifier."""
    return (n_present >= NUMERIC_IDENTIFIER_MIN_ROWS
            and n_distinct >= IDENTIFIER_SHARE * n_present)


def numeric_exclusion(name: Any, values: np.ndarray) -> str | None:
    """The warning for a numeric column (its non-missing values) the auto rule leaves out as
    an identifier, or None."""
    values = np.asarray(values, dtype=np.float64)
    values = values[np.isfinite(values)]
    if len(values) < NUMERIC_IDENTIFIER_MIN_ROWS or not np.all(values == np.round(values)):
        return None
    n_distinct = estimated_distinct(distinct_sketch(values))
    if is_numeric_identifier(n_distinct, len(values)):
        return numeric_identifier_message(name, n_distinct, len(values))
    return None


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
            warn(message, DataWarning)
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
    the fit does again). Reads each column's array without a Series (a Series per column is
    a fixed cost that a fit of a wide table of few rows would pay for every column)."""
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
            # one category read before them all (indexing the categories is the dear part,
            # and one category that is not a date settles the column)
            if _is_date_dtype(dtype.categories.dtype) or (
                    len(present) and _reads_as_dates([dtype.categories[present[0]]])
                    and _reads_as_dates(dtype.categories[np.unique(present)])):
                out[j] = date_message(names[j])
            elif len(dtype.categories) >= min(IDENTIFIER_SHARE * len(present),
                                              HIGH_CARDINALITY_MIN):  # else it cannot be
                n_distinct = np.unique(present).size  # observed, never declared
                if is_identifier(n_distinct, len(present)):
                    out[j] = identifier_message(names[j], n_distinct, len(present), True)
                elif is_high_cardinality(n_distinct, len(present)):
                    out[j] = high_cardinality_message(
                        names[j], n_distinct, len(present),
                        number_share(dtype.categories[np.unique(present)]))
        elif _is_date_dtype(dtype):
            out[j] = date_message(names[j])
        elif not pd.api.types.is_bool_dtype(dtype):
            text = is_text_dtype(dtype)
            if not text and not is_nominal(j):  # numbers: identifiers only (integers)
                if len(array) >= NUMERIC_IDENTIFIER_MIN_ROWS:
                    message = numeric_exclusion(names[j], pd.Series(array).to_numpy(
                        dtype=np.float64, na_value=np.nan))
                    if message is not None:
                        out[j] = message
                continue
            values = np.asarray(array, dtype=object)
            values = values[~pd.isna(values)]
            uniques = pd.unique(values)
            # text that reads as dates is never numbers, so it is nominal
            if _reads_as_dates(uniques):
                out[j] = date_message(names[j])
            elif not text or is_nominal(j):
                if is_identifier(len(uniques), len(values)):
                    out[j] = identifier_message(names[j], len(uniques), len(values), True)
                elif is_high_cardinality(len(uniques), len(values)):
                    out[j] = high_cardinality_message(names[j], len(uniques), len(values),
                                                      number_share(uniques))
    return out


def number_share(uniques: Any) -> float:
    """The share of ``uniques`` (distinct values) that read as numbers."""
    if len(uniques) == 0:
        return 0.0
    numbers = pd.to_numeric(pd.Series(uniques, dtype=object).astype(str), errors="coerce")
    return float(numbers.notna().mean())


def _is_date_dtype(dtype: Any) -> bool:
    return (pd.api.types.is_datetime64_any_dtype(dtype) or pd.api.types.is_timedelta64_dtype(dtype)
            or isinstance(dtype, pd.PeriodDtype))


def _reads_as_dates(values: Any) -> bool:
    """Every one of ``values`` (distinct, non-missing) is text that reads as a date (the first
    one is tried alone: most columns fail there)."""
    if len(values) == 0:
        return False
    return all(isinstance(v, str) and DATE_PATTERN.fullmatch(v.strip()) for v in values)
