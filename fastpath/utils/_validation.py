"""Checks of scalar parameters, seeds, thread counts and class labels, with the messages users see.

Every public function and class of fastpath validates its arguments with these helpers, so a bad
value gets the same ``ValueError`` naming the parameter wherever it is passed.
"""

from __future__ import annotations

import difflib
import math
import numbers
import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from sklearn.exceptions import DataConversionWarning
from sklearn.utils.multiclass import check_classification_targets

from ._dtypes import python_scalar
from ._warn import warn


def check_int(name: str, value: Any, minimum: int) -> int:
    """``value`` as an ``int`` (bools refused); ``ValueError`` naming ``name`` below ``minimum``."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return int(value)


def check_float(name: str, value: Any, *, positive: bool) -> float:
    """``value`` as a finite ``float``, ``>= 0`` (``> 0`` when ``positive``)."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ValueError(f"{name} must be a number, got {value!r}")
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v == 0):
        kind = "> 0" if positive else ">= 0"
        raise ValueError(f"{name} must be finite and {kind}, got {value!r}")
    return v


def as_generator(seed: Any, name: str = "random_state") -> np.random.Generator:
    """A numpy ``Generator`` from ``None``, an int, a ``Generator`` (returned as is) or a
    ``RandomState`` (one draw of it seeds a new generator)."""
    if seed is None or (isinstance(seed, numbers.Integral) and not isinstance(seed, bool)):
        if seed is not None and seed < 0:
            raise ValueError(f"{name} must be None, a non-negative int or a numpy Generator, "
                             f"got {seed!r}")
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1))
    raise ValueError(f"{name} must be None, an int or a numpy Generator, got {seed!r}")


def seed_int(seed: Any, name: str = "random_state") -> int:
    """A reproducible integer seed from ``seed`` (fresh entropy for ``None``)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if seed < 0:
            raise ValueError(f"{name} must be None, a non-negative int or a numpy Generator, "
                             f"got {seed!r}")
        return int(seed)
    return int(as_generator(seed, name).integers(0, 2**63 - 1))


def n_threads(n_jobs: Any, name: str = "n_jobs") -> int:
    """Threads for ``n_jobs``: ``None`` or ``-1`` all cores (LightGBM's and XGBoost's
    default; in scikit-learn ``None`` means one job), ``-2`` all but one (scikit-learn's
    negative counts), a positive int that many."""
    if n_jobs is None:
        return os.cpu_count() or 1
    if isinstance(n_jobs, bool | np.bool_) or not isinstance(n_jobs, numbers.Integral) or (
        n_jobs == 0
    ):
        raise ValueError(f"{name} must be None or a non-zero integer, got {n_jobs!r}")
    # the cores are counted only here: os.cpu_count asks the operating system, and every
    # prediction resolves n_jobs
    if n_jobs < 0:
        return max(1, (os.cpu_count() or 1) + 1 + int(n_jobs))
    return int(n_jobs)


def readonly(a: Any) -> np.ndarray:
    """A read-only copy of ``a``."""
    out = np.array(a, copy=True)
    out.flags.writeable = False
    return out


def check_two_classes(classes: np.ndarray, hint: str = "") -> None:
    """``ValueError`` naming the one class when ``classes`` (a fit's labels) has fewer than 2
    (``hint``: what to do, appended to the message)."""
    if classes.size < 2:
        raise ValueError(f"the target has only 1 class ({python_scalar(classes[0])!r}); a "
                         f"classifier needs at least 2{hint}")


def check_labels(y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct class labels of ``y`` and every row's index into them.

    ``y`` must be one-dimensional (a column vector is raveled with scikit-learn's
    ``DataConversionWarning``, named at the caller's line), have ``n_rows`` entries, no missing
    value and, checked by scikit-learn's ``check_classification_targets``, no continuous
    value. Labels of mixed types are ordered by their text.
    """
    if y is None:
        raise ValueError("BayesNetClassifier requires y to be passed, but the target y is None")
    if isinstance(y, pd.DataFrame):
        if y.shape[1] != 1:
            raise ValueError(f"y must be one column, got a DataFrame with {y.shape[1]}")
        y = y.iloc[:, 0]
    y_arr = np.asarray(y)
    if y_arr.ndim == 2 and y_arr.shape[1] == 1:
        warn(
            "A column-vector y was passed when a 1d array was expected. Please change the "
            "shape of y to (n_samples,), for example using ravel().",
            DataConversionWarning)
        y_arr = y_arr.ravel()
    if y_arr.ndim != 1:
        raise ValueError(f"y must be one-dimensional, got shape {y_arr.shape}")
    if y_arr.shape[0] != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {y_arr.shape[0]}")
    missing = pd.isna(pd.Series(y_arr, dtype=object if y_arr.dtype == object else None))
    if missing.any():
        row = int(np.flatnonzero(missing.to_numpy())[0])
        raise ValueError(
            f"the target has {int(missing.sum())} missing value(s) (first at row {row}); "
            "drop those rows before fitting"
        )
    if y_arr.dtype.kind == "f" and np.isinf(y_arr).any():
        raise ValueError("the target contains infinite values")
    if y_arr.dtype.kind == "f":  # whole numbers are labels, others a regression target
        check_classification_targets(y_arr)
    try:
        classes, y_codes = np.unique(y_arr, return_inverse=True)
    except TypeError:  # mixed types
        as_text = y_arr.astype(str)
        classes, first, y_codes = np.unique(as_text, return_index=True, return_inverse=True)
        classes = y_arr[first]
    return classes, y_codes.astype(np.int64).ravel()


#: the separators a delimited text file may use, as a message names them
SEPARATORS: tuple[tuple[str, str], ...] = ((",", "','"), (";", "';'"), ("\t", "tab"),
                                           ("|", "'|'"))


def other_separator(names: Sequence[Any], sep: str) -> tuple[str, str] | None:
    """``(separator, its name)`` that a table read with ``sep`` as the single column ``names``
    most likely uses (one of :data:`SEPARATORS` inside that column's name); None otherwise."""
    if len(names) != 1:
        return None
    for other, label in SEPARATORS:
        if other != sep and other in str(names[0]):
            return other, label
    return None


def _squashed(name: Any) -> str:
    return "".join(ch for ch in str(name).casefold() if ch.isalnum())


def near_matches(missing: Sequence[Any], available: Sequence[Any]) -> dict[str, str]:
    """For each name of ``missing``, the one name of ``available`` it most likely became: the
    same but for case, spaces and punctuation (``x1`` / ``X1``, ``first name`` /
    ``first_name``), or else the closest by :func:`difflib.get_close_matches` (ratio >= 0.8);
    names that are themselves wanted or already matched are not offered twice."""
    offered = [str(a) for a in available if a not in set(missing)]
    found: dict[str, str] = {}
    for name in missing:
        candidates = [a for a in offered if a not in found.values()]
        same = [a for a in candidates if _squashed(a) == _squashed(name)]
        close = same or difflib.get_close_matches(str(name), candidates, n=1, cutoff=0.8)
        if close:
            found[str(name)] = close[0]
    return found


def missing_columns_message(missing: Sequence[Any], available: Sequence[Any], *, what: str,
                            sep: str | None = None, flag: str = "--sep") -> str:
    """"``what`` lacks columns the model was fitted on: [...]", with what most likely went
    wrong: a file read as one column with another separator (naming ``flag``), or the columns
    the missing ones were most likely renamed to."""
    text = f"{what} lacks columns the model was fitted on: {list(missing)}"
    guess = other_separator(available, sep) if sep is not None else None
    if guess is not None:
        other, label = guess
        return (f"{text}; it was read as one column named {str(available[0])[:60]!r}: is it "
                f"{label}-separated? Give the separator ({flag} {other!r}; in Python, read it "
                f"with pandas.read_csv(sep={other!r}) and pass the DataFrame)")
    renamed = near_matches(missing, available)
    if renamed:
        pairs = ", ".join(f"{m!r} (it has {a!r})" for m, a in renamed.items())
        return f"{text}; renamed? {pairs}"
    return text


def multiplicity_rows(sample_weight: Any, n_rows: int) -> np.ndarray:
    """The rows a fit counts under ``sample_weight`` read as multiplicities: row ``i`` as
    many times as its weight says (``np.repeat``), so that a weight of 2 is exactly a row
    given twice (HDP's table counts and every count of the fit stay integers).

    ``ValueError`` naming ``sample_weight`` for a shape other than ``(n_rows,)``, a weight
    that is negative, not finite or not a whole number, or weights that sum to zero.
    """
    try:
        weights = np.asarray(sample_weight, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"sample_weight must be numbers, got {sample_weight!r:.80}") from None
    if weights.ndim == 0:  # a scalar: every row that many times (scikit-learn's convention)
        weights = np.full(n_rows, float(weights))
    if weights.shape != (n_rows,):
        raise ValueError(f"sample_weight.shape == {weights.shape}, expected ({n_rows},)")
    bad = ~np.isfinite(weights) | (weights < 0) | (weights != np.round(weights))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"sample_weight must hold non-negative whole numbers, the times each row counts "
            f"(HDP's table counts are integers), got {float(weights[row])!r} for row {row}; scale "
            "and round the weights to whole numbers, or weigh whole classes with "
            "class_weight")
    if weights.sum() == 0:
        raise ValueError("every sample_weight is zero: no row would be counted")
    return np.repeat(np.arange(n_rows), weights.astype(np.int64))


def check_class_weight(class_weight: Any) -> Any:
    """``class_weight`` checked: ``None``, ``"balanced"`` or a mapping of class labels to
    positive finite numbers (``ValueError`` naming the parameter otherwise)."""
    if class_weight is None or (isinstance(class_weight, str) and class_weight == "balanced"):
        return class_weight
    if not isinstance(class_weight, dict):
        raise ValueError(f"class_weight must be None, 'balanced' or a dict of class labels to "
                         f"positive weights, got {class_weight!r:.80}")
    for label, weight in class_weight.items():
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not (
                math.isfinite(weight) and weight > 0):
            raise ValueError(f"class_weight[{label!r}] must be a positive number, got "
                             f"{weight!r}")
    return class_weight


def class_log_weights(class_weight: Any, classes: np.ndarray, counts: np.ndarray
                      ) -> np.ndarray | None:
    """``log w`` of every class (``classes`` order), or None when every weight is 1: the
    shift ``class_weight`` adds to the joint log likelihood of each class. ``"balanced"``:
    ``n / (n_classes * n_c)`` from the training class ``counts`` (scikit-learn's rule); a
    dict: its weights, 1 for a class it leaves out (``ValueError`` for a label that is not a
    class)."""
    check_class_weight(class_weight)
    if class_weight is None:
        return None
    counts = np.asarray(counts, dtype=np.float64)
    if isinstance(class_weight, str):
        with np.errstate(divide="ignore"):
            weights = counts.sum() / (len(classes) * counts)
        weights[~np.isfinite(weights)] = 1.0  # a class never seen: nothing to balance
    else:
        known = {python_scalar(c): i for i, c in enumerate(classes)}
        unknown = [k for k in class_weight if python_scalar(k) not in known]
        if unknown:
            raise ValueError(f"class_weight names labels that are not classes: {unknown}; "
                             f"the classes are {[python_scalar(c) for c in classes]}")
        weights = np.ones(len(classes))
        for label, weight in class_weight.items():
            weights[known[python_scalar(label)]] = float(weight)
    if np.all(weights == 1.0):
        return None
    return np.log(weights)
