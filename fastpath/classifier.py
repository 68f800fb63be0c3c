"""The scikit-learn compatible Bayesian network classifier.

Data flows one way (each arrow is a module):
table --:mod:`~fastpath.encoding`--> integer codes --:mod:`~fastpath.structure`--> structure
--:mod:`~fastpath.counting`--> context trees --:mod:`~fastpath.mestimate` or :mod:`~fastpath.hdp`-->
probability tables --:mod:`~fastpath.inference`--> class posteriors.
"""

from __future__ import annotations

import numbers
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from . import structure as structure_mod
from .context_tree import ContextTree
from .counting import CountAccumulator, TreeSpec
from .encoding import TableEncoder, as_frame
from .inference import PackedModel, joint_log_likelihood, pack_model, posterior_from_joint
from .mestimate import M_GRID, m_estimate_table

if TYPE_CHECKING:
    from .hdp import HDPOptions

__all__ = ["STRUCTURES", "BayesNetClassifier", "NotFittedError"]

try:  # scikit-learn is optional: reuse its exception types when it is there
    from sklearn.exceptions import DataConversionWarning as _DataConversionWarning
    from sklearn.exceptions import NotFittedError as _NotFittedError
except ImportError:  # pragma: no cover - exercised without scikit-learn

    class _NotFittedError(ValueError, AttributeError):
        pass

    class _DataConversionWarning(UserWarning):
        pass


class NotFittedError(_NotFittedError):
    """Raised when predicting with an unfitted model (scikit-learn's contract)."""


DataConversionWarning = _DataConversionWarning

STRUCTURES: tuple[str, ...] = ("nb", "tan", "kdb", "skdb")
ESTIMATORS: tuple[str, ...] = ("m", "hdp")


def _check_random_state(seed: Any) -> np.random.Generator:
    if seed is None or isinstance(seed, numbers.Integral):
        return np.random.default_rng(seed)
    if isinstance(seed, np.random.Generator):
        return seed
    if isinstance(seed, np.random.RandomState):
        return np.random.default_rng(seed.randint(0, 2**31 - 1))
    raise ValueError(f"random_state must be None, an int or a numpy Generator, got {seed!r}")


def _seed_int(seed: Any) -> int:
    """A reproducible integer seed from random_state (fresh entropy for None)."""
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        return int(seed)
    return int(_check_random_state(seed).integers(0, 2**63 - 1))


class BayesNetClassifier:
    """Bayesian network classifier with m-estimates or HDP estimates of its tables.

    Parameters
    ----------
    structure : {"nb", "tan", "kdb", "skdb"}, default="kdb"
        Naive Bayes; tree-augmented naive Bayes (Chow–Liu tree on I(X_i; X_j | Y)); kDB-k
        (attributes by I(X; Y), each with up to ``k`` earlier parents by I(X_i; X_j | Y)); or
        selective kDB (the kDB over the n* best attributes with k* <= k parents that minimises
        the leave-one-out RMSE, see :mod:`fastpath.selective`).
    k : int, default=1
        Maximum number of attribute parents for ``"kdb"`` and ``"skdb"`` (ignored otherwise).
    estimator : {"m", "hdp"}, default="m"
        How conditional probability tables are estimated: m-estimates with back-off (the
        paper's baseline) or the hierarchical Dirichlet process (the paper's method).
    m : float or "auto", default="auto"
        m-estimate mass. ``"auto"`` chooses it from ``{0, 0.05, 0.2, 1, 5, 20}`` by RMSE on a
        holdout of ``min(N/10, 5000)`` training rows, then refits on all rows (paper). The
        holdout is the rows with the smallest seeded hash of their index
        (:func:`fastpath.streaming.holdout_rows`), so streaming fits hold out the same rows.
    categorical_features : "auto", list of names/indices or boolean mask, default="auto"
        Nominal columns; the others are discretised with MDL. ``"auto"``: non-numeric dtypes.
    n_iter, burn_in, tying, update, root, n_chains
        Options of the HDP sampler (``estimator="hdp"``); see :class:`fastpath.hdp.HDPOptions`
        (:meth:`hdp_options` builds it).
    concentration_shape, concentration_rate, concentration_every, alpha0
        The sampler's Gamma prior of the concentrations, how often they are re-sampled, and the
        root concentration. ``concentration_every=5`` is the reference's schedule; ``1``
        re-samples them after every sweep, which mixes them 3-5 times faster per second
        (docs/validation.md, "Efficiency").
    overrelax : bool, default=False
        Overrelaxed table-count and concentration updates (``update="exact"`` only; see
        :class:`fastpath.hdp.HDPOptions`): still exact, 2-5x the ESS per iteration for about
        8 % more time. Off by default: the paper's and the reference's sampler is plain Gibbs.
    n_jobs : int or None, default=None
        Threads for the HDP sampler (``None``: all cores). Results do not depend on it.
    random_state : int, numpy Generator or None, default=None
        Seed of the m holdout split and of the sampler. An int gives identical results.

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
    selection_ : fastpath.selective.SelectedStructure
        ``structure="skdb"`` only: the selected ``n_selected`` attributes and ``k_selected``
        parents, and the leave-one-out RMSE of every candidate.
    trees_ : list of ContextTree
        The class prior's tree first, then one per attribute (``tree_specs_`` says which).
    probability_tables_ : list of ndarray
        The estimate at every node of every tree (read-only).
    m_ : float
        The m used (``estimator="m"``).
    m_scores_ : dict
        Holdout RMSE of each candidate m (when ``m="auto"``).
    hdp_results_ : list of fastpath.hdp.HDPResult
        ``estimator="hdp"``: the sampler's output for every tree (posterior means, MCSE,
        traces, ``to_arviz()``). Not saved in model files.
    diagnostics_ : fastpath.diagnostics.Diagnostics
        ``estimator="hdp"``: R-hat and bulk ESS of the concentrations and the log joint of
        every tree (``diagnostics_.summary()``, ``diagnostics_.to_frame()``). With
        ``n_chains >= 2`` an :class:`~fastpath.diagnostics.UnconvergedWarning` is raised when a
        tree's R-hat exceeds 1.01 or its bulk ESS is below 100 per chain.
    """

    def __init__(
        self,
        structure: str = "kdb",
        k: int = 1,
        estimator: str = "m",
        *,
        m: float | str = "auto",
        categorical_features: Any = "auto",
        n_iter: int = 5000,
        burn_in: int | None = None,
        tying: str = "level",
        update: str = "exact",
        root: str = "exact",
        n_chains: int = 1,
        concentration_shape: float = 2.0,
        concentration_rate: float = 1.0,
        concentration_every: int = 5,
        alpha0: float = 2.0,
        overrelax: bool = False,
        n_jobs: int | None = None,
        random_state: Any = None,
    ) -> None:
        self.structure = structure
        self.k = k
        self.estimator = estimator
        self.m = m
        self.categorical_features = categorical_features
        self.n_iter = n_iter
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
        self.n_jobs = n_jobs
        self.random_state = random_state

    # ------------------------------------------------------------------ sklearn plumbing
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params: Any) -> BayesNetClassifier:
        valid = self._param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(
                    f"invalid parameter {key!r} for BayesNetClassifier; valid: {sorted(valid)}"
                )
            setattr(self, key, value)
        return self

    @classmethod
    def _param_names(cls) -> tuple[str, ...]:
        import inspect

        sig = inspect.signature(cls.__init__)
        return tuple(p for p in sig.parameters if p != "self")

    def __repr__(self) -> str:
        defaults = BayesNetClassifier()
        changed = []
        for name in self._param_names():
            value = getattr(self, name)
            default = getattr(defaults, name)
            if value is not default and not (
                isinstance(value, str | int | float | type(None)) and value == default
            ):
                changed.append(f"{name}={value!r}")
        return f"BayesNetClassifier({', '.join(changed)})"

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, Tags, TargetTags

        tags = Tags(
            estimator_type="classifier",
            target_tags=TargetTags(required=True),
            classifier_tags=ClassifierTags(),
        )
        tags.input_tags.allow_nan = True
        tags.input_tags.string = True
        tags.input_tags.categorical = True
        return tags

    def _more_tags(self) -> dict[str, Any]:  # scikit-learn < 1.6
        return {"allow_nan": True, "X_types": ["2darray", "categorical", "string"]}

    # ------------------------------------------------------------------ validation
    def _validate_params(self) -> None:
        if self.structure not in STRUCTURES:
            raise ValueError(f"structure must be one of {STRUCTURES}, got {self.structure!r}")
        if self.estimator not in ESTIMATORS:
            raise ValueError(f"estimator must be one of {ESTIMATORS}, got {self.estimator!r}")
        if (
            isinstance(self.k, bool)
            or not isinstance(self.k, numbers.Integral)
            or self.k < 0
        ):
            raise ValueError(f"k must be a non-negative integer, got {self.k!r}")
        if not (isinstance(self.m, str) and self.m == "auto"):
            if isinstance(self.m, bool) or not isinstance(self.m, numbers.Real):
                raise ValueError(f"m must be 'auto' or a non-negative number, got {self.m!r}")
            if not np.isfinite(self.m) or self.m < 0:
                raise ValueError(f"m must be 'auto' or a non-negative number, got {self.m!r}")
        if self.estimator == "hdp":
            self.hdp_options()  # every sampler option checked before any work

    @staticmethod
    def _validate_y(y: Any, n_rows: int) -> tuple[np.ndarray, np.ndarray]:
        if y is None:
            raise ValueError(
                "BayesNetClassifier requires y to be passed, but the target y is None"
            )
        if isinstance(y, pd.DataFrame):
            if y.shape[1] != 1:
                raise ValueError(f"y must be one column, got a DataFrame with {y.shape[1]}")
            y = y.iloc[:, 0]
        y_arr = np.asarray(y)
        if y_arr.ndim == 2 and y_arr.shape[1] == 1:
            warnings.warn(
                "A column-vector y was passed when a 1d array was expected. Please change the "
                "shape of y to (n_samples,), for example using ravel().",
                DataConversionWarning,
                stacklevel=3,
            )
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
        if y_arr.dtype.kind == "f" and not np.all(np.mod(y_arr, 1) == 0):
            raise ValueError(
                "Unknown label type: the target holds continuous values; "
                "a classifier needs class labels"
            )
        try:
            classes, y_codes = np.unique(y_arr, return_inverse=True)
        except TypeError:  # mixed types
            as_text = y_arr.astype(str)
            classes, first, y_codes = np.unique(as_text, return_index=True, return_inverse=True)
            classes = y_arr[first]
        return classes, y_codes.astype(np.int64).ravel()

    def _validate_X(self, X: Any, *, fitting: bool) -> pd.DataFrame:
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
        if fitting:
            self.n_features_in_ = frame.shape[1]
            if has_names:
                self.feature_names_in_ = np.asarray(frame.columns, dtype=object)
            elif hasattr(self, "feature_names_in_"):
                del self.feature_names_in_
            return frame
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
                "X does not have valid feature names, but BayesNetClassifier was fitted with "
                "feature names; columns are matched by position",
                UserWarning,
                stacklevel=3,
            )
        elif fitted_names is None and has_names:
            warnings.warn(
                "X has feature names, but BayesNetClassifier was fitted without feature names",
                UserWarning,
                stacklevel=3,
            )
        if frame.shape[1] != self.n_features_in_:
            raise ValueError(
                f"X has {frame.shape[1]} features, but BayesNetClassifier is expecting "
                f"{self.n_features_in_} features as input"
            )
        return frame

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any = None, *, chunksize: int | None = None) -> BayesNetClassifier:
        """Learn the discretisation, the structure and the probability tables.

        Parameters
        ----------
        X : DataFrame or array-like of shape (n_samples, n_features), or a stream
            Nominal and numeric columns; missing values (NaN/None) are a value of their own.
            A *stream* is fitted out of core in a few passes (:mod:`fastpath.streaming`): a path
            to a CSV/TSV (optionally compressed) or Parquet file, a callable returning a fresh
            iterator of DataFrame chunks, an iterator of DataFrame chunks (spilled to a
            temporary directory, as it can be read only once), or a ``dask.dataframe.DataFrame``
            (:mod:`fastpath.distributed`). A stream's chunks hold the target column too.
        y : array-like of shape (n_samples,), or str
            Class labels (no missing values). For a stream: the name of the target column
            (default: the last column).
        chunksize : int, optional
            Streams only: rows per chunk read from a file (default 100,000), or per block of
            a Dask partition. Memory grows with it, not with the number of rows.
        """
        self.__dict__.pop("_partial_state", None)
        if self._is_stream(X):
            return self._fit_stream(X, y, chunksize)
        if chunksize is not None:
            raise ValueError(
                "chunksize applies to streamed X (a path, a chunk iterator or a Dask DataFrame)"
            )
        self._validate_params()
        frame = self._validate_X(X, fitting=True)
        classes, y_codes = self._validate_y(y, frame.shape[0])
        if classes.size < 2:
            raise ValueError(
                f"the target has only 1 class ({classes[0]!r}); a classifier needs at least 2"
            )
        self.classes_ = classes
        n_classes = classes.size

        self.encoder_ = TableEncoder(self.categorical_features).fit(frame, y_codes, n_classes)
        codes = self.encoder_.transform(frame)
        self._learn_structure(codes, y_codes)
        rng = _check_random_state(self.random_state)
        if self.estimator == "m":
            self._select_m(codes, y_codes, rng)
        self._fit_tables(CountAccumulator(self.tree_specs_).update(codes, y_codes), rng)
        return self

    # ------------------------------------------------------------------ out of core
    @staticmethod
    def _is_stream(X: Any) -> bool:
        from .streaming import is_stream_source

        return is_stream_source(X)

    def _fit_stream(self, X: Any, y: Any, chunksize: int | None) -> BayesNetClassifier:
        from .streaming import fit_stream

        return fit_stream(self, X, y, chunksize=chunksize)

    def partial_fit(
        self, X: Any, y: Any, classes: Any = None, *, schema: Any = None
    ) -> BayesNetClassifier:
        """Add a chunk of rows to the counts; the next prediction re-estimates the tables.

        The first call fixes everything but the counts, and later calls only add counts:

        * the classes: ``classes`` when given (every label the stream will hold), else the
          labels of the first chunk;
        * the coding of every column (categories, MDL cut points, missing-value codes):
          ``schema`` when given (a fitted :class:`~fastpath.encoding.TableEncoder`, or a
          mapping for :func:`fastpath.streaming.declare_schema`), else learned from the first
          chunk exactly as :meth:`fit` learns it;
        * the structure (and for ``"skdb"`` the selected attributes), learned from the first
          chunk (naive Bayes needs no data).

        A later chunk with a class, a category or a missing value outside that schema raises
        ``ValueError`` naming the call, row and column, and adds nothing. m (``m="auto"``) is
        chosen at re-estimation on the same holdout rule as :meth:`fit` over all rows seen, so
        with a declared schema and a data-independent structure, ``partial_fit`` over chunks
        and :meth:`fit` on their concatenation give the same model. :meth:`fit` discards
        everything ``partial_fit`` gathered; a saved model cannot resume ``partial_fit``.
        ``trees_`` and ``probability_tables_`` are those of the last re-estimation (the first
        prediction after a ``partial_fit`` runs it).
        """
        from .streaming import partial_fit

        return partial_fit(self, X, y, classes, schema)

    def _refresh_partial(self) -> None:
        """Lazy re-estimation after ``partial_fit`` (called before every prediction)."""
        if getattr(self, "_partial_state", None) is not None:
            from .streaming import refresh_partial

            refresh_partial(self)

    # The stages below are shared with the streaming and distributed fits, which reach them
    # with statistics gathered chunk by chunk instead of an in-memory code matrix.
    def _learn_structure(self, codes: np.ndarray, y_codes: np.ndarray) -> None:
        """Structure from the codes; sets ``structure_`` and ``tree_specs_``."""
        cards = self.encoder_.cardinalities_
        n_classes = self.classes_.size
        attributes = range(len(cards))
        if self.structure == "nb":
            self.structure_ = structure_mod.naive_bayes(len(cards))
        elif self.structure == "tan":
            self.structure_ = structure_mod.tan(codes, y_codes, cards, n_classes)
        elif self.structure == "kdb":
            self.structure_ = structure_mod.kdb(codes, y_codes, cards, n_classes, int(self.k))
        else:
            from .selective import select_skdb

            self.selection_ = select_skdb(codes, y_codes, cards, n_classes, int(self.k))
            self.structure_ = self.selection_.structure
            attributes = sorted(self.selection_.attributes)
        self.tree_specs_ = self._tree_specs(cards, n_classes, attributes)

    def _fit_tables(self, accumulator: CountAccumulator, rng: np.random.Generator) -> None:
        """Context trees from the counts, then their probability tables (m or HDP)."""
        self.trees_ = [self._named_tree(accumulator, i) for i in range(len(self.tree_specs_))]
        if self.estimator == "m":
            tables = [m_estimate_table(t, self.m_) for t in self.trees_]
        else:
            tables = self._hdp_tables(rng)
        for t in tables:
            t.flags.writeable = False
        self.probability_tables_ = tables
        self._packed = self._pack(self.trees_, tables)

    def _tree_specs(self, cards: tuple[int, ...], n_classes: int, attributes) -> list[TreeSpec]:
        """The class prior's table, then one per attribute kept in the model."""
        specs = [TreeSpec(-1, (), n_classes, ())]
        for i in attributes:
            order = self.structure_.branching_order(i)
            specs.append(
                TreeSpec(i, (-1, *order), cards[i], (n_classes, *(cards[p] for p in order)))
            )
        return specs

    def _named_tree(self, accumulator: CountAccumulator, i: int) -> ContextTree:
        spec = self.tree_specs_[i]
        names = self.encoder_.feature_names_
        child = "class" if spec.child < 0 else names[spec.child]
        cond = tuple("class" if c < 0 else names[c] for c in spec.conditioning)
        return accumulator.tree(i, child_name=child, conditioning_names=cond)

    def _pack(self, trees: list[ContextTree], tables: list[np.ndarray]) -> PackedModel:
        prior = tables[0][0]
        return pack_model(prior, self.tree_specs_[1:], trees[1:], tables[1:])

    def _select_m(self, codes: np.ndarray, y_codes: np.ndarray, rng: np.random.Generator) -> None:
        if not (isinstance(self.m, str) and self.m == "auto"):
            self.m_ = float(self.m)
            self.m_scores_ = {}
            return
        from .streaming import holdout_key, holdout_rows, holdout_size

        n = codes.shape[0]
        n_hold = holdout_size(n)
        if n_hold < 1 or n - n_hold < 1:
            self.m_ = 1.0  # too little data to hold any out: Schurmann–Grassberger's m = 1
            self.m_scores_ = {}
            return
        # the n_hold rows with the smallest seeded hash of their index, in row order: the rule
        # a streaming fit can apply chunk by chunk, so both fits hold out the same rows
        hold = holdout_rows(n, n_hold, holdout_key(rng))
        train = np.ones(n, dtype=bool)
        train[hold] = False
        train_counts = CountAccumulator(self.tree_specs_).update(codes[train], y_codes[train])
        self._score_m(train_counts, codes[hold], y_codes[hold])

    def _score_m(
        self, train_counts: CountAccumulator, hold_codes: np.ndarray, hold_y: np.ndarray
    ) -> None:
        """Choose m by the RMSE, on held-out rows, of tables counted on the other rows."""
        trees = [train_counts.tree(i) for i in range(len(self.tree_specs_))]
        scores = {}
        rows = np.arange(hold_y.size)
        for m in M_GRID:
            packed = self._pack(trees, [m_estimate_table(t, m) for t in trees])
            proba = posterior_from_joint(joint_log_likelihood(packed, hold_codes))
            scores[m] = float(np.sqrt(np.mean((1.0 - proba[rows, hold_y]) ** 2)))
        # lowest RMSE; ties to the smaller m (the first in the grid)
        self.m_ = min(scores, key=lambda m: (scores[m], m))
        self.m_scores_ = scores

    def hdp_options(self) -> HDPOptions:
        """The sampler options these parameters give (``ValueError`` naming a bad one)."""
        from .hdp import HDPOptions

        return HDPOptions(
            n_iter=self.n_iter,
            burn_in=self.burn_in,
            tying=self.tying,
            update=self.update,
            root=self.root,
            n_chains=self.n_chains,
            concentration_shape=self.concentration_shape,
            concentration_rate=self.concentration_rate,
            concentration_every=self.concentration_every,
            alpha0=self.alpha0,
            overrelax=self.overrelax,
        )

    def _hdp_tables(self, rng: np.random.Generator) -> list[np.ndarray]:
        from . import hdp

        options = self.hdp_options()
        results = hdp.estimate_trees(
            self.trees_, options, seed=_seed_int(self.random_state), n_threads=self.n_jobs
        )
        self.hdp_results_ = results
        from .diagnostics import summarise_fit, tree_label

        self.diagnostics_ = summarise_fit(
            results, [tree_label(t, i) for i, t in enumerate(self.trees_)]
        )
        if self.n_chains >= 2:
            # with one chain R-hat only compares the chain's halves: too weak to warn on
            self.diagnostics_.warn_if_unconverged(stacklevel=4)
        return [np.array(r.probabilities, dtype=np.float64) for r in results]

    # ------------------------------------------------------------------ predict
    def _check_fitted(self) -> None:
        self._refresh_partial()
        if not hasattr(self, "_packed"):
            raise NotFittedError(
                "This BayesNetClassifier instance is not fitted yet. Call 'fit' with "
                "appropriate arguments before using this estimator."
            )

    def transform_codes(self, X: Any) -> np.ndarray:
        """Integer codes of ``X`` as the model sees them (``-1`` = unseen in training)."""
        self._check_fitted()
        return self.encoder_.transform(self._validate_X(X, fitting=False))

    def predict_joint_log_proba(self, X: Any) -> np.ndarray:
        """log P(y, x) for every row and class, shape (n_samples, n_classes)."""
        codes = self.transform_codes(X)  # checks that the model is fitted
        return joint_log_likelihood(self._packed, codes)

    def predict_proba(self, X: Any) -> np.ndarray:
        """P(y | x) for every row, shape (n_samples, n_classes), columns in ``classes_`` order."""
        return posterior_from_joint(self.predict_joint_log_proba(X))

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
        packed = self._pack(self.trees_, [np.asarray(t, dtype=np.float64) for t in tables])
        return posterior_from_joint(joint_log_likelihood(packed, self.transform_codes(X)))

    def predict_log_proba(self, X: Any) -> np.ndarray:
        with np.errstate(divide="ignore"):
            return np.log(self.predict_proba(X))

    def predict(self, X: Any) -> np.ndarray:
        """Most probable class of every row (ties: the first class in ``classes_``)."""
        proba = self.predict_proba(X)
        return self.classes_[np.argmax(proba, axis=1)]

    def score(self, X: Any, y: Any, sample_weight: Any = None) -> float:
        """Mean accuracy."""
        pred = self.predict(X)
        correct = (pred == np.asarray(y)).astype(float)
        return float(np.average(correct, weights=sample_weight))

    # ------------------------------------------------------------------ persistence
    def save(self, path: Any) -> None:
        """Save the fitted model as arrays + JSON in one ``.npz`` file (no pickle)."""
        from .model_io import save_model

        self._check_fitted()
        save_model(self, path)

    @classmethod
    def load(cls, path: Any) -> BayesNetClassifier:
        """Load a model written by :meth:`save` (never unpickles anything)."""
        from .model_io import load_model

        return load_model(path)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_packed", None)  # rebuilt from the tables on unpickling
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        if "trees_" in state:
            self._packed = self._pack(self.trees_, self.probability_tables_)


