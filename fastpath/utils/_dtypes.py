"""Column types: which pandas dtypes are numbers, nominal columns as categoricals, plain labels.

Also the one rule, shared by :class:`~fastpath.encode.TableEncoder`, :func:`~fastpath.io.read_table`
and the streamed fits, for a text column that is *almost* all numbers
(:func:`stray_tokens`): when at least :data:`NUMERIC_SHARE` (95 %) of its non-missing values are
numbers and some are not, the column is numeric and the values that are not numbers (the *stray
tokens*, such as ``"?"``) are missing values, with a warning (:func:`stray_message`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

#: a text column is numeric when at least this share of its non-missing values are numbers
NUMERIC_SHARE = 0.95


def is_numeric_dtype(dtype: Any) -> bool:
    """Numbers (bools excluded: a bool column is nominal)."""
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


def is_text_dtype(dtype: Any) -> bool:
    """Object or string columns (not categoricals, not bools): those :func:`stray_tokens` reads."""
    if isinstance(dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(dtype):
        return False
    return pd.api.types.is_object_dtype(dtype) or pd.api.types.is_string_dtype(dtype)


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
    """The policy for a text column that is almost all numbers.

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


def stray_message(name: Any, tokens: dict[str, int], n_values: int, remedy: str) -> str:
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
            mask |= np.isin(values, numbers.to_numpy(dtype=np.float64))
    return mask if mask.any() else None


def to_float64(s: pd.Series) -> np.ndarray:
    """float64 values of a numeric column, NaN for a missing value."""
    return s.to_numpy(dtype=np.float64, na_value=np.nan)


def as_nominal(s: pd.Series) -> pd.Categorical:
    """A categorical with ``str`` categories; keeps an existing categorical's order."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        cat = s.array
        cats = cat.categories
        if cats.dtype == object or pd.api.types.is_string_dtype(cats.dtype):
            if all(isinstance(c, str) for c in cats):
                return pd.Categorical.from_codes(cat.codes, categories=pd.Index(list(cats)))
        strs = [str(c) for c in cats]
        if len(set(strs)) == len(strs):
            return pd.Categorical.from_codes(cat.codes, categories=pd.Index(strs))
        s = s.astype(object)
    values = s.to_numpy(dtype=object, na_value=None)
    mask = pd.isna(s).to_numpy()
    out = np.empty(len(values), dtype=object)
    out[:] = [
        None if m else (v if isinstance(v, str) else str(v))
        for v, m in zip(values, mask, strict=True)
    ]
    return pd.Categorical(out)


def python_scalar(v: Any) -> Any:
    """A label as a plain Python value (JSON-serialisable where possible)."""
    if isinstance(v, np.generic):
        return v.item()
    return v


def duplicates(names: Iterable[str]) -> list[str]:
    """Names that occur more than once, in order of first occurrence."""
    counts = Counter(names)
    return [n for n, c in counts.items() if c > 1]


def column_arrays(frame: pd.DataFrame) -> list:
    """Every column's values (numpy array or pandas extension array), as ``col.array`` would
    give them, without a Series per column: through the frame's block manager when it has the
    method (pandas 2 and 3), else column by column."""
    get = getattr(getattr(frame, "_mgr", None), "iget_values", None)
    if get is None:
        return [col.array for _, col in frame.items()]
    arrays = [get(j) for j in range(frame.shape[1])]
    # the private call must give what the public one does; else the public one
    if any(len(a) != frame.shape[0] for a in arrays):
        return [col.array for _, col in frame.items()]
    return [a.to_numpy() if isinstance(a, pd.arrays.NumpyExtensionArray) else a
            for a in arrays]
