"""Column types: which pandas dtypes are numbers, nominal columns as categoricals, plain labels."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["as_nominal", "duplicates", "is_numeric_dtype", "python_scalar", "to_float64"]


def is_numeric_dtype(dtype: Any) -> bool:
    """Numbers (bools excluded: a bool column is nominal)."""
    return pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)


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
