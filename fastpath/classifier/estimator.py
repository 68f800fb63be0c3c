"""The scikit-learn compatible Bayesian network classifier: the top layer of fastpath.

It checks what the user passes, hands the data to a driver (:func:`fastpath.pipeline.
fit_in_memory`, :func:`fastpath.scale.fit_stream`, :func:`fastpath.scale.dask.fit_dask` or the
``partial_fit`` counts of :mod:`fastpath.scale.partial`), assigns the learned state the driver
returns (:class:`~fastpath.pipeline.FittedModel`) and predicts with it
(:mod:`fastpath.predict.inference`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from ..pipeline.config import STRUCTURES, FitConfig
from ..pipeline.fitted import FittedModel
from ..pipeline.memory import fit_in_memory
from ..pipeline.stages import pack
from ..predict.inference import joint_log_likelihood, posterior_from_joint
from ..scale.dask import fit_dask
from ..scale.partial import PartialFit, start_partial_fit
from ..scale.passes import fit_stream
from ..scale.sources import is_dask_frame, is_stream_source
from .base import TabularInput
from .model_io import read_model, save_model

__all__ = ["STRUCTURES", "BayesNetClassifier", "NotFittedError"]

# Attributes that are neither parameters nor in FittedModel but belong to a fit.
_PRIVATE_STATE = ("_packed", "_partial_state")



class BayesNetClassifier(TabularInput, ClassifierMixin, BaseEstimator):
    """Bayesian network classifier with m-estimates or HDP estimates of its tables.

    Parameters
    ----------
    structure : {"nb", "tan", "kdb", "skdb"}, default="kdb"
        Naive Bayes; tree-augmented naive Bayes (Chow–Liu tree on I(X_i; X_j | Y)); kDB-k
        (attributes by I(X; Y), each with up to ``k`` earlier parents by I(X_i; X_j | Y)); or
        selective kDB (the kDB over the n* best attributes with k* <= k parents that minimises
        the leave-one-out RMSE, see :mod:`fastpath.structure.selective`).
    k : int, default=1
        Maximum number of attribute parents for ``"kdb"`` and ``"skdb"`` (ignored otherwise).
    estimator : {"hdp", "m"}, default="hdp"
        How conditional probability tables are estimated: the hierarchical Dirichlet process
        (the paper's method, sampled as ``sampler`` says) or m-estimates with back-off (the
        paper's baseline; no sampling, so the fastest fit).
    m : float, "auto" or "holdout", default="auto"
        m-estimate mass. ``"auto"`` chooses it from ``{0.05, 0.2, 1, 5, 20}`` by the
        leave-one-out RMSE of the whole model over every training row (each row predicted from
        the counts without it; one extra pass out of core): stable, and never 0, so no value
        that training could have shown gets probability exactly 0. ``"holdout"`` is the
        paper's rule: ``{0, 0.05, 0.2, 1, 5, 20}`` scored on a holdout of ``min(N/10, 5000)``
        training rows, then a refit on all rows; the holdout is the rows with the smallest
        seeded hash of their index (:func:`fastpath.pipeline.holdout.holdout_rows`), so
        streaming fits hold out the same rows. ``m=0`` (maximum likelihood) only when given.
    m_backoff : {"path", "value"}, default="path"
        When an m-estimate backs off (:func:`fastpath.estimate.m_estimate_table`). ``"path"``:
        a query whose conditioning path was never seen is answered at the deepest node of the
        path that exists, where every value gets that node's m-estimate. ``"value"``: the rule
        the paper printed, read literally ("if count(x4, x0, x3) is equal to zero, then
        p(x4 | x0) is considered instead of p(x4 | x0, x3)"): in addition, a value whose joint
        count with the node's path is zero takes the m-estimate of the deepest ancestor where
        its count is non-zero, and rows are not renormalised. ``"path"`` keeps the informative
        zeros of deterministic data (a stronger baseline). With ``m="auto"`` or ``"holdout"``
        the candidates are scored with the same rule.
    categorical_features : "auto", list of names/indices or boolean mask, default="auto"
        Nominal columns; the others are discretised with MDL. ``"auto"``: non-numeric dtypes
        (a text column that is at least 95 % numbers is numeric, its other values missing, with
        a warning). A list or mask *adds* nominal columns (e.g. integer-coded categories): text
        and categorical columns stay nominal (see :class:`~fastpath.encode.TableEncoder`).
    sampler : {"adaptive", "adaptive-plain", "strict", "paper"}, default="adaptive"
        The HDP sampler's preset (``estimator="hdp"``; :data:`fastpath.estimate.hdp.options.
        SAMPLER_PRESETS`). ``"adaptive"``: exact overrelaxed moves, concentrations every
        iteration, each tree sampled until the Monte-Carlo standard error of what the training
        rows read is at most ``mcse_tolerance`` (root mean square over the rows; with
        ``n_chains >= 2`` including how far the chains disagree): at least ``min_iter`` = 500
        and at most ``max_iter`` = 5,000 iterations. Over 41 datasets it gives the paper
        sampler's accuracy at a fraction of its time (docs/performance.md, "The default
        sampler"). ``"adaptive-plain"``: the same rule with the paper's plain moves (faster per
        tree, less precise). ``"strict"`` (formerly ``"fast"``): overrelaxed moves, every
        probability of every node within the tolerance, and the concentrations and log joint
        past R-hat <= 1.01 and bulk ESS >= 100 per chain -- slower than ``"paper"``.
        ``"paper"``: the paper's and the reference's sampler, 5,000 plain Gibbs iterations
        (what the experiments run). The sampler options below override the preset.
    n_iter : int, "auto" or None, default=None
        Iterations per chain; ``"auto"``: the adaptive length above. ``None``: the preset's.
    min_iter, max_iter : int or None, default=None
        The fewest and the most iterations per chain of an adaptive length (``None``: 500 and
        5,000).
    burn_in, tying, update, root, n_chains
        Options of the HDP sampler (``estimator="hdp"``); see
        :class:`fastpath.estimate.HDPOptions` (:meth:`hdp_options` builds it).
    concentration_shape, concentration_rate, concentration_every, alpha0
        The sampler's Gamma prior of the concentrations, how often they are re-sampled
        (``None``: the preset's; ``5`` is the reference's schedule, ``1`` mixes them 3-5 times
        faster per second, docs/validation.md, "Efficiency"), and the root concentration.
    overrelax : bool or None, default=None
        Overrelaxed table-count and concentration updates (``update="exact"`` only; see
        :class:`fastpath.estimate.HDPOptions`): still exact, 2-5x the ESS per iteration for
        about 8 % more time. ``None``: the preset's.
    mcse_tolerance, mcse_weighting, convergence_checks : default None
        The rule (:class:`fastpath.estimate.HDPOptions`): the MCSE tolerance (0.01), what it
        applies to (``"rows"``: the root mean square over the training rows of what each
        reads; ``"max"``: every probability), and whether the concentrations' and log joint's
        R-hat/ESS checks must also pass. ``None``: the preset's. A fit whose estimates end
        above the tolerance (or whose chains disagree) warns; the warning names the trees and
        the option to change.
    n_jobs : int or None, default=None
        Threads for the HDP sampler (``None``: all cores). Results do not depend on it.
    random_state : int, numpy Generator or None, default=None
        Seed of the m holdout split and of the sampler. An int gives identical results.
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
    encoder_ : TableEncoder
    structure_ : fastpath.structure.Structure
        Parents of every attribute (``structure_.parents``), exportable with
        ``structure_.to_dot()`` and ``structure_.to_networkx()``.
    selection_ : fastpath.structure.SelectedStructure
        ``structure="skdb"`` only: the selected ``n_selected`` attributes and ``k_selected``
        parents, and the leave-one-out RMSE of every candidate.
    trees_ : list of ContextTree
        The class prior's tree first, then one per attribute (``tree_specs_`` says which).
    probability_tables_ : list of ndarray
        The estimate at every node of every tree (read-only).
    m_ : float
        The m used (``estimator="m"``).
    m_scores_ : dict
        RMSE of each candidate m: leave-one-out (``m="auto"``) or on the holdout
        (``m="holdout"``, and ``partial_fit``).
    hdp_results_ : list of fastpath.estimate.HDPResult
        ``estimator="hdp"``: the sampler's output for every tree (posterior means, MCSE,
        traces, ``to_arviz()``). Not saved in model files.
    diagnostics_ : fastpath.estimate.FitDiagnostics
        ``estimator="hdp"``: every tree's iterations, the MCSE of what its rows read (and with
        two or more chains the R-hat of the rows' probabilities), and the R-hat and bulk ESS of
        its concentrations and log joint (``diagnostics_.summary()``,
        ``diagnostics_.to_frame()``). An :class:`~fastpath.UnconvergedWarning` (a scikit-learn
        ``ConvergenceWarning``) naming the trees and the option to change is raised when a
        tree's estimates are not certified (:mod:`fastpath.estimate.diagnostics`).
    """

    def __init__(
        self,
        structure: str = "kdb",
        k: int = 1,
        estimator: str = "hdp",
        *,
        m: float | str = "auto",
        m_backoff: str = "path",
        categorical_features: Any = "auto",
        sampler: str = "adaptive",
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
        self.structure = structure
        self.k = k
        self.estimator = estimator
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
        """The checked parameters (``ValueError`` naming a bad one, before any work)."""
        return FitConfig.from_params(self.get_params())


    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any = None, *, chunksize: int | None = None) -> BayesNetClassifier:
        """Learn the discretisation, the structure and the probability tables.

        The estimator is updated only when the fit succeeds: after an error it is exactly as
        before the call.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features), or a stream
            Nominal and numeric columns; missing values (NaN/None) are a value of their own.
            A *stream* is fitted out of core in a few passes (:mod:`fastpath.scale`): a path
            to a CSV/TSV (optionally compressed) or Parquet file, a callable returning a fresh
            iterator of DataFrame chunks, an iterator of DataFrame chunks (spilled to a
            temporary directory, as it can be read only once), or a ``dask.dataframe.DataFrame``
            (:mod:`fastpath.scale.dask`). A stream's chunks hold the target column too.
        y : array-like of shape (n_samples,), or str
            Class labels (no missing values). For a stream: the name of the target column
            (default: the last column).
        chunksize : int, optional
            Streams only: rows per chunk read from a file (default 100,000), or per block of
            a Dask partition. Memory grows with it, not with the number of rows.
        """
        config = self.fit_config()
        if is_dask_frame(X):
            model = fit_dask(config, X, y, chunksize=chunksize, stacklevel=2)
        elif is_stream_source(X):
            model = fit_stream(config, X, y, chunksize=chunksize, stacklevel=2)
        else:
            frame, has_names, classes, y_codes = self._in_memory_data(X, y, chunksize)
            model = fit_in_memory(config, frame, has_names, classes, y_codes, stacklevel=2)
        self._assign(model)
        return self

    def partial_fit(
        self, X: Any, y: Any, classes: Any = None, *, schema: Any = None
    ) -> BayesNetClassifier:
        """Add a chunk of rows to the counts; the next prediction re-estimates the tables.

        The first call fixes everything but the counts, and later calls only add counts:

        * the classes: ``classes`` when given (every label the stream will hold), else the
          labels of the first chunk;
        * the coding of every column (categories, MDL cut points, missing-value codes):
          ``schema`` when given (a fitted :class:`~fastpath.encode.TableEncoder`, or a
          mapping for :func:`fastpath.scale.declare_schema`), else learned from the first
          chunk exactly as :meth:`fit` learns it;
        * the structure (and for ``"skdb"`` the selected attributes), learned from the first
          chunk (naive Bayes needs no data).

        A later chunk with a class, a category or a missing value outside that schema raises
        ``ValueError`` naming the call, row and column, and adds nothing. The rows are not
        kept, so m is chosen at re-estimation on the holdout rule over all rows seen (with
        ``m="auto"`` among the positive candidates); with ``m="holdout"`` or a fixed m, a
        declared schema and a data-independent structure, ``partial_fit`` over chunks and
        :meth:`fit` on their concatenation give the same model. :meth:`fit` discards
        everything ``partial_fit`` gathered; a saved model cannot resume ``partial_fit``.
        ``trees_`` and ``probability_tables_`` are those of the last re-estimation (the first
        prediction after a ``partial_fit`` runs it).
        """
        partial: PartialFit | None = self.__dict__.get("_partial_state")
        if partial is not None:
            partial.add(self._validate_X(X), y)
            return self
        config = self.fit_config()
        frame, has_names = self._frame(X)
        partial = start_partial_fit(config, frame, has_names, y, classes, schema)
        self._clear_fit()
        self.classes_ = partial.classes
        self.n_features_in_ = partial.n_features_in
        if partial.feature_names_in is not None:
            self.feature_names_in_ = partial.feature_names_in
        self.encoder_ = partial.encoder
        self.structure_ = partial.learned.structure
        self.tree_specs_ = partial.specs
        if partial.learned.selection is not None:
            self.selection_ = partial.learned.selection
        self._partial_state = partial
        return self

    def _refresh_partial(self) -> None:
        """Lazy re-estimation after ``partial_fit`` (called before every prediction)."""
        partial: PartialFit | None = self.__dict__.get("_partial_state")
        if partial is not None and partial.stale:
            self._assign(partial.refresh(stacklevel=5), keep_partial=True)

    def _clear_fit(self, keep_partial: bool = False) -> None:
        for name in (*FittedModel.attribute_names(), *_PRIVATE_STATE):
            if not (keep_partial and name == "_partial_state"):
                self.__dict__.pop(name, None)

    def _assign(self, model: FittedModel, keep_partial: bool = False) -> None:
        """Replace the fitted state by ``model``'s (parameters untouched)."""
        self._clear_fit(keep_partial)
        for name, value in model.attributes().items():
            setattr(self, name, value)
        self._packed = pack(self.tree_specs_, self.trees_, self.probability_tables_)

    # ------------------------------------------------------------------ predict
    def _check_fitted(self) -> None:
        self._refresh_partial()
        check_is_fitted(self, "_packed")

    def transform_codes(self, X: Any) -> np.ndarray:
        """Integer codes of ``X`` as the model sees them (``-1`` = unseen in training)."""
        self._check_fitted()
        return self.encoder_.transform(self._validate_X(X))

    def predict_joint_log_proba(self, X: Any) -> np.ndarray:
        """log P(y, x) for every row and class, shape (n_samples, n_classes)."""
        codes = self.transform_codes(X)  # checks that the model is fitted
        return joint_log_likelihood(self._packed, codes)

    def predict_proba(self, X: Any) -> np.ndarray:
        """P(y | x) for every row, shape (n_samples, n_classes), columns in ``classes_`` order."""
        return posterior_from_joint(self.predict_joint_log_proba(X))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        """log P(y | x), from the joint log likelihood (finite where P(y | x) underflows)."""
        joint = self.predict_joint_log_proba(X)
        with np.errstate(invalid="ignore"):
            return joint - logsumexp(joint, axis=1, keepdims=True)

    def predict_proba_with_tables(self, X: Any, tables: list[np.ndarray]) -> np.ndarray:
        """P(y | x) with this fitted structure and context trees but other probability tables.

        ``tables`` follows :attr:`probability_tables_` (the class prior's table first, then one
        ``(n_nodes, K)`` table per attribute tree of :attr:`trees_`), e.g. another estimator's
        posterior means. The classifier itself is not modified.
        """
        self._check_fitted()
        own = self.probability_tables_
        if len(tables) != len(own):
            raise ValueError(f"tables: expected {len(own)} tables (class prior + attributes), "
                             f"got {len(tables)}")
        for i, (t, o) in enumerate(zip(tables, own, strict=True)):
            if np.shape(t) != o.shape:
                raise ValueError(f"tables[{i}] has shape {np.shape(t)}, the classifier's "
                                 f"{o.shape}")
        packed = pack(self.tree_specs_, self.trees_,
                      [np.asarray(t, dtype=np.float64) for t in tables])
        return posterior_from_joint(joint_log_likelihood(packed, self.transform_codes(X)))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class of every row (ties: the first class in ``classes_``)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    # ------------------------------------------------------------------ persistence
    def save(self, path: Any) -> None:
        """Save the fitted model as arrays + JSON in one ``.npz`` file (no pickle)."""
        self._check_fitted()
        save_model(self.get_params(), FittedModel(**{
            name: getattr(self, name, None) for name in FittedModel.attribute_names()
        }), path)

    @classmethod
    def load(cls, path: Any) -> BayesNetClassifier:
        """Load a model written by :meth:`save` (never unpickles anything)."""
        params, model = read_model(path)
        est = cls(**params)
        est._assign(model)
        return est

    def __getstate__(self) -> dict[str, Any]:
        state = dict(super().__getstate__())  # object.__getstate__ returns __dict__ itself
        state.pop("_packed", None)  # rebuilt from the tables on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        if "trees_" in state:
            self._packed = pack(self.tree_specs_, self.trees_, self.probability_tables_)
