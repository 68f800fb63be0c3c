"""Column types: what each column of a table is, decided once.

:func:`type_columns` reads a table once and returns a :class:`ColumnTypes`, one
:class:`ColumnType` a column: its kind, whether it is left out and why, the declared tokens read
as missing in it, the stray tokens found in it. The encoder codes the table from that record and
the fit's warnings are said from it (:meth:`ColumnTypes.say_excluded`, :func:`stray_warning`);
:func:`~fastpath.io.read_table`, the streamed fits and the prediction of files apply the same
rules, through the functions below. The rules, in the order they are applied:

**1. Declared missing values** (``na_values``, :func:`check_na_values`). A cell equal to one of
the tokens is missing: a text cell equal to a token, a categorical cell whose category reads as
one (the category is dropped, observed or only declared), a number equal to a token that is a
number (``"-999"`` matches ``-999.0``), as ``pandas.read_csv(na_values=...)`` reads a file
(:func:`declared_missing`, :func:`declare_missing`). When fitting, a text column that is all
numbers once its tokens are missing becomes numbers (``float64``), as ``pandas.read_csv`` with
``na_values`` would have read it, so the type does not depend on whether the tokens were declared
to the reader or to the model -- unless ``categorical_features`` lists it: its values are then
labels, kept as the text that new rows bring too (and that a streamed fit reads).

**2. Nominal or numeric** (:func:`is_nominal`, :func:`nominal_mask`). A column is **numeric**
when its dtype is a number (:func:`is_numeric_dtype`; a bool is not), or when it is text
(:func:`is_text_dtype`) of which at least :data:`NUMERIC_SHARE` (95 %) of the non-missing values
are numbers and some are not (rule 3). Every other column is **nominal**: strings, booleans,
pandas categoricals, object arrays, and a text column that is all numbers or less than 95 %
numbers. ``categorical_features`` (``"auto"``, or names, positions or a boolean mask,
:func:`listed_mask`) makes the columns it lists nominal *in addition*; it never makes a column
numeric, but under a list an unlisted bool column is coded as the numbers 0/1.

**3. Stray tokens** (:func:`stray_tokens`). The values of a numeric text column that are not
numbers (such as ``"?"``: a bool inside a text column is not a number either) are missing
values, with a ``DataWarning`` naming the column, the tokens and their counts
(:func:`stray_message`); they are remembered, and are missing when new rows are coded too. Any
other non-number met later in a numeric column is missing with a warning, or an error naming
the column, the value and its row under ``numeric_errors="raise"`` (:func:`numeric_values`),
which also refuses stray tokens when fitting.

**4. Identifiers and dates** (``exclude_features``, :func:`check_exclude_features`,
:func:`excluded_columns`). A nominal column whose values are nearly all distinct (a customer
id, an order number, a timestamp read as text) lets a Bayesian network classifier memorise the
training rows: chosen as the parent of every attribute (its conditional mutual information with
any column is as large as that column's entropy), it splits every context into one row each,
and the model predicts its training labels with certainty while new rows, whose values it never
saw, get no benefit. A date carries its information in what a user derives from it (month,
weekday, age), not in its raw value, and its values keep changing between training and
deployment. So ``exclude_features="auto"`` (the default) leaves out:

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
and dates", names the most distinct ones). The fit warns once per column, naming it, the reason
and how to keep it; the exclusion is recorded in the model (``excluded_features_``) and applied
at predict time, where the column may hold anything. ``exclude_features=None`` keeps every
column (an identifier then draws a warning, :func:`identifier_message`); a list of names (or
positions) leaves out exactly those. Every column left out is an error.

**5. Cells no coding represents.** A column of complex numbers, or a cell that is neither a
number nor a label (a list, a dict, an array), is a ``ValueError`` naming the column (and the
row) (:func:`check_cell_types`, :func:`raise_unhashable_cell`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..utils._dtypes import column_arrays
from ..utils._warn import DataWarning, warn
from ._typed_table import NOMINAL, NUMERIC

#: a text column is numeric when at least this share of its non-missing values are numbers
NUMERIC_SHARE = 0.95

#: what a numeric column's non-numbers become: missing values, with a warning ("coerce", as
#: ``pandas.to_numeric(errors="coerce")``), or an error ("raise")
NUMERIC_ERRORS: tuple[str, ...] = ("coerce", "raise")

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


# ====================================================================== the record
@dataclass(frozen=True)
class ColumnType:
    """What the rules decided about one column (module doc).

    Attributes
    ----------
    name : str
    kind : {"nominal", "numeric"} or None
        Rule 2; ``None`` for a column left out before its kind was needed (its values are not
        read for nothing).
    excluded : str or None
        ``None`` when the column is kept; else the warning that says why it is left out (rule
        4; empty for a column ``exclude_features`` lists).
    na_tokens : tuple of str
        The declared ``na_values`` found in the column, read as missing (rule 1).
    stray_tokens : dict of str to int
        A numeric text column's values that are not numbers (as text), with their counts, most
        frequent first: read as missing (rule 3). Empty for every other column.
    """

    name: str
    kind: str | None
    excluded: str | None = None
    na_tokens: tuple[str, ...] = ()
    stray_tokens: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class ColumnTypes:
    """A table's columns typed (:func:`type_columns`): what the encoder codes and the fit's
    warnings read.

    Attributes
    ----------
    frame : pandas.DataFrame
        The table with the declared missing values missing (rule 1, as when fitting): what the
        encoder learns its codings from.
    columns : tuple of ColumnType
        One a column of ``frame``, in order.
    categorical_features : "auto", None, or a list
        ``categorical_features`` for these columns: as given, or, once columns are left out
        (:meth:`kept`), the mask of the kept columns it lists (positions would shift).
    """

    frame: pd.DataFrame
    columns: tuple[ColumnType, ...]
    categorical_features: Any = "auto"

    @property
    def nominal(self) -> np.ndarray:
        """Which columns are nominal."""
        return np.fromiter((c.kind == NOMINAL for c in self.columns), dtype=bool,
                           count=len(self.columns))

    @property
    def excluded(self) -> dict[int, str]:
        """The positions of the columns left out, with their warnings."""
        return {j: c.excluded for j, c in enumerate(self.columns) if c.excluded is not None}

    def say_excluded(self) -> tuple[str, ...]:
        """:func:`say_excluded` of the columns left out: their names, each warned about once."""
        return say_excluded(self.excluded, [c.name for c in self.columns])

    def kept(self) -> ColumnTypes:
        """The record of the columns that are not left out."""
        excluded = self.excluded
        if not excluded:
            return self
        kept = [j for j in range(len(self.columns)) if j not in excluded]
        spec = self.categorical_features
        listed = listed_mask(spec, list(self.frame.columns))
        if listed is not None:
            spec = [bool(listed[j]) for j in kept]
        return ColumnTypes(self.frame.iloc[:, kept], tuple(self.columns[j] for j in kept), spec)


def type_columns(frame: pd.DataFrame, categorical_features: Any = "auto", *,
                 na_values: tuple[str, ...] = (), exclude_features: Any = None) -> ColumnTypes:
    """The :class:`ColumnTypes` of ``frame`` (a DataFrame whose column names are strings):
    rules 1-4 of the module doc, the table read once. ``na_values``: checked tokens
    (:func:`check_na_values`); ``exclude_features``: checked (:func:`check_exclude_features`;
    ``None`` leaves nothing out). Errors name the parameter, or the column and the row of a
    cell that is no label (rule 5; the encoder checks the kept columns' dtypes,
    :func:`check_cell_types`); nothing is said here (:meth:`ColumnTypes.say_excluded` warns)."""
    try:
        names = list(frame.columns)
        listed = listed_mask(categorical_features, names)
        declared, found = _declared(frame, na_values, fitting=True, keep_text=listed)
        dtypes = declared.dtypes.tolist()
        kinds: dict[int, bool] = {}
        strays: dict[int, dict[str, int]] = {}

        def nominal(j: int) -> bool:  # each column's values parsed once (rule 3)
            if j not in kinds:
                kinds[j] = is_nominal(declared, j, dtypes[j], listed, strays)
            return kinds[j]

        excluded = excluded_columns(declared, nominal, exclude_features)
        # a column left out keeps the kind it was given on the way, if any: its values are
        # never parsed for nothing (a column listed in exclude_features may hold anything)
        columns = tuple(
            ColumnType(str(name), None if j in excluded and j not in kinds
                       else NOMINAL if nominal(j) else NUMERIC,
                       excluded.get(j), found.get(j, ()), strays.get(j, {}))
            for j, name in enumerate(names))
    except TypeError:  # e.g. a list in a cell: name the column and the row
        raise_unhashable_cell(frame)
        raise
    return ColumnTypes(declared, columns, categorical_features)


# ====================================================================== rule 1: na_values
def check_na_values(na_values: Any) -> tuple[str, ...]:
    """``na_values`` (None, one token or a sequence of tokens) as a tuple of strings;
    ``ValueError`` naming the parameter for anything else."""
    if na_values is None:
        return ()
    if isinstance(na_values, str):
        return (na_values,)
    try:
        tokens = tuple(na_values)
    except TypeError:
        raise ValueError(f"na_values must be None, a string or a list of strings, got "
                         f"{na_values!r}") from None
    bad = [t for t in tokens if not isinstance(t, str)]
    if bad:
        raise ValueError(f"na_values must hold strings (the tokens read as missing), got "
                         f"{bad[0]!r}")
    return tuple(dict.fromkeys(tokens))


def declared_missing(s: pd.Series, tokens: tuple[str, ...]) -> np.ndarray | None:
    """Which cells of ``s`` are one of the declared missing-value ``tokens`` (``None`` when
    none is): a text cell equal to a token, a categorical cell whose category reads as one,
    a number equal to a token that is a number (``"-999"`` matches ``-999.0``), as
    ``pandas.read_csv(na_values=...)`` reads a file."""
    if not tokens or pd.api.types.is_bool_dtype(s.dtype):
        return None
    numbers = pd.to_numeric(pd.Series(tokens, dtype=object), errors="coerce").dropna()
    if isinstance(s.dtype, pd.CategoricalDtype):
        cats = s.cat.categories
        hit = np.asarray([str(c) in tokens for c in cats], dtype=bool)
        if len(numbers) and is_numeric_dtype(cats.dtype):
            hit |= np.isin(cats.to_numpy(dtype=np.float64), numbers.to_numpy(dtype=np.float64))
        if not hit.any():
            return None
        codes = s.cat.codes.to_numpy()
        mask = np.zeros(len(s), dtype=bool)
        present = codes >= 0
        mask[present] = hit[codes[present]]
    elif is_numeric_dtype(s.dtype):
        if not len(numbers):
            return None
        mask = np.isin(s.to_numpy(dtype=np.float64, na_value=np.nan),
                       numbers.to_numpy(dtype=np.float64))
    else:
        mask = s.isin(tokens).to_numpy(dtype=bool, na_value=False)
        if len(numbers) and s.dtype == object:  # numbers among the text: 3 matches "3"
            values = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64,
                                                               na_value=np.nan)
            # a new array: pandas may hand out the isin mask read-only
            mask = mask | np.isin(values, numbers.to_numpy(dtype=np.float64))
    return mask if mask.any() else None


def declare_missing(frame: pd.DataFrame, na_values: tuple[str, ...], *,
                    fitting: bool = False) -> pd.DataFrame:
    """``frame`` with the cells that are one of ``na_values`` missing (:func:`declared_missing`):
    a new frame sharing the untouched columns, ``frame`` itself when no cell is one.
    ``fitting``: a text column that is all numbers once its tokens are missing becomes numbers
    (``float64``, rule 1)."""
    return _declared(frame, na_values, fitting=fitting, found=False)[0]


def _declared(frame: pd.DataFrame, na_values: tuple[str, ...], *, fitting: bool,
              found: bool = True, keep_text: np.ndarray | None = None,
              ) -> tuple[pd.DataFrame, dict[int, tuple[str, ...]]]:
    """:func:`declare_missing`, and (``found``) the tokens found in each column it changed;
    ``keep_text``: the columns (a mask) whose text stays text when fitting (rule 1)."""
    tokens: dict[int, tuple[str, ...]] = {}
    if not na_values:
        return frame, tokens
    changed: dict[int, pd.Series] = {}
    for j in range(frame.shape[1]):
        col = frame.iloc[:, j]
        mask = declared_missing(col, na_values)
        if mask is None:
            continue
        if found:
            tokens[j] = _tokens_in(col[mask], na_values)
        if isinstance(col.dtype, pd.CategoricalDtype):
            # every category that reads as a token, observed or only declared
            cats = col.cat.categories
            hit = declared_missing(pd.Series(cats, dtype=cats.dtype), na_values)
            col = col.cat.remove_categories([] if hit is None else list(cats[hit]))
        elif is_numeric_dtype(col.dtype):
            col = col.astype(np.float64).mask(mask)
        else:
            col = col.mask(mask)
            if (fitting and is_text_dtype(col.dtype)
                    and not (keep_text is not None and keep_text[j])):
                _, stray = parse_numbers(col)
                if not stray.any():
                    col = pd.Series(pd.to_numeric(col).to_numpy(dtype=np.float64,
                                                                 na_value=np.nan),
                                    index=col.index, name=col.name)
        changed[j] = col
    if not changed:
        return frame, tokens
    out = frame.copy(deep=False)
    for j, col in changed.items():
        out.isetitem(j, col)
    return out, tokens


def _tokens_in(cells: pd.Series, na_values: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``na_values`` the ``cells`` (those :func:`declared_missing` marks) are."""
    uniques = list(pd.unique(np.asarray(cells, dtype=object)))
    texts = {str(v) for v in uniques}
    numbers = set(pd.to_numeric(pd.Series(uniques, dtype=object), errors="coerce").dropna())
    as_numbers = pd.to_numeric(pd.Series(na_values, dtype=object), errors="coerce")
    return tuple(t for t, v in zip(na_values, as_numbers, strict=True)
                 if t in texts or (not np.isnan(v) and v in numbers))


# ====================================================================== rule 2: the kind
def is_numeric_dtype(dtype: Any) -> bool:
    """Numbers (bools excluded: a bool column is nominal)."""
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def is_text_dtype(dtype: Any) -> bool:
    """Object or string columns (not categoricals, not bools): those :func:`stray_tokens` reads."""
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return False
    return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)


def listed_mask(spec: Any, names: Sequence[Any]) -> np.ndarray | None:
    """The columns ``categorical_features=spec`` lists among ``names`` (``None`` for
    ``"auto"``/``None``); ``ValueError`` naming the parameter and the item otherwise."""
    if spec is None or (isinstance(spec, str) and spec == "auto"):
        return None
    names = list(names)
    items = list(spec)
    if len(items) == len(names) and all(isinstance(b, bool | np.bool_) for b in items):
        return np.asarray(items, dtype=bool)
    mask = np.zeros(len(names), dtype=bool)
    for item in items:
        if isinstance(item, str):
            if item not in names:
                raise ValueError(
                    f"categorical_features names column {item!r}, which is not in the data"
                )
            mask[names.index(item)] = True
        elif isinstance(item, int | np.integer) and not isinstance(item, bool):
            if not -len(names) <= item < len(names):
                raise ValueError(f"categorical_features index {item} is out of range")
            mask[item] = True
        else:
            raise ValueError(
                "categorical_features must be 'auto', a boolean mask, or column names/indices;"
                f" got item {item!r}"
            )
    return mask


def is_nominal(frame: pd.DataFrame, j: int, dtype: Any, listed: np.ndarray | None,
               strays: dict[int, dict[str, int]] | None = None) -> bool:
    """Whether column ``j`` (of ``dtype``) of ``frame`` is nominal (rule 2), ``listed`` being
    :func:`listed_mask`: only a text column's values are read (each read builds a pandas
    Series, dear next to a small batch's coding, and rule 3 parses them); ``strays`` receives
    the stray tokens of a text column read as numbers."""
    if listed is not None and listed[j]:
        return True
    if listed is not None and pd.api.types.is_bool_dtype(dtype):
        return False  # a list makes an unlisted bool column numeric (0/1)
    if is_numeric_dtype(dtype) or not is_text_dtype(dtype):
        return not is_numeric_dtype(dtype)
    tokens = stray_tokens(frame.iloc[:, j])
    if tokens is not None and strays is not None:
        strays[j] = tokens
    return tokens is None


def nominal_mask(frame: pd.DataFrame, categorical_features: Any = "auto") -> np.ndarray:
    """Which columns of ``frame`` are nominal (rule 2; the declared missing values are the
    caller's to make missing first)."""
    listed = listed_mask(categorical_features, list(frame.columns))
    dtypes = frame.dtypes.tolist()
    return np.fromiter((is_nominal(frame, j, dtypes[j], listed) for j in range(len(dtypes))),
                       dtype=bool, count=len(dtypes))


# ====================================================================== rule 3: stray tokens
def check_numeric_errors(numeric_errors: Any) -> str:
    """``numeric_errors`` checked (``ValueError`` naming the parameter)."""
    if not (isinstance(numeric_errors, str) and numeric_errors in NUMERIC_ERRORS):
        raise ValueError(f"numeric_errors must be one of {NUMERIC_ERRORS}, got "
                         f"{numeric_errors!r}")
    return numeric_errors


def parse_numbers(s: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """``(values, stray)``: float64 values of ``s`` (NaN where missing or not a number) and which
    non-missing values are not numbers (a bool inside a text column is not a number)."""
    if is_numeric_dtype(s.dtype) or pd.api.types.is_bool_dtype(s.dtype):
        values = s.to_numpy(dtype=np.float64, na_value=np.nan)
        return values, np.zeros(len(values), dtype=bool)
    values = pd.to_numeric(s, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan,
                                                        copy=True)
    present = ~pd.isna(s).to_numpy()
    stray = present & np.isnan(values)
    if s.dtype == object:
        bools = np.fromiter((isinstance(v, bool | np.bool_) for v in s.to_numpy()), dtype=bool,
                            count=len(s))
        if bools.any():
            stray |= bools
            values[bools] = np.nan
    return values, stray


def stray_tokens(s: pd.Series) -> dict[str, int] | None:
    """The policy for a text column that is almost all numbers (rule 3).

    Returns the distinct values of ``s`` that are not numbers (as text) with their counts, most
    frequent first, when ``s`` is an object/string column whose non-missing values are at least
    :data:`NUMERIC_SHARE` numbers and not all numbers: such a column is numeric and those values
    are missing. Otherwise ``None``: the column keeps its type (a text column that is all numbers,
    or less than 95 % numbers, stays nominal).
    """
    if not is_text_dtype(s.dtype):
        return None
    _, stray = parse_numbers(s)
    n_stray = int(stray.sum())
    n_present = int((~pd.isna(s).to_numpy()).sum())
    if n_stray == 0 or n_present - n_stray < NUMERIC_SHARE * n_present:
        return None
    return count_tokens(s[stray])


def count_tokens(values: Iterable[Any]) -> dict[str, int]:
    """Distinct values as text with their counts, most frequent first (ties by text)."""
    counts = Counter(str(v) for v in values)
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def stray_message(name: Any, tokens: Mapping[str, int], n_values: int, remedy: str) -> str:
    """The warning for a column read as numbers although ``tokens`` are not numbers."""
    shown = ", ".join(f"{t!r} ({c}x)" for t, c in list(tokens.items())[:5])
    if len(tokens) > 5:
        shown += f" and {len(tokens) - 5} more"
    n_stray = sum(tokens.values())
    return (
        f"column {name!r} is read as numbers: {n_stray} of its {n_values} non-missing values "
        f"are not numbers ({shown}) and are treated as missing values (a column is numeric when "
        f"at least {NUMERIC_SHARE:.0%} of its values are numbers); {remedy}"
    )


def stray_warning(name: Any, tokens: Mapping[str, int], n_values: int) -> str:
    """:func:`stray_message` of a fit (in memory or streamed): its remedies are parameters."""
    return stray_message(
        name, tokens, n_values,
        f"declare them with na_values={list(tokens)[:5]!r} (hdpbn --na-values) to read them "
        "as missing without this warning, or list the column in categorical_features to keep "
        "it nominal")


def numeric_values(col: pd.Series, name: Any, known: tuple[str, ...] | None,
                   errors: str = "coerce") -> tuple[np.ndarray, np.ndarray]:
    """``(values, stray)`` of a numeric column: NaN where missing or a stray token (rule 3).

    ``known``: the tokens learned in training as missing (``None`` when fitting: any may).
    Another non-number is missing too, with one warning naming the column, the tokens and
    their counts, or with ``errors="raise"`` a ``ValueError`` naming the first one's row. An
    infinite value is a ``ValueError`` naming its row.
    """
    try:
        values, stray = parse_numbers(col)
    except (TypeError, ValueError) as exc:  # e.g. a list in a cell
        raise ValueError(f"column {name!r} is numeric but holds {exc}") from None
    if known is not None and stray.any():
        text = col[stray].astype(str).to_numpy()
        bad = ~np.isin(text, np.asarray(known, dtype=object))
        if bad.any() and errors == "raise":
            row = int(np.flatnonzero(stray)[np.flatnonzero(bad)[0]])
            allowed = (f" (only {list(known)} stood for missing values in training)"
                       if known else "")
            raise ValueError(
                f"column {name!r} was fitted as numeric but holds {col.iloc[row]!r} (row "
                f"{row}), which is not a number{allowed}, and numeric_errors='raise'; fix "
                "the value, make it NaN, or declare it with na_values when fitting"
            )
        if bad.any():
            tokens = count_tokens(text[bad])
            shown = ", ".join(f"{t!r} ({c}x)" for t, c in list(tokens.items())[:5])
            more = f" and {len(tokens) - 5} more" if len(tokens) > 5 else ""
            n_bad = int(bad.sum())
            warn(
                f"column {name!r} was fitted as numeric, but {n_bad} of these {len(col)} "
                f"values {'is not a number' if n_bad == 1 else 'are not numbers'} "
                f"({shown}{more}): read as missing values; declare such tokens with "
                "na_values when fitting (hdpbn --na-values) to silence this, or pass "
                "numeric_errors='raise' to refuse them",
                DataWarning)
    if np.isinf(values).any():
        row = int(np.flatnonzero(np.isinf(values))[0])
        raise ValueError(
            f"column {name!r} contains {values[row]} (row {row}); infinite values are not "
            "allowed: use NaN for a missing value or a finite number"
        )
    return values, stray


# ====================================================================== rule 4: exclusion
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


def date_message(name: Any) -> str:
    return (f"column {name!r} holds dates: it is left out of the model (derive what matters "
            "from it, e.g. the month or an age, as columns of their own); to keep it, pass "
            "exclude_features=None (hdpbn fit --exclude none) or a list of the columns to "
            "leave out")


def is_identifier(n_distinct: int, n_present: int) -> bool:
    return n_present >= IDENTIFIER_MIN_ROWS and n_distinct >= IDENTIFIER_SHARE * n_present


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
    """The columns of ``frame`` a fit leaves out under ``exclude_features=spec`` (rule 4), by
    position, with the warning to give (empty for a column the user listed; nothing for
    ``spec=None``). ``is_nominal(j)``: whether column ``j`` is nominal (rule 2), asked only of
    a column of other than categorical or date dtype whose values are nearly all distinct.
    Reads each column's array without a Series (a Series per column is a fixed cost that a fit
    of a wide table of few rows would pay for every column)."""
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


# ====================================================================== rule 5: cells
def check_cell_types(frame: pd.DataFrame, arrays: Sequence | None = None) -> None:
    """Refuse column types no coding can represent faithfully (complex numbers). ``arrays``:
    the frame's columns (:func:`~fastpath.utils._dtypes.column_arrays`), when the caller has
    read them."""
    dtypes = (frame.dtypes.tolist() if arrays is None else [a.dtype for a in arrays])
    for j, dtype in enumerate(dtypes):
        if (dtype.kind == "c" if isinstance(dtype, np.dtype)
                else not isinstance(dtype, pd.CategoricalDtype)
                and pd.api.types.is_complex_dtype(dtype)):
            raise ValueError(f"column {frame.columns[j]!r} holds complex numbers; a column "
                             "must hold real numbers or category labels")


def raise_unhashable_cell(frame: pd.DataFrame) -> None:
    """After a ``TypeError``: raise a ``ValueError`` naming the first cell that is no label (a
    list, a dict, an array), if there is one (only then is the cost of the scan paid)."""
    for name in frame.columns:
        col = frame[name]
        if col.dtype != object:
            continue
        for row, value in enumerate(col.to_numpy()):
            try:
                hash(value)
            except TypeError:
                raise ValueError(
                    f"column {name!r}, row {row}: a {type(value).__name__} ({value!r:.40}) is "
                    "neither a number nor a category label"
                ) from None
