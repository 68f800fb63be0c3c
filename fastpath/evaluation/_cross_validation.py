"""Repeated stratified cross-validation, scored by the paper's metrics.

The paper evaluates with 2-fold cross-validation repeated 5 times, discretisation fitted inside
each training fold (the classifier does it in ``fit``), and reports 0-1 loss and RMSE; every fold
here also carries the Brier score, the log loss and the RMSE of the true class
(:mod:`fastpath.evaluation._metrics` defines them).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from ..utils._validation import as_generator
from ._metrics import METRICS, score


def stratified_folds(
    y_codes: np.ndarray, n_folds: int, n_repeats: int, seed: int | None
) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """(repeat, fold, train_index, test_index) of repeated stratified k-fold CV.

    Each class's rows are shuffled and dealt round-robin to the folds, so every fold gets
    within one row of its share of every class. The same seed gives the same folds.
    """
    y_codes = np.asarray(y_codes)
    if n_folds < 2:
        raise ValueError(f"folds must be at least 2, got {n_folds}")
    if n_repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {n_repeats}")
    if len(y_codes) < n_folds:
        raise ValueError(f"cannot make {n_folds} folds from {len(y_codes)} rows")
    rng = as_generator(seed, "seed")
    for r in range(n_repeats):
        fold_of = np.empty(len(y_codes), dtype=np.int64)
        offset = int(rng.integers(n_folds))
        for c in np.unique(y_codes):
            rows = rng.permutation(np.flatnonzero(y_codes == c))
            fold_of[rows] = (np.arange(rows.size) + offset) % n_folds
            offset = (offset + rows.size) % n_folds
        for f in range(n_folds):
            yield r, f, np.flatnonzero(fold_of != f), np.flatnonzero(fold_of == f)


@dataclass
class FoldResult:
    repeat: int
    fold: int
    zero_one_loss: float
    rmse: float
    brier: float
    log_loss: float
    rmse_true_class: float
    fit_seconds: float
    predict_seconds: float
    n_train: int
    n_test: int
    extra: dict[str, Any] = field(default_factory=dict)


def take_rows(X: Any, idx: np.ndarray) -> Any:
    """Rows ``idx`` of a DataFrame, Series or array-like (positional)."""
    return X.iloc[idx] if isinstance(X, pd.DataFrame | pd.Series) else np.asarray(X)[idx]


def training_rows(X: Any, idx: np.ndarray) -> Any:
    """The rows ``idx`` of ``X`` as a model fitted on them in deployment would see them: a
    categorical column keeps only the categories these rows hold. A table read whole
    declares every value of the file, so without this a training fold would know the test
    fold's values (a value of its own, counted in ``|X_i|``, where deployment meets an unseen
    value, left out of the product)."""
    rows = take_rows(X, idx)
    if not isinstance(rows, pd.DataFrame):
        return rows
    categorical = [j for j, dtype in enumerate(rows.dtypes)
                   if isinstance(dtype, pd.CategoricalDtype)]
    if not categorical:
        return rows
    rows = rows.copy(deep=False)
    for j in categorical:
        rows.isetitem(j, rows.iloc[:, j].cat.remove_unused_categories())
    return rows


def label_codes(y: Any) -> tuple[np.ndarray, np.ndarray]:
    """The sorted label set of ``y`` (object labels as strings) and each row's index in it."""
    y_arr = np.asarray(y)
    classes, codes = np.unique(y_arr.astype(str) if y_arr.dtype == object else y_arr,
                               return_inverse=True)
    return classes, codes


def align_proba(proba: np.ndarray, model_classes: Any, classes: np.ndarray) -> np.ndarray:
    """Columns of a model's ``predict_proba`` placed in the order of the full label set
    ``classes`` (sorted); classes the model never saw get probability 0."""
    model_classes = np.asarray(model_classes)
    if classes.dtype.kind == "U":
        model_classes = model_classes.astype(str)
    out = np.zeros((proba.shape[0], len(classes)))
    out[:, np.searchsorted(classes, model_classes)] = proba
    return out


def cross_validate(
    make_model: Callable[[], Any],
    X: Any,
    y: Any,
    *,
    n_folds: int = 2,
    n_repeats: int = 5,
    seed: int | None = 0,
    progress: Callable[[int, int], None] | None = None,
) -> list[FoldResult]:
    """Fit a fresh model on each training fold and score it on the test fold.

    Each fold is evaluated as the model would be deployed: it is fitted on its training rows
    only (:func:`training_rows`: a categorical column's categories that only the test fold
    holds are not declared to it), so a test value it never saw is handled as a new value in
    deployment. Test rows whose class does not occur in the training fold count as errors
    with P(true class) = 0.
    """
    classes, y_codes = label_codes(y)
    folds = list(stratified_folds(y_codes, n_folds, n_repeats, seed))
    results = []
    for i, (r, f, train, test) in enumerate(folds):
        model = make_model()
        t0 = time.perf_counter()
        model.fit(training_rows(X, train), take_rows(y, train))
        t1 = time.perf_counter()
        proba_model = model.predict_proba(take_rows(X, test))
        t2 = time.perf_counter()
        proba = align_proba(proba_model, model.classes_, classes)
        yt = y_codes[test]
        results.append(
            FoldResult(
                repeat=r,
                fold=f,
                **score(yt, proba),
                fit_seconds=t1 - t0,
                predict_seconds=t2 - t1,
                n_train=len(train),
                n_test=len(test),
            )
        )
        if progress is not None:
            progress(i + 1, len(folds))
    return results


def summarise(results: list[FoldResult]) -> dict[str, Any]:
    """Mean and standard deviation over folds of each metric; mean seconds per fold."""
    out: dict[str, Any] = {}
    for key in METRICS:
        values = np.array([getattr(r, key) for r in results])
        out[key] = {
            "mean": float(values.mean()),
            "sd": float(values.std(ddof=1)) if values.size > 1 else 0.0,
        }
    out["fit_seconds"] = float(np.mean([r.fit_seconds for r in results]))
    out["predict_seconds"] = float(np.mean([r.predict_seconds for r in results]))
    out["folds"] = len(results)
    return out
