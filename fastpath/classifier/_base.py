"""What every classifier of fastpath shares: one base class owns the fit and its drivers, the
``partial_fit`` lifecycle, prediction, model files and the scikit-learn plumbing.

A classifier is a list of members (:class:`~fastpath.pipeline._fitted.Member`), each a Bayesian
network classifier; ``P(y | x)`` is the mean of the members' posteriors. Subclasses differ only
in their parameters and in how members are drawn (:mod:`fastpath.pipeline._members`):
``BayesNetClassifier`` is an ensemble of one member, ``ESKDBClassifier`` of ``n_estimators``
selective kDB members with their own orders and cut points.

The base hands the data to a driver -- :func:`~fastpath.pipeline._memory.fit_in_memory`,
:func:`~fastpath.scale._passes.fit_stream`, :func:`~fastpath.scale._dask.fit_dask` or the
``partial_fit`` counts of :mod:`fastpath.scale._partial` -- and assigns the
:class:`~fastpath.pipeline._fitted.FittedModel` it returns. Every call runs under the threads
``n_jobs`` allows (:func:`fastpath.utils._threads.limit_threads`). Prediction only reads the
fitted state, so one fitted classifier may predict from several threads at once.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Self

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..encode._encoder import as_frame, column_labels
from ..estimate.hdp._options import HDPOptions
from ..io._typed_table import TableWithTypes
from ..pipeline._config import FitConfig, hdp_options
from ..pipeline._explain import Explanation, members_explain, structure_information
from ..pipeline._fitted import FittedModel
from ..pipeline._intervals import members_proba_draws, model_draws
from ..pipeline._members import (
    PredictionPlan,
    is_plan_of,
    kept_columns,
    members_log_proba,
    members_proba,
    prediction_plan,
)
from ..pipeline._memory import fit_in_memory
from ..scale._dask import fit_dask
from ..scale._errors import StreamError
from ..scale._partial import PartialFit, start_partial_fit
from ..scale._passes import fit_stream
from ..scale._predict import (
    EncodingError,
    PredictionChunk,
    column_plans,
    prediction_chunks,
    relabel_rows,
)
from ..scale._sources import (
    check_chunksize,
    check_separator,
    is_dask_frame,
    is_stream_source,
)
from ..utils._threads import limit_threads
from ..utils._validation import (
    check_class_weight,
    check_labels,
    check_two_classes,
    class_log_weights,
    multiplicity_rows,
    n_threads,
    near_matches,
)
from ..utils._warn import recording, warn
from ._model_io import ModelFileError, read_model, save_model

if TYPE_CHECKING:  # the result of a Dask DataFrame's prediction (the dask extra)
    import dask.array

# Attributes that are neither parameters nor in FittedModel but belong to a fit.
_PRIVATE_STATE = ("_partial_state", "_prediction_plan")

#: The keyword-only parameters every classifier has, in this order after its own (each class
#: writes its ``__init__`` out; ``tests/test_base.py`` checks that they agree, and
#: ``BayesNetClassifier``'s docstring documents them).
SHARED_PARAMETERS: tuple[str, ...] = (
    "m", "m_backoff", "categorical_features", "na_values", "numeric_errors", "exclude_features",
    "class_weight", "sampler", "selection_rows", "discriminative", "n_jobs", "random_state",
    "verbose",
)


def _class_counts(members: Any) -> np.ndarray:
    """The training rows of each class: the counts at the root of the first member's class
    tree (the tree of ``P(y)``), so a streamed fit, ``partial_fit`` and a loaded model have
    them too."""
    member = members[0]
    for spec, tree in zip(member.tree_specs, member.trees, strict=True):
        if spec.child == -1 and not spec.conditioning:
            return np.asarray(tree.counts[0], dtype=np.float64)
    raise ValueError("the model has no class prior tree")  # every structure has one


def _take_rows(y: Any, rows: np.ndarray, n_rows: int) -> Any:
    """The labels ``y`` of ``rows`` (a Series, a one-column frame or any array-like), after a
    check that ``y`` has ``n_rows`` labels."""
    if len(y) != n_rows:
        raise ValueError(f"X has {n_rows} rows but y has {len(y)} labels")
    if isinstance(y, pd.Series | pd.DataFrame):
        return y.iloc[rows].reset_index(drop=True)
    return np.asarray(y)[rows]


def _is_prediction_stream(X: Any) -> bool:
    """Whether prediction reads ``X`` in chunks: a path, a file object, an iterator or a
    callable of chunks (a Dask DataFrame is refused there)."""
    return is_stream_source(X) or hasattr(X, "read")


def _no_chunksize(chunksize: int | None) -> None:
    if chunksize is not None:
        raise ValueError("chunksize applies to streamed X (a path, a file object or an "
                         "iterator of DataFrames); iter_predict_proba also slices a table")


def _check_sep(X: Any, sep: str | None) -> None:
    """``sep`` is a CSV's field separator: refused (``ValueError``) unless ``X`` is a path or,
    for prediction, a binary file object of CSV (standard input)."""
    if sep is None:
        return
    check_separator(sep)
    if not (isinstance(X, str | os.PathLike) or hasattr(X, "read")):
        raise ValueError(f"sep is the field separator of a CSV/TSV file: it applies when X is a "
                         f"path (or a file object of CSV), not a {type(X).__name__} (read the "
                         "file with fastpath.read_table(path, sep=...) and pass its result)")


def _split_target(X: Any, y: Any) -> tuple[Any, Any]:
    """``fit(table, "target")``: a :class:`TableWithTypes` (what ``read_table`` returns) and
    the name of its target column, as for a file, give the other columns and the labels."""
    if isinstance(X, TableWithTypes) and isinstance(y, str):
        if y not in X.frame.columns:
            raise ValueError(f"y names the target column {y!r}, which the table does not have; "
                             f"its columns are {list(X.frame.columns)}")
        return X.frame.drop(columns=[y]), X.frame[y]
    return X, y


#: the warnings of :meth:`BaseBayesNet._match_columns` about names, given once per call for a
#: Dask DataFrame (on its metadata), not again per partition
_NAME_WARNINGS = r"X (does not have valid feature names|has feature names)"


def _predict_partition(partition: pd.DataFrame, model: BaseBayesNet, method: str) -> np.ndarray:
    """One partition's ``method`` (:meth:`BaseBayesNet._dask_predict`); an empty partition
    gives an empty block, as an empty frame does."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_NAME_WARNINGS)
        return getattr(model, method)(partition)


class BaseBayesNet(ClassifierMixin, BaseEstimator):
    """Base of the classifiers: fit, ``partial_fit``, predict, save and load (module doc).

    A subclass writes out its typed ``__init__``: its own parameters first (the positional
    ones before the keyword-only ones), then :data:`SHARED_PARAMETERS`, and only stores them
    (:meth:`_store_parameters`), as scikit-learn asks; it annotates its own parameters as
    attributes, as this class does the shared ones. It may override :meth:`_fit_params` (the
    parameters of :class:`~fastpath.pipeline._config.FitConfig` those give).
    """

    # the shared parameters, as every subclass's __init__ stores them (_store_parameters)
    m: float | str
    m_backoff: str
    categorical_features: Any
    na_values: str | Sequence[str] | None
    numeric_errors: str
    exclude_features: str | Sequence[str | int] | None
    class_weight: dict[Any, float] | str | None
    sampler: str | HDPOptions
    selection_rows: int | str | None
    discriminative: str | None
    n_jobs: int | None
    random_state: int | np.random.Generator | None
    verbose: int

    def _store_parameters(self, arguments: dict[str, Any]) -> None:
        """Store every parameter of the class's ``__init__`` from ``arguments`` (that
        ``__init__``'s ``locals()``) as it was passed, and nothing else, as scikit-learn asks
        of an ``__init__`` (the attributes' types are the classes' annotations)."""
        for name in self._get_param_names():
            setattr(self, name, arguments[name])

    # ------------------------------------------------------------------ parameters
    def _fit_params(self) -> dict[str, Any]:
        """The parameters of the fit's :class:`~fastpath.pipeline._config.FitConfig`."""
        return self.get_params()

    def fit_config(self) -> FitConfig:
        """The checked parameters (``ValueError`` naming a bad one, before any work)."""
        params = self._fit_params()
        check_class_weight(params.get("class_weight"))
        return FitConfig.from_params(params)

    def hdp_options(self) -> HDPOptions:
        """The sampler options these parameters give (``ValueError`` naming a bad one): the
        ``sampler`` when it is an :class:`HDPOptions`, else its preset's options
        (:func:`~fastpath.pipeline.hdp_options`). An ensemble samples each member's trees with
        ``hdp_options().for_members(n_estimators)``, whichever way ``sampler`` was given."""
        return hdp_options(self._fit_params())

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _threads(self) -> AbstractContextManager[None]:
        """The threads every stage of a call may use: ``n_jobs``, numba's included."""
        return limit_threads(n_threads(self.n_jobs))

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any = None, *, chunksize: int | None = None,
            sample_weight: Any = None, sep: str | None = None) -> Self:
        """Learn every member's coding, structure and probability tables.

        The estimator is updated only when the fit succeeds: after an error it is exactly as
        before the call.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features), TableWithTypes, or a stream
            Nominal and numeric columns; missing values (NaN/None) are a value of their own.
            What :func:`fastpath.read_table` returns is a table too (its frame; with ``y``
            the name of its target column, the other columns are fitted).
            A *stream* is fitted out of core in a few passes (:mod:`fastpath.scale`), every
            member's statistics in the same passes: a path to a CSV/TSV (optionally
            compressed) or Parquet file, a callable returning a fresh iterator of DataFrame
            chunks, an iterator of DataFrame chunks (spilled to a temporary directory, as it
            can be read only once), or a ``dask.dataframe.DataFrame``
            (:mod:`fastpath.scale._dask`). A stream's chunks hold the target column too.
        y : array-like of shape (n_samples,), or str
            Class labels (no missing values). For a stream: the name of the target column
            (default: the last column).
        chunksize : int, optional
            Streams only: rows per chunk read from a file (default 100,000), or per block of
            a Dask partition. Memory grows with it, not with the number of rows.
        sample_weight : array-like of shape (n_samples,), optional
            Tables in memory: how many times each row counts, whole numbers >= 0 (a row of
            weight 2 is exactly that row given twice; 0 leaves it out). HDP's table counts are
            integers, so a fractional weight raises ``ValueError`` (weigh whole classes with
            ``class_weight``); a stream raises too.
        sep : str, optional
            A CSV/TSV path only: its field separator (default ``","``, a tab for ``.tsv``), as
            :func:`fastpath.read_table` takes it. The tokens that mean a missing value are the
            estimator's ``na_values``, for the files it fits and predicts alike.
        """
        config = self.fit_config()
        _check_sep(X, sep)
        X, y = _split_target(X, y)
        with self._threads(), recording() as warned:
            if sample_weight is not None and (is_dask_frame(X) or is_stream_source(X)):
                raise ValueError("sample_weight applies to a table in memory; a stream's rows "
                                 "count once each (repeat the rows in the stream instead)")
            if is_dask_frame(X):
                model = fit_dask(config, X, y, chunksize=chunksize)
            elif is_stream_source(X):
                model = fit_stream(config, X, y, chunksize=chunksize, sep=sep)
            else:
                frame, has_names, classes, y_codes = self._in_memory_data(X, y, chunksize,
                                                                          sample_weight)
                model = fit_in_memory(config, frame, has_names, classes, y_codes)
        # a class_weight naming a label that is not a class is refused before the fit is kept
        class_log_weights(self.class_weight, model.classes_, _class_counts(model.members_))
        self._assign(dataclasses.replace(model, fit_warnings_=tuple(warned)))
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None, *, schema: Any = None,
                    refresh: bool = True, sample_weight: Any = None) -> Self:
        """Add a chunk of rows to every member's counts and re-estimate the tables.

        The first call fixes everything but the counts, and later calls only add counts:

        * the classes: ``classes`` when given (every label the stream will hold), else the
          labels of the first chunk;
        * the coding of every column (categories, cut points, missing-value codes):
          ``schema`` when given (a fitted :class:`~fastpath.encode.TableEncoder`, or a
          mapping for :func:`fastpath.scale.declare_schema`; every member then uses it), else
          learned from the first chunk exactly as :meth:`fit` learns it;
        * every member's structure, learned from the first chunk (naive Bayes needs no data).

        A later chunk with a class, a category or a missing value outside that schema raises
        ``ValueError`` naming the call, row and column, and adds nothing. The rows are not
        kept, so m is chosen on the holdout rule over all rows seen (with ``m="auto"`` among
        the positive candidates); with ``m="holdout"`` or a fixed m, a declared schema and a
        data-independent structure, ``partial_fit`` over chunks and :meth:`fit` on their
        concatenation give the same model. :meth:`fit` discards everything ``partial_fit``
        gathered; a saved model cannot resume ``partial_fit``.

        ``refresh=False`` only adds the counts, and the tables stay those of the last
        re-estimation (useful with HDP estimates, whose sampling each re-estimation repeats):
        call :meth:`refresh_tables` (or ``partial_fit`` with ``refresh=True``) before
        predicting. Prediction never re-estimates, so it never changes the estimator.
        ``sample_weight``: whole numbers, each row counted that many times, as for :meth:`fit`.
        """
        partial: PartialFit | None = self.__dict__.get("_partial_state")
        if sample_weight is not None:  # the rows, each as many times as its weight says
            frame, has_names = self._frame(X, rows_needed=False)
            rows = multiplicity_rows(sample_weight, frame.shape[0])
            X = frame.iloc[rows].reset_index(drop=True) if has_names else (
                frame.iloc[rows].to_numpy())
            y = _take_rows(y, rows, frame.shape[0])
        with self._threads(), recording() as warned:
            if partial is not None:
                partial.add(self._validate_X(X), y)
            else:
                config = self.fit_config()
                frame, has_names = self._frame(X)
                partial = start_partial_fit(config, frame, has_names, y, classes, schema)
                self._clear_fit()
                self.classes_ = partial.classes
                self.n_features_in_ = len(partial.feature_names)
                if partial.has_names:
                    self.feature_names_in_ = np.asarray(partial.feature_names, dtype=object)
                self._partial_state = partial
            if refresh:
                self._assign(partial.refresh(), keep_partial=True)
        self._keep_warnings(partial, warned)
        return self

    def refresh_tables(self) -> Self:
        """Re-estimate the tables from every row ``partial_fit`` has counted (a no-op when
        nothing was added since the last re-estimation)."""
        partial: PartialFit | None = self.__dict__.get("_partial_state")
        if partial is None:
            raise NotFittedError(f"{type(self).__name__}.refresh_tables follows partial_fit; "
                                 "this estimator has no partial_fit counts")
        if partial.stale or "members_" not in self.__dict__:
            with self._threads(), recording() as warned:
                self._assign(partial.refresh(), keep_partial=True)
            self._keep_warnings(partial, warned)
        return self

    def _keep_warnings(self, partial: PartialFit, warned: list[str]) -> None:
        """Add a ``partial_fit`` call's warnings to those of the calls before (each once), the
        fitted model's ``fit_warnings_`` once there is one."""
        partial.warnings.extend(w for w in warned if w not in partial.warnings)
        if "members_" in self.__dict__:
            self.fit_warnings_ = tuple(partial.warnings)

    def _clear_fit(self, keep_partial: bool = False) -> None:
        for name in (*FittedModel.attribute_names(), *_PRIVATE_STATE):
            if not (keep_partial and name == "_partial_state"):
                self.__dict__.pop(name, None)

    def _assign(self, model: FittedModel, keep_partial: bool = False) -> None:
        """Replace the fitted state by ``model``'s (parameters untouched), with the plan
        every prediction reads (built now, so that predictions only read)."""
        self._clear_fit(keep_partial)
        for name, value in model.attributes().items():
            setattr(self, name, value)
        self._prediction_plan = prediction_plan(model.members_)

    def _plan(self) -> PredictionPlan:
        """The members' prediction plan: the one built with the fitted state, or, for
        members replaced since, one built for this prediction (not kept)."""
        plan = self.__dict__.get("_prediction_plan")
        return plan if is_plan_of(plan, self.members_) else prediction_plan(self.members_)

    def __getstate__(self) -> dict[str, Any]:
        # a copy: scikit-learn's is the instance's own __dict__ outside its own modules
        state = dict(super().__getstate__())
        state.pop("_prediction_plan", None)  # rebuilt from the members on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if "members_" in self.__dict__:
            self._prediction_plan = prediction_plan(self.members_)

    def _fitted_model(self) -> FittedModel:
        """The fitted state as a record (what :meth:`save` writes)."""
        return FittedModel(**{name: self.__dict__.get(name)
                              for name in FittedModel.attribute_names()})

    # ------------------------------------------------------------------ checks of X and y
    @staticmethod
    def _frame(X: Any, *, rows_needed: bool = True) -> tuple[pd.DataFrame, bool]:
        """``X`` as a DataFrame, and whether its columns are names; refuses data without
        columns, and without rows unless ``rows_needed`` is false (a prediction of zero rows is
        zero rows: a header-only file).

        Not scikit-learn's ``validate_data``: it makes ``X`` one numeric array, where a table
        here keeps each column's type (strings, categories, numbers) and a prediction's
        columns are matched to fit's by name (:meth:`_match_columns`); the messages are
        scikit-learn's."""
        frame, has_names = as_frame(X)
        if frame.shape[0] == 0 and rows_needed:
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

    def _in_memory_data(self, X: Any, y: Any, chunksize: int | None, sample_weight: Any = None
                        ) -> tuple[pd.DataFrame, bool, np.ndarray, np.ndarray]:
        """``fit``'s in-memory input, checked: the frame, whether it has column names, the
        classes and the class codes (``ValueError`` for a stream-only option or one class),
        each row as many times as ``sample_weight`` says."""
        if chunksize is not None:
            raise ValueError(
                "chunksize applies to streamed X (a path, a chunk iterator or a Dask DataFrame)"
            )
        frame, has_names = self._frame(X)
        classes, y_codes = check_labels(y, frame.shape[0])
        if sample_weight is not None:
            rows = multiplicity_rows(sample_weight, frame.shape[0])
            frame, y_codes = frame.iloc[rows].reset_index(drop=True), y_codes[rows]
            present = np.unique(y_codes)  # a class whose rows all weigh 0 is not a class
            classes, y_codes = classes[present], np.searchsorted(present, y_codes)
        check_two_classes(classes)
        return frame, has_names, classes, y_codes

    def _validate_X(self, X: Any) -> pd.DataFrame:
        """``X`` to predict on, its columns matched to those seen in fit (zero rows allowed)."""
        return self._match_columns(*self._frame(X, rows_needed=False))

    def _match_columns(self, frame: pd.DataFrame, has_names: bool) -> pd.DataFrame:
        """``frame``'s columns matched to those seen in fit: the same names in another order
        are put in fit's order; ``ValueError`` names missing and unexpected columns, or says
        the width is wrong; a warning when only one side has names."""
        fitted_names = getattr(self, "feature_names_in_", None)
        if fitted_names is not None and has_names:
            names = list(column_labels(frame.columns))
            if names == fitted_names.tolist():  # as in fit: nothing to match
                return self._check_width(frame)
            missing = [c for c in fitted_names if c not in names]
            extra = [c for c in names if c not in set(fitted_names)]
            if missing or extra:
                parts = []
                if missing:
                    parts.append(f"missing columns {missing}")
                if extra:
                    parts.append(f"unexpected columns {extra}")
                renamed = near_matches([str(c) for c in missing], [str(c) for c in extra])
                if renamed:
                    parts.append("renamed? " + ", ".join(f"{m!r} (X has {a!r})"
                                                         for m, a in renamed.items()))
                raise ValueError(
                    "The feature names should match those that were passed during fit: "
                    + "; ".join(parts)
                )
            if names != list(fitted_names):
                # same columns in another order: matched by name (documented)
                frame = frame[list(fitted_names)]
        elif fitted_names is not None and not has_names:
            warn(f"X does not have valid feature names, but {type(self).__name__} was fitted "
                 "with feature names; columns are matched by position")
            # matched by position: each column takes the name it had in fit, so that the
            # columns the fit left out (excluded_features_) are found and ignored by name
            return self._check_width(frame).set_axis(list(fitted_names), axis=1)
        elif fitted_names is None and has_names:
            warn(f"X has feature names, but {type(self).__name__} was fitted without feature "
                 "names")
            # the fit's columns were x0, x1, ... (as_frame): those, by position
            return self._check_width(frame).set_axis(
                [f"x{j}" for j in range(frame.shape[1])], axis=1)
        return self._check_width(frame)

    def _model_columns(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (checked by :meth:`_validate_X`) without the columns the fit left out."""
        return kept_columns(frame, self.__dict__.get("excluded_features_") or ())

    def _check_width(self, frame: pd.DataFrame) -> pd.DataFrame:
        if frame.shape[1] != self.n_features_in_:
            excluded = self.__dict__.get("excluded_features_") or ()
            # the width is fit's, the left-out columns included (they are ignored by position
            # or by name); a table of the kept columns only is the usual mistake
            ignored = (f" (every column seen in fit, the {len(excluded)} it leaves out "
                       f"included: {list(excluded)}, which are ignored)" if excluded else "")
            raise ValueError(
                f"X has {frame.shape[1]} features, but {type(self).__name__} is expecting "
                f"{self.n_features_in_} features as input{ignored}"
            )
        return frame

    def _class_shift(self) -> np.ndarray | None:
        """``log w`` of each class under ``class_weight`` (None: no weighting), added to the
        members' joint log likelihoods: the class prior times ``w``, renormalised
        (``"balanced"`` from the class counts of the fit, :func:`_class_counts`)."""
        # an attribute read, not get_params (scikit-learn's reads the constructor's signature
        # and every parameter on each call, a visible share of a small prediction;
        # docs/performance.md, "The members' forced cut")
        class_weight = getattr(self, "class_weight", None)
        if class_weight is None:
            return None
        return class_log_weights(class_weight, self.classes_, _class_counts(self.members_))

    def _check_fitted(self) -> None:
        if "members_" not in self.__dict__ and "_partial_state" in self.__dict__:
            raise NotFittedError(
                f"This {type(self).__name__} has partial_fit counts but no tables yet: "
                "call refresh_tables() (or partial_fit with refresh=True) first"
            )
        check_is_fitted(self, "members_")  # scikit-learn's check and message

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X: Any, *, chunksize: int | None = None, sep: str | None = None
                      ) -> np.ndarray | dask.array.Array:
        """``P(y | x)`` for every row, shape (n_samples, n_classes), columns in ``classes_``
        order: the mean of the members' posteriors.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features), TableWithTypes, a stream,
            or a Dask DataFrame
            The rows (what :func:`fastpath.read_table` returns is a table too). A *stream* is
            read ``chunksize`` rows at a time, as :meth:`fit` reads one: a path to a CSV/TSV
            (optionally compressed), Parquet or ARFF file, a binary file object of CSV
            (``sys.stdin.buffer``), or an iterator of DataFrame chunks. A
            file's columns are matched by name (others are ignored) and typed as the model
            codes them (:mod:`fastpath.scale._predict`); the result equals, bit for bit, the
            prediction of the whole table read by :func:`fastpath.io.read_table`. A
            ``dask.dataframe.DataFrame`` gives a lazy ``dask.array.Array`` (see Returns).
        chunksize : int, optional
            Streams only: rows per chunk read from a file (default 100,000). Memory follows
            it, except for the returned array itself (:meth:`iter_predict_proba` returns one
            array per chunk instead).
        sep : str, optional
            A CSV/TSV path or file object only: its field separator (default ``","``, a tab
            for ``.tsv``), as :func:`fastpath.read_table` takes it.

        Returns
        -------
        ndarray of shape (n_samples, n_classes), or dask.array.Array
            For a Dask DataFrame, a Dask array of one block per partition (float64, its
            blocks' row counts unknown until computed: ``.compute_chunk_sizes()``), each
            partition predicted where it lies, as dask-ml's ``ParallelPostFit`` does. Its
            columns are checked (and put in fit's order) when called; its values equal, bit
            for bit, ``predict_proba(ddf.compute())``.
        """
        _check_sep(X, sep)
        if is_dask_frame(X):
            return self._dask_predict(X, chunksize, "predict_proba")
        if _is_prediction_stream(X):
            return self._stream_array(X, chunksize, log=False, sep=sep)
        _no_chunksize(chunksize)
        self._check_fitted()
        frame = self._model_columns(self._validate_X(X))
        with self._threads():
            return members_proba(self.members_, frame, self._class_shift(), self._plan())

    def predict_log_proba(self, X: Any, *, chunksize: int | None = None,
                          sep: str | None = None) -> np.ndarray | dask.array.Array:
        """log of :meth:`predict_proba`, from the members' joint log likelihoods (finite where
        ``P(y | x)`` underflows); ``X``, ``chunksize``, ``sep`` and a Dask DataFrame's lazy
        result as for :meth:`predict_proba`."""
        _check_sep(X, sep)
        if is_dask_frame(X):
            return self._dask_predict(X, chunksize, "predict_log_proba")
        if _is_prediction_stream(X):
            return self._stream_array(X, chunksize, log=True, sep=sep)
        _no_chunksize(chunksize)
        self._check_fitted()
        frame = self._model_columns(self._validate_X(X))
        with self._threads():
            return members_log_proba(self.members_, frame, self._class_shift(),
                                     self._plan())

    def predict(self, X: Any, *, chunksize: int | None = None, sep: str | None = None
                ) -> np.ndarray | dask.array.Array:
        """Most probable class of every row (ties: the first class in ``classes_``); ``X``,
        ``chunksize`` and ``sep`` as for :meth:`predict_proba` (a Dask DataFrame gives a
        one-dimensional Dask array of labels, one block per partition)."""
        _check_sep(X, sep)
        if is_dask_frame(X):
            return self._dask_predict(X, chunksize, "predict")
        # checks that the model is fitted
        proba = self.predict_proba(X, chunksize=chunksize, sep=sep)
        return self.classes_[np.argmax(proba, axis=1)]

    def iter_predict_proba(self, X: Any, *, chunksize: int | None = None,
                           sep: str | None = None) -> Iterator[np.ndarray]:
        """:meth:`predict_proba` one chunk at a time: yields an array of shape
        (rows of the chunk, n_classes) per chunk, in memory that does not grow with the rows.

        Parameters
        ----------
        X : stream, or DataFrame or array-like
            A stream as for :meth:`predict_proba` (a path, a binary file object of CSV, an
            iterator of DataFrames: its chunks), or a table in memory (sliced into chunks of
            ``chunksize`` rows).
        chunksize : int, optional
            Rows per chunk (default 100,000); an iterator's chunks are its own.
        sep : str, optional
            A CSV/TSV path or file object only: its field separator.

        Yields
        ------
        ndarray of shape (n_rows_of_chunk, n_classes)
            Bit for bit the rows of ``predict_proba`` of the whole table. A bad value raises
            ``ValueError`` naming the chunk, the row in the whole stream and the column, when
            its chunk is read; a warning a chunk gives is shown once, for the first chunk
            that gives it (:mod:`fastpath.scale._predict`).
            A file that turns out not to be UTF-8 after its first chunks raises
            ``ValueError``; :meth:`predict_proba` reads it again as Latin-1.
        """
        _check_sep(X, sep)
        if not _is_prediction_stream(X):
            self._check_fitted()
            frame = self._model_columns(self._validate_X(X))
            size = check_chunksize(chunksize)
            shift = self._class_shift()
            plan = self._plan()
            for start in range(0, frame.shape[0], size):
                with self._threads():
                    yield members_proba(self.members_, frame.iloc[start:start + size], shift,
                                        plan)
            return
        for _, proba in self._predicted_chunks(X, chunksize, sep=sep):
            yield proba

    # ------------------------------------------------------------------ explanations
    def _used_feature_names(self) -> list[str]:
        """The names of the columns the members code (``x<j>`` for a table without names),
        those the fit left out excepted."""
        names = self.__dict__.get("feature_names_in_")
        names = ([str(n) for n in names] if names is not None
                 else [f"x{j}" for j in range(self.n_features_in_)])
        gone = set(self.__dict__.get("excluded_features_") or ())
        return [n for n in names if n not in gone]

    def explain(self, X: Any) -> Explanation:
        """Exact explanation of every row's ``log P(y | x)``: the class prior's term and each
        attribute's ``log P(x_i | y, pa_i)``, which with the normaliser (and, for an ensemble,
        the members' disagreement) sum to :meth:`predict_log_proba`
        (:mod:`fastpath.pipeline._explain`).

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            The rows, as for :meth:`predict_proba` (a stream: :meth:`iter_explain`).

        Returns
        -------
        Explanation
            ``.contributions`` (rows, attributes, classes), ``.prior``, ``.log_normaliser``,
            ``.ensemble_gap``, ``.unknown`` (values marginalised out), ``.log_odds()`` for two
            classes, ``.importance()`` and ``.to_frame()``.
        """
        if _is_prediction_stream(X) or is_dask_frame(X):
            raise TypeError("explain takes a table in memory; iter_explain reads a stream "
                            "(a path, a file object or an iterator of DataFrames) chunk by "
                            "chunk")
        self._check_fitted()
        frame = self._model_columns(self._validate_X(X))
        with self._threads():
            return members_explain(self.members_, frame, self.classes_,
                                   self._used_feature_names(), self._class_shift(),
                                   self._plan())

    def iter_explain(self, X: Any, *, chunksize: int | None = None) -> Iterator[Explanation]:
        """:meth:`explain` one chunk at a time, in memory that does not grow with the rows:
        ``X`` and ``chunksize`` as for :meth:`iter_predict_proba` (a stream's chunks, or a
        table in memory sliced into chunks)."""
        if not _is_prediction_stream(X):
            self._check_fitted()
            frame = self._model_columns(self._validate_X(X))
            size = check_chunksize(chunksize)
            for start in range(0, frame.shape[0], size):
                with self._threads():
                    yield members_explain(self.members_, frame.iloc[start:start + size],
                                          self.classes_, self._used_feature_names(),
                                          self._class_shift(), self._plan())
            return
        names = self._used_feature_names()

        def explained(members, frame, shift, plan):
            return members_explain(members, frame, self.classes_, names, shift, plan)

        for _, explanation in self._predicted_chunks(X, chunksize, predict=explained):
            yield explanation

    def structure_information(self) -> pd.Series:
        """Each attribute's empirical ``I(X_i; Y | Pa_i)`` (nats) given its parents in the
        learnt structure, from the training counts (an ensemble's: the members' mean),
        largest first: the structure's global importance of the attributes
        (:func:`fastpath.pipeline._explain.structure_information`)."""
        self._check_fitted()
        return structure_information(self.members_, self._used_feature_names())

    # ------------------------------------------------------------------ credible intervals
    def predict_proba_draws(self, X: Any, *, n_draws: int | None = None,
                            random_state: int = 0) -> np.ndarray:
        """``P(y | x)`` of every row under posterior draws of the HDP tables, shape
        (n_draws, n_samples, n_classes) (:mod:`fastpath.pipeline._intervals`): needs a fit
        whose sampler kept its draws, ``sampler=clf.hdp_options().replace(record_draws=True)``.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features)
            The rows, as for :meth:`predict_proba` (in memory).
        n_draws : int, optional
            Draws used, evenly spaced among those each tree kept (default 200; at most the
            smallest tree's number).
        random_state : int, default=0
            Seed of the draws of the nodes the training rows never reached (the same seed
            gives the same numbers for any ``n_jobs``).
        """
        if _is_prediction_stream(X) or is_dask_frame(X):
            raise TypeError("credible intervals take a table in memory (read a file with "
                            "fastpath.io.read_table, or pass its chunks one at a time)")
        self._check_fitted()
        frame = self._model_columns(self._validate_X(X))
        draws = model_draws(self.members_, self.__dict__.get("posterior_draws_")
                            or self.__dict__.get("hdp_results_"), n_draws)
        with self._threads():
            return members_proba_draws(self.members_, draws, frame, self._class_shift(),
                                       self._plan(), seed=random_state)

    def predict_quantiles(self, X: Any, quantiles: Sequence[float], *,
                          n_draws: int | None = None, random_state: int = 0) -> np.ndarray:
        """Quantiles of ``P(y | x)`` under the tables' posterior, shape (len(quantiles),
        n_samples, n_classes), from :meth:`predict_proba_draws` (numpy's linear quantiles of
        the draws)."""
        q = np.asarray(quantiles, dtype=float).reshape(-1)
        if q.size == 0 or not ((q >= 0) & (q <= 1)).all():
            raise ValueError(f"quantiles must be numbers in [0, 1], got {quantiles!r}")
        draws = self.predict_proba_draws(X, n_draws=n_draws, random_state=random_state)
        return np.quantile(draws, q, axis=0)

    def predict_interval(self, X: Any, level: float = 0.9, *, n_draws: int | None = None,
                         random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """The equal-tailed credible interval of ``P(y | x)`` of probability ``level``: its
        lower and upper ends, each (n_samples, n_classes) (:meth:`predict_quantiles` at
        ``(1 - level) / 2`` and ``(1 + level) / 2``). It covers the tables' posterior given
        the structure (an ensemble's: given its members' structures), not the structure's
        uncertainty."""
        if not (isinstance(level, int | float) and 0 < level < 1):
            raise ValueError(f"level must be a probability in (0, 1), got {level!r}")
        low, high = self.predict_quantiles(X, [(1 - level) / 2, (1 + level) / 2],
                                           n_draws=n_draws, random_state=random_state)
        return low, high

    def _dask_predict(self, X: Any, chunksize: int | None, method: str) -> dask.array.Array:
        """``method`` (``"predict_proba"``, ``"predict_log_proba"`` or ``"predict"``) of the
        Dask DataFrame ``X``: a Dask array with one block per partition, each the in-memory
        method of that partition. Fitted state and columns are checked now, on the frame's
        metadata (a wrong column set raises here, not when computed); the graph holds a
        shallow copy of the model, so a later fit does not change what it computes."""
        if chunksize is not None:
            raise ValueError("chunksize does not apply to a Dask DataFrame: each partition is "
                             "predicted whole (ddf.repartition changes their size)")
        if not hasattr(X, "map_partitions"):  # a Dask array: no columns to check or match
            raise TypeError(f"X is a {type(X).__name__} of Dask: predict_proba takes a Dask "
                            "DataFrame (dask.dataframe.from_dask_array(X), with the columns' "
                            "names) or a table in memory")
        self._check_fitted()
        self._match_columns(*as_frame(X._meta))
        if method == "predict":
            meta = np.empty((0,), dtype=self.classes_.dtype)
        else:
            meta = np.empty((0, len(self.classes_)), dtype=np.float64)
        return X.map_partitions(_predict_partition, copy.copy(self), method, meta=meta)

    def _stream_array(self, X: Any, chunksize: int | None, *, log: bool,
                      sep: str | None = None) -> np.ndarray:
        """The predictions of a stream as one array; a file that is not UTF-8 after its first
        chunks is read again as Latin-1 (what :func:`fastpath.io.read_table` does)."""
        try:
            parts = [p for _, p in self._predicted_chunks(X, chunksize, log=log, sep=sep)]
        except EncodingError:
            parts = [p for _, p in self._predicted_chunks(X, chunksize, log=log,
                                                          encoding="latin-1", sep=sep)]
        return np.concatenate(parts) if parts else np.empty((0, len(self.classes_)))

    def _predicted_chunks(self, X: Any, chunksize: int | None, *, keep: Sequence[str] = (),
                          log: bool = False, encoding: str | None = None,
                          sep: str | None = None, predict: Any = None
                          ) -> Iterator[tuple[PredictionChunk, Any]]:
        """Each chunk of the stream ``X`` (:func:`fastpath.scale._predict.prediction_chunks`,
        ``keep``: columns carried through, e.g. an id; ``sep``: a CSV's separator) with its
        predictions (``predict``: what to compute instead, a function of the members, the
        chunk's frame, the class shift and the plan, as :func:`members_proba`)."""
        self._check_fitted()
        if is_dask_frame(X):
            raise TypeError("iter_predict_proba does not read a Dask DataFrame: "
                            "predict_proba(ddf) returns a Dask array, one block per partition "
                            "(its .blocks, or .to_delayed(), one at a time)")
        size = check_chunksize(chunksize)
        names = self.__dict__.get("feature_names_in_")
        plans = None if names is None else column_plans(
            [member.encoder.codings_ for member in self.members_], [str(n) for n in names],
            excluded=[str(n) for n in self.__dict__.get("excluded_features_") or ()])
        if predict is None:
            predict = members_log_proba if log else members_proba
        shift = self._class_shift()
        plan = self._plan()
        shown: set[tuple[type[Warning], str]] = set()
        for chunk in prediction_chunks(X, plans, chunksize=size, keep=keep, encoding=encoding,
                                       sep=sep):
            try:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    frame = self._model_columns(self._validate_X(chunk.features))
                    with self._threads():
                        proba = predict(self.members_, frame, shift, plan)
            except StreamError:
                raise
            except ValueError as exc:  # the encoder's rows are the chunk's: the stream's here
                raise StreamError(relabel_rows(str(exc), chunk.where)) from None
            for w in caught:
                # the encoder warns once per column and call, so once per chunk here: each
                # kind of warning is shown once, naming its first chunk
                kind = re.sub(r"\d+", "#", str(w.message))
                if (w.category, kind) not in shown:
                    shown.add((w.category, kind))
                    warn(f"{chunk.where}: {w.message} (not repeated for later chunks)",
                         w.category)
            yield chunk, proba

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

    # ------------------------------------------------------------------ persistence
    def save(self, path: Any) -> None:
        """Save the fitted model as arrays + JSON in one ``.npz`` file (no pickle)."""
        self._check_fitted()
        save_model(type(self).__name__, self.get_params(), self._fitted_model(), path)

    @classmethod
    def load(cls, path: Any) -> Self:
        """Load a model written by :meth:`save` (never unpickles anything). A file that is not
        a model of this class raises :class:`~fastpath.classifier.ModelFileError` (a
        ``ValueError``) naming it and what is wrong; a missing one ``FileNotFoundError``."""
        params, model = read_model(path, cls.__name__)
        try:
            est = cls(**params)
            est.fit_config()  # every parameter checked, as a fit would
        except (TypeError, ValueError) as exc:
            raise ModelFileError(f"{os.fspath(path)!r} is not a valid hdpbn model file: its "
                                 f"parameters are not {cls.__name__}'s ({exc})") from None
        est._assign(model)
        return est
