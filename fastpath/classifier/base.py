"""What every estimator of fastpath shares: tables in (columns matched to the fit's), the tags
that say so to scikit-learn, and the sampler options its parameters give."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..encode.encoder import as_frame
from ..estimate.hdp.options import HDPOptions
from ..pipeline.config import hdp_options
from ..utils.validation import check_labels

__all__ = ["TabularInput"]


class TabularInput:
    """``X`` checks shared by the estimators (a mixin; the class sets ``n_features_in_`` and,
    for named columns, ``feature_names_in_`` when it is fitted)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def hdp_options(self) -> HDPOptions:
        """The sampler options these parameters give (``ValueError`` naming a bad one)."""
        return hdp_options(self.get_params())

    @property
    def n_iter_(self) -> int:
        """Iterations per chain of the longest-sampled tree of the fit (its adaptive length's
        longest run, or ``n_iter``); 0 with m-estimates. Read from ``diagnostics_``, so a
        loaded model has it too (``AttributeError`` before a fit)."""
        if self.__dict__.get("classes_") is None:
            raise AttributeError(f"{type(self).__name__} is not fitted: no n_iter_ yet")
        diagnostics = self.__dict__.get("diagnostics_")
        if diagnostics is None:
            return 0
        return max((t.iterations for t in diagnostics.trees), default=0)

    @staticmethod
    def _frame(X: Any) -> tuple[pd.DataFrame, bool]:
        """``X`` as a DataFrame, and whether its columns are names; refuses empty data."""
        frame, has_names = as_frame(X)
        if frame.shape[0] == 0:
            raise ValueError(
                f"Found array with 0 sample(s) (shape={frame.shape}) while a minimum of 1 is "
                "required."
            )
        if frame.shape[1] == 0:
            raise ValueError(
                f"Found array with 0 feature(s) (shape={frame.shape}) while a minimum of 1 is "
                "required."
            )
        return frame, has_names

    def _in_memory_data(self, X: Any, y: Any, chunksize: int | None
                        ) -> tuple[pd.DataFrame, bool, np.ndarray, np.ndarray]:
        """``fit``'s in-memory input, checked: the frame, whether it has column names, the
        classes and the class codes (``ValueError`` for a stream-only option or one class)."""
        if chunksize is not None:
            raise ValueError(
                "chunksize applies to streamed X (a path, a chunk iterator or a Dask DataFrame)"
            )
        frame, has_names = self._frame(X)
        classes, y_codes = check_labels(y, frame.shape[0], stacklevel=4)
        if classes.size < 2:
            raise ValueError(
                f"the target has only 1 class ({classes[0]!r}); a classifier needs at least 2"
            )
        return frame, has_names, classes, y_codes

    def _validate_X(self, X: Any) -> pd.DataFrame:
        """``X`` to predict on, its columns matched to those seen in fit."""
        frame, has_names = self._frame(X)
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and has_names:
            names = list(frame.columns)
            missing = [c for c in fitted_names if c not in names]
            extra = [c for c in names if c not in set(fitted_names)]
            if missing or extra:
                parts = []
                if missing:
                    parts.append(f"missing columns {missing}")
                if extra:
                    parts.append(f"unexpected columns {extra}")
                raise ValueError(
                    "The feature names should match those that were passed during fit: "
                    + "; ".join(parts)
                )
            if names != list(fitted_names):
                # same columns in another order: matched by name (documented)
                frame = frame[list(fitted_names)]
        elif fitted_names is not None and not has_names:
            warnings.warn(
                f"X does not have valid feature names, but {type(self).__name__} was fitted with "
                "feature names; columns are matched by position",
                UserWarning,
                stacklevel=3,
            )
        elif fitted_names is None and has_names:
            warnings.warn(
                f"X has feature names, but {type(self).__name__} was fitted without feature "
                "names",
                UserWarning,
                stacklevel=3,
            )
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {frame.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input"
            )
        return frame

