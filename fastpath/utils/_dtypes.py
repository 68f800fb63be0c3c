"""Conversions of columns and labels: float64 values, nominal columns as categoricals, plain
Python labels, a frame's column arrays.

What type a column is (nominal or numeric, the stray-token rule, declared missing values,
identifiers and dates) is decided in one place, :mod:`fastpath.io._column_types`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd


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
