"""The scores of a classifier's predicted class probabilities, all losses (lower is better).

Every score takes the test rows' true class codes ``y`` (``0 .. C - 1``) and a probability
matrix of shape ``(n_rows, C)`` whose columns are *all* the classes of the dataset (a class the
model never saw gets a column of zeros, :func:`fastpath.evaluation.align_proba`), so that ``C``
is the dataset's number of classes whatever a training fold held.

* **0-1 loss**: the share of rows whose most probable class (the first on ties) is not ``y``.
* **RMSE**, the paper's: ``sqrt(mean over rows of (1/C) sum_c (P(c | x) - [c = y])^2)``, the
  root mean squared error of the class-probability vector against the one-hot truth. It is
  what the authors' evaluation code reports (the Monash ESKDB's two-fold cross-validation sums
  the squared error over every class of every test row and divides by rows x classes) and what
  Weka reports as the "root mean squared error" of a classifier; the paper calls it "related
  to the Brier score, a proper scoring rule": ``RMSE = sqrt(Brier / C)``.
* **Brier score**: ``mean over rows of sum_c (P(c | x) - [c = y])^2`` (Brier, 1950), in
  ``[0, 2]``; a strictly proper score for any number of classes.
* **RMSE of the true class**: ``sqrt(mean over rows of (1 - P(y | x))^2)``. Equal to the RMSE
  for two classes (the error on the other class mirrors the true class's), larger for more
  classes, and *not* a proper score then: it ignores how the mass that misses the true class
  is spread, so its expectation is not minimised by the true distribution. Kept under this
  name for continuity with tables computed with it (and it is selective kDB's leave-one-out
  criterion, as in the authors' code: :mod:`fastpath.structure._selective`).
* **Log loss**: ``mean over rows of -log P(y | x)``, with ``P(y | x)`` clipped to
  ``[1e-15, 1]`` (scikit-learn's former default), so that a row given probability 0 costs
  ``-log(1e-15) = 34.5`` rather than infinity.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "LOG_LOSS_EPS",
    "METRICS",
    "brier_score",
    "log_loss",
    "rmse",
    "rmse_true_class",
    "score",
    "zero_one_loss",
]

LOG_LOSS_EPS = 1e-15


def _true_class_proba(y_true_codes: np.ndarray, proba: np.ndarray) -> np.ndarray:
    return proba[np.arange(len(y_true_codes)), y_true_codes]


def zero_one_loss(y_true_codes: np.ndarray, proba: np.ndarray) -> float:
    """Share of rows whose most probable class is wrong."""
    return float(np.mean(np.argmax(proba, axis=1) != y_true_codes))


def brier_score(y_true_codes: np.ndarray, proba: np.ndarray) -> float:
    """Mean over rows of ``sum_c (P(c | x) - [c = y])^2``, the multi-class Brier score."""
    # the residuals themselves (a copy: the caller's array is not changed), not the expansion
    # sum_c p_c^2 - 2 p_y + 1, which cancels to 0 for a confident right row: (1, 1e-12) gave
    # 0 for its 2e-24
    residual = np.array(proba, dtype=np.float64)
    residual[np.arange(len(y_true_codes)), y_true_codes] -= 1.0
    return float(np.mean(np.einsum("ij,ij->i", residual, residual)))


def rmse(y_true_codes: np.ndarray, proba: np.ndarray) -> float:
    """The paper's RMSE: ``sqrt(mean over rows and classes of (P(c | x) - [c = y])^2)``.

    The root of the Brier score divided by the number of classes ``C = proba.shape[1]`` (every
    class of the dataset, seen in training or not), as the authors' code and Weka compute it.
    """
    return float(np.sqrt(brier_score(y_true_codes, proba) / np.shape(proba)[1]))


def rmse_true_class(y_true_codes: np.ndarray, proba: np.ndarray) -> float:
    """``sqrt(mean (1 - P(true class | x))^2)``: the RMSE for two classes, not a proper score
    for more (see the module's docstring)."""
    p_true = _true_class_proba(y_true_codes, proba)
    return float(np.sqrt(np.mean((1.0 - p_true) ** 2)))


def log_loss(y_true_codes: np.ndarray, proba: np.ndarray) -> float:
    """Mean ``-log P(true class | x)``, probabilities clipped to ``[1e-15, 1]``."""
    p_true = np.clip(_true_class_proba(y_true_codes, proba), LOG_LOSS_EPS, 1.0)
    return float(-np.mean(np.log(p_true)))


#: every score, in the order tables report them
METRICS = {
    "zero_one_loss": zero_one_loss,
    "rmse": rmse,
    "brier": brier_score,
    "log_loss": log_loss,
    "rmse_true_class": rmse_true_class,
}


def score(y_true_codes: np.ndarray, proba: np.ndarray) -> dict[str, float]:
    """Every score of :data:`METRICS` of one set of predictions, by name.

    Parameters
    ----------
    y_true_codes : ndarray of shape (n_rows,)
        The true classes as column indices of ``proba``.
    proba : ndarray of shape (n_rows, n_classes)
        Predicted probabilities, one column per class of the dataset.

    Returns
    -------
    dict
        ``{"zero_one_loss": ..., "rmse": ..., "brier": ..., "log_loss": ...,
        "rmse_true_class": ...}``.
    """
    y_true_codes = np.asarray(y_true_codes)
    proba = np.asarray(proba, dtype=np.float64)
    if proba.ndim != 2 or proba.shape[0] != y_true_codes.shape[0]:
        raise ValueError(f"proba must have shape (n_rows, n_classes) with n_rows = "
                         f"{y_true_codes.shape[0]}, got {proba.shape}")
    return {name: f(y_true_codes, proba) for name, f in METRICS.items()}
