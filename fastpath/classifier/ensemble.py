"""ESKDB: an ensemble of selective kDB classifiers with HDP (or m-) estimates.

Zhang, Petitjean & Buntine, *Bayesian network classifiers using ensembles and smoothing*,
Knowledge and Information Systems 62 (2020). The members differ by their attribute order (drawn
by ``I(X_j; Y)``) and, on numeric columns, by a stochastic MDL discretisation; each is a selective
kDB whose tables are estimated like :class:`~fastpath.BayesNetClassifier`'s
(:mod:`fastpath.pipeline.ensemble`). Streams and Dask DataFrames are fitted out of core with
every member's statistics in the same passes (:mod:`fastpath.scale.ensemble`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from ..pipeline.config import FitConfig
from ..pipeline.ensemble import (
    FittedEnsemble,
    ensemble_proba,
    fit_ensemble_in_memory,
    member_codes,
)
from ..predict.inference import joint_log_likelihood
from ..scale.ensemble import fit_ensemble_dask, fit_ensemble_stream
from ..scale.partial import PartialEnsemble, start_partial_ensemble
from ..scale.sources import is_dask_frame, is_stream_source
from ..utils.validation import check_int
from .base import TabularInput
from .model_io import read_ensemble, save_ensemble

__all__ = ["ESKDBClassifier"]


class ESKDBClassifier(TabularInput, ClassifierMixin, BaseEstimator):
    """Ensemble of selective kDB classifiers (ESKDB), averaged posteriors.

    Parameters
    ----------
    n_estimators : int, default=20
        Members (the authors' scripts use 20).
    k : int, default=5
        ``K`` of every member's selective kDB (the authors' default).
    estimator : {"hdp", "m"}, default="hdp"
        How the members' tables are estimated (``"m"``: the ablation without HDP smoothing).
    stochastic_discretization : bool, default=True
        Each member cuts numeric columns with its own stochastic MDL
        (:func:`~fastpath.encode.stochastic_mdl_cut_points`); ``False``: every member uses
        Weka's MDL cut points.
    m, m_backoff, categorical_features
        As for :class:`~fastpath.BayesNetClassifier` (``m`` is chosen per member, with the
        back-off ``m_backoff`` the members' m-estimates use).
    sampler, n_iter, min_iter, max_iter, burn_in, tying, update, root, n_chains, \
concentration_shape, concentration_rate, concentration_every, alpha0, overrelax, \
mcse_tolerance, mcse_weighting, convergence_checks
        The members' HDP sampler, with the presets and options of
        :class:`~fastpath.BayesNetClassifier` and the same rule: each tree sampled until the
        Monte-Carlo error of what its rows read is at most ``mcse_tolerance``. The default
        preset, ``"adaptive-plain"``, makes the moves the paper's plain ones: the average of
        the members divides their Monte-Carlo errors, and the overrelaxed moves of
        ``"adaptive"`` (the single classifier's default) gave the same accuracy at 1.7x the
        sampling time over 41 datasets (docs/performance.md, "The default sampler"). The
        authors ran ``sampler="paper", n_iter=1000``.
    n_jobs : int or None, default=None
        Threads (``None`` or -1: all cores). Results do not depend on it.
    random_state : int, numpy Generator or None, default=None
        Seed of the members' orders, discretisations, m holdouts and samplers.
    verbose : int, default=0
        ``1``: say on standard error what the fit is doing (a line per stage: coding,
        structure, counting or each pass over the data, the choice of m; a progress bar with
        an ETA for the HDP sampler). Does not change the result.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Only when ``X`` was a DataFrame with string column names.
    members_ : list of fastpath.pipeline.ensemble.Member
        Every member's encoder (its cut points), attribute order, selection (``n*``, ``k*``,
        leave-one-out RMSE), context trees and probability tables.
    hdp_results_ : list of fastpath.estimate.HDPResult
        ``estimator="hdp"``: the sampler's output for every distinct tree of the members (a
        tree that several members share -- same child, parents and coding -- is sampled once),
        in member order. Not saved in model files.
    diagnostics_ : fastpath.estimate.FitDiagnostics
        ``estimator="hdp"``: R-hat and bulk ESS of every tree (named ``member e: P(...)``).
    n_passes_ : int
        Out-of-core fits only: the passes made over the data (for every member at once).
    """

    def __init__(
        self,
        n_estimators: int = 20,
        k: int = 5,
        estimator: str = "hdp",
        *,
        stochastic_discretization: bool = True,
        m: float | str = "auto",
        m_backoff: str = "path",
        categorical_features: Any = "auto",
        sampler: str = "adaptive-plain",
        n_iter: int | str | None = None,
        min_iter: int | None = None,
        max_iter: int | None = None,
        burn_in: int | None = None,
        tying: str = "level",
        update: str = "exact",
        root: str = "exact",
        n_chains: int = 1,
        concentration_shape: float = 2.0,
        concentration_rate: float = 1.0,
        concentration_every: int | None = None,
        alpha0: float = 2.0,
        overrelax: bool | None = None,
        mcse_tolerance: float | None = None,
        mcse_weighting: str | None = None,
        convergence_checks: bool | None = None,
        n_jobs: int | None = None,
        random_state: Any = None,
        verbose: int = 0,
    ) -> None:
        self.n_estimators = n_estimators
        self.k = k
        self.estimator = estimator
        self.stochastic_discretization = stochastic_discretization
        self.m = m
        self.m_backoff = m_backoff
        self.categorical_features = categorical_features
        self.sampler = sampler
        self.n_iter = n_iter
        self.min_iter = min_iter
        self.max_iter = max_iter
        self.burn_in = burn_in
        self.tying = tying
        self.update = update
        self.root = root
        self.n_chains = n_chains
        self.concentration_shape = concentration_shape
        self.concentration_rate = concentration_rate
        self.concentration_every = concentration_every
        self.alpha0 = alpha0
        self.overrelax = overrelax
        self.mcse_tolerance = mcse_tolerance
        self.mcse_weighting = mcse_weighting
        self.convergence_checks = convergence_checks
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def fit_config(self) -> FitConfig:
        """The members' checked parameters (``ValueError`` naming a bad one, before any work)."""
        params = self.get_params()
        check_int("n_estimators", params.pop("n_estimators"), 1)
        if not isinstance(params.pop("stochastic_discretization"), bool | np.bool_):
            raise ValueError("stochastic_discretization must be a bool, got "
                             f"{self.stochastic_discretization!r}")
        return FitConfig.from_params({**params, "structure": "skdb"})


    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any = None, *, chunksize: int | None = None) -> ESKDBClassifier:
        """Fit every member on ``X`` (a table, nominal and numeric columns, missing values as a
        value of their own) and the class labels ``y``. The estimator is updated only when the
        fit succeeds.

        ``X`` may be a stream, fitted out of core as for
        :meth:`BayesNetClassifier.fit <fastpath.BayesNetClassifier.fit>`: a path to a CSV/TSV
        or Parquet file, a callable returning an iterator of DataFrame chunks, an iterator of
        chunks, or a ``dask.dataframe.DataFrame``; ``y`` then names the target column (default:
        the last) and ``chunksize`` sets the rows per chunk. Every member's statistics are
        gathered in the same passes (:mod:`fastpath.scale.ensemble`).
        """
        config = self.fit_config()
        n_members, stochastic = int(self.n_estimators), bool(self.stochastic_discretization)
        if is_dask_frame(X):
            model = fit_ensemble_dask(config, n_members, stochastic, X, y, chunksize=chunksize,
                                      stacklevel=2)
        elif is_stream_source(X):
            model = fit_ensemble_stream(config, n_members, stochastic, X, y,
                                        chunksize=chunksize, stacklevel=2)
        else:
            frame, has_names, classes, y_codes = self._in_memory_data(X, y, chunksize)
            model = fit_ensemble_in_memory(config, n_members, stochastic, frame, has_names,
                                           classes, y_codes, stacklevel=2)
        self._assign(model)
        return self

    def partial_fit(self, X: Any, y: Any, classes: Any = None) -> ESKDBClassifier:
        """Add a chunk of rows to every member's counts; the next prediction re-estimates.

        The first call fixes the classes (``classes`` when given, else the first chunk's) and
        learns every member's coding, attribute order and selective kDB from its chunk, as
        :meth:`fit` would on it; later calls code each chunk once per member and only add
        counts (a value outside a member's coding raises ``ValueError`` naming the call, row
        and column, and adds nothing). m is chosen at re-estimation on the holdout rule
        (:meth:`BayesNetClassifier.partial_fit <fastpath.BayesNetClassifier.partial_fit>`).
        :meth:`fit` discards what ``partial_fit`` gathered.
        """
        partial: PartialEnsemble | None = self.__dict__.get("_partial_state")
        if partial is not None:
            partial.add(self._validate_X(X), y)
            return self
        config = self.fit_config()
        frame, has_names = self._frame(X)
        partial = start_partial_ensemble(config, int(self.n_estimators),
                                         bool(self.stochastic_discretization), frame,
                                         has_names, y, classes)
        self._clear_fit()
        first = partial.members[0]
        self.classes_ = first.classes
        self.n_features_in_ = first.n_features_in
        if first.feature_names_in is not None:
            self.feature_names_in_ = first.feature_names_in
        self._partial_state = partial
        return self

    def _check_fitted(self) -> None:
        """Re-estimate after ``partial_fit`` if rows were added, then check the fit."""
        partial: PartialEnsemble | None = self.__dict__.get("_partial_state")
        if partial is not None and partial.stale:
            self._assign(partial.refresh(stacklevel=5), keep_partial=True)
        check_is_fitted(self, "members_")

    def _clear_fit(self, keep_partial: bool = False) -> None:
        for name in ("classes_", "n_features_in_", "feature_names_in_", "members_",
                     "hdp_results_", "diagnostics_", "n_passes_", "_partial_state"):
            if not (keep_partial and name == "_partial_state"):
                self.__dict__.pop(name, None)

    def _assign(self, model: FittedEnsemble, keep_partial: bool = False) -> None:
        self._clear_fit(keep_partial)
        for name in ("classes_", "n_features_in_", "feature_names_in_", "members_",
                     "hdp_results_", "diagnostics_", "n_passes_"):
            value = getattr(model, name)
            if value is not None:
                setattr(self, name, value)

    # ------------------------------------------------------------------ predict
    def predict_proba(self, X: Any) -> np.ndarray:
        """Mean of the members' ``P(y | x)``, shape (n_samples, n_classes), in ``classes_``
        order."""
        self._check_fitted()
        return ensemble_proba(self.members_, self._validate_X(X))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """log of :meth:`predict_proba`, from the members' joint log likelihoods (finite where a
        member's posterior underflows)."""
        self._check_fitted()
        frame = self._validate_X(X)
        logs = []
        for member, codes in zip(self.members_, member_codes(self.members_, frame), strict=True):
            joint = joint_log_likelihood(member.pack(), codes)
            with np.errstate(invalid="ignore"):
                logs.append(joint - logsumexp(joint, axis=1, keepdims=True))
        return logsumexp(np.stack(logs), axis=0) - math.log(len(logs))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class of every row (ties: the first class in ``classes_``)."""
        proba = self.predict_proba(X)  # checks that the ensemble is fitted
        return self.classes_[np.argmax(proba, axis=1)]

    # ------------------------------------------------------------------ persistence
    def save(self, path: Any) -> None:
        """Save the fitted ensemble as arrays + JSON in one ``.npz`` file (no pickle)."""
        self._check_fitted()
        save_ensemble(self.get_params(), FittedEnsemble(
            classes_=self.classes_,
            n_features_in_=self.n_features_in_,
            feature_names_in_=getattr(self, "feature_names_in_", None),
            members_=self.members_,
            diagnostics_=getattr(self, "diagnostics_", None),
        ), path)

    @classmethod
    def load(cls, path: Any) -> ESKDBClassifier:
        """Load an ensemble written by :meth:`save` (never unpickles anything)."""
        params, model = read_ensemble(path)
        est = cls(**params)
        est._assign(model)
        return est
