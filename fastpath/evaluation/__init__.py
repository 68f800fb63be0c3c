"""Cross-validation of classifiers and the metrics it reports (0-1 loss, the paper's RMSE, Brier
score, log loss, RMSE of the true class)."""

from ._cross_validation import (
    FoldResult,
    align_proba,
    cross_validate,
    label_codes,
    stratified_folds,
    summarise,
    take_rows,
)
from ._metrics import (
    LOG_LOSS_EPS,
    METRICS,
    brier_score,
    log_loss,
    rmse,
    rmse_true_class,
    score,
    zero_one_loss,
)

__all__ = [
    "LOG_LOSS_EPS",
    "METRICS",
    "FoldResult",
    "align_proba",
    "brier_score",
    "cross_validate",
    "label_codes",
    "log_loss",
    "rmse",
    "rmse_true_class",
    "score",
    "stratified_folds",
    "summarise",
    "take_rows",
    "zero_one_loss",
]
