"""Cross-validation of classifiers and the metrics it reports (0-1 loss, RMSE, log loss)."""

from ._cross_validation import (
    FoldResult,
    align_proba,
    cross_validate,
    label_codes,
    log_loss,
    rmse,
    stratified_folds,
    summarise,
    take_rows,
    zero_one_loss,
)

__all__ = [
    "FoldResult",
    "align_proba",
    "cross_validate",
    "label_codes",
    "log_loss",
    "rmse",
    "stratified_folds",
    "summarise",
    "take_rows",
    "zero_one_loss",
]
