"""The Bayesian network classifier: one member, with the structure the user chooses.

Everything but its parameters and the single member's attributes is the base class's
(:class:`~fastpath.classifier._base.BaseBayesNet`): the fit's drivers, ``partial_fit``,
prediction and model files.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..estimate._hls_options import HLSOptions
from ..estimate.hdp._options import DEFAULT_SAMPLER, HDPOptions
from ..pipeline._fitted import Member
from ..pipeline._members import members_joint_log_proba
from ..predict._inference import joint_log_likelihood, posterior_from_joint
from ._base import BaseBayesNet


def _member_attribute(name: str, field: str, doc: str) -> property:
    """A fitted attribute read from the single member (``AttributeError`` when it does not
    apply to the fit, e.g. ``m_`` of HDP estimates, or before a fit)."""

    def get(self: BayesNetClassifier) -> Any:
        members = self.__dict__.get("members_")
        value = None if not members else getattr(members[0], field)
        if value is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        return value

    get.__name__ = name
    get.__doc__ = doc
    return property(get)


class BayesNetClassifier(BaseBayesNet):
    """Bayesian network classifier with m-estimates or HDP estimates of its tables.

    Parameters
    ----------
    structure : {"nb", "tan", "kdb", "skdb"}, default="kdb"
        Naive Bayes; tree-augmented naive Bayes (Chow–Liu tree on I(X_i; X_j | Y)); kDB-k
        (attributes by I(X; Y), each with up to ``k`` earlier parents by I(X_i; X_j | Y)); or
        selective kDB (the kDB over the n* best attributes with k* <= k parents that minimises
        the leave-one-out RMSE, see :mod:`fastpath.structure._selective`).
    k : int, default=1
        Maximum number of attribute parents for ``"kdb"`` and ``"skdb"`` (ignored otherwise).
    estimation : {"hdp", "m", "hgs", "hls"}, HLSOptions or a registered method, default="hdp"
        How the conditional probability tables are estimated (the paper's "parameter
        estimation"): the hierarchical Dirichlet process (the paper's method, sampled as
        ``sampler`` says), m-estimates with back-off (the paper's baseline; no sampling, so the
        fastest fit), hierarchical gradient smoothing
        (Zhang, Petitjean & Buntine 2020: every node smoothed towards all its ancestors, one
        weight per level fitted by the leave-one-out log loss; :mod:`fastpath.estimate._hgs`)
        or hierarchical linear smoothing (Cooper, Webb & Schmidt 2025: a multinomial logistic
        regression on the indicators of the nodes of a row's path; :mod:`fastpath.estimate._hls`).
        ``"hls"`` has the authors' L2 penalty; :class:`fastpath.estimate.HLSOptions` sets
        another (``estimation=HLSOptions(C=0.5)``: ``C`` times the log loss of the training rows
        plus half the squared norm of the node coefficients, scikit-learn's convention). HGS
        and HLS are fitted on the context trees' counts, so they give the same tables in memory
        and out of core (docs/model.md, section 10). An estimation method registered with
        :func:`fastpath.pipeline.register_estimator` is taken by its name, or by an instance of
        its options class.
    m : float, "auto" or "holdout", default="auto"
        m-estimate mass. ``"auto"`` chooses it from ``{0.05, 0.2, 1, 5, 20}`` by the
        leave-one-out RMSE of the whole model over every training row (each row predicted from
        the counts without it; one extra pass out of core): stable, and never 0, so no value
        that training could have shown gets probability exactly 0. ``"holdout"`` is the
        paper's rule: ``{0, 0.05, 0.2, 1, 5, 20}`` scored on a holdout of ``min(N/10, 5000)``
        training rows, then a refit on all rows; the holdout is the rows with the smallest
        seeded hash of their index (:func:`fastpath.pipeline._holdout.holdout_rows`), so
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
    na_values : str or list of str, optional
        Tokens that mean a missing value in every column (``["?", "n/a"]``), at fit and at
        predict time alike: a property of the model, saved with it. Default: only NaN/None
        are missing (plus the stray tokens a numeric column's training values hold).
    numeric_errors : {"coerce", "raise"}, default="coerce"
        A value that is not a number in a numeric column, neither declared in ``na_values`` nor
        met in training: a missing value with one warning per column and call naming the
        tokens and their counts (``"coerce"``), or a ``ValueError`` naming the column, value and
        row (``"raise"``, which also refuses stray tokens in training).
    class_weight : None, "balanced" or dict, default=None
        Weights of the classes, as scikit-learn's classifiers take them, honoured through the
        class prior: the prediction's prior of class ``c`` is multiplied by ``w_c`` (and the
        posterior renormalised), in every member; the probability tables are those of the
        unweighted rows, so no table count of the HDP becomes fractional (for a classifier
        whose attribute tables are conditioned on the class, weighing a class's rows scales
        only its prior). ``"balanced"``: ``w_c = n / (n_classes * n_c)`` from the class counts
        of the fit (with ``sample_weight``, the weighted counts), so every class is equally
        likely a priori; a dict: ``{label: weight}``, 1 for a class it leaves out, positive
        weights only. ``fit``'s ``sample_weight`` weighs rows (whole numbers: multiplicities).
        ``predict_joint_log_proba`` is the unweighted model's.
    exclude_features : "auto", None or list of names/indices, default="auto"
        Columns left out of the model (:mod:`fastpath.io._column_types`). ``"auto"``:
        identifiers (nominal columns whose values are >= 95 % distinct, at least 20 rows;
        integer columns >= 95 % distinct, at least 1,000 rows), high-cardinality nominal
        columns (at least 500 values, fewer than 20 rows a value) and dates, each with a
        warning; ``None``: none; a list: exactly those. Recorded in ``excluded_features_`` and
        ignored at predict time.
    sampler : {"adaptive", "adaptive-plain", "ensemble", "strict", "paper"} or HDPOptions, \
default="adaptive"
        The HDP sampler (``estimation="hdp"``): a preset's name
        (:data:`fastpath.estimate.hdp._options.SAMPLER_PRESETS`) or every option at once, a
        :class:`fastpath.HDPOptions` (``HDPOptions.preset("paper", n_iter=50_000)``: a preset
        with some options changed; :meth:`hdp_options` gives the options a fit runs).
        ``"adaptive"``: exact overrelaxed moves, concentrations every iteration, each tree
        sampled until the Monte-Carlo standard error of what the training rows read is at most
        ``mcse_tolerance`` = 0.01 (root mean square over the rows; with ``n_chains >= 2``
        including how far the chains disagree): at least ``min_iter`` = 500 and at most
        ``max_iter`` = 5,000 iterations. Over 41 datasets it gives the paper sampler's accuracy
        at a fraction of its time (docs/performance.md, "The default sampler").
        ``"adaptive-plain"``: the same rule with the paper's plain moves (faster per tree, less
        precise). ``"ensemble"``: the paper's moves with the concentrations sampled at every
        iteration and chains of at least 60 iterations (:class:`~fastpath.ESKDBClassifier`'s
        default). ``"strict"``: overrelaxed moves, every probability of
        every node within the tolerance, and the concentrations and log joint past
        R-hat <= 1.01 and bulk ESS >= 100 per chain -- slower than ``"paper"``. ``"paper"``:
        the paper's and the reference's sampler, 5,000 plain Gibbs iterations (what the
        experiments run). The options (:class:`fastpath.estimate.HDPOptions`): the run's length
        (``n_iter``, ``"auto"`` for the adaptive one, ``min_iter``, ``max_iter``,
        ``burn_in``), the rule (``mcse_tolerance``, ``mcse_weighting``: ``"rows"``, what the
        training rows read, or ``"max"``, every probability; ``convergence_checks``: whether
        the concentrations' and log joint's R-hat/ESS checks must also pass), the moves
        (``tying``, ``update``, ``root``, ``overrelax``: still exact, several times the ESS
        per iteration, docs/sampler.md, "Overrelaxed updates"), the concentrations' Gamma
        prior (``concentration_shape``, ``concentration_rate``), how often they are
        re-sampled (``concentration_every``: 5 is the reference's schedule, 1 mixes them
        faster per second, docs/validation.md, "Efficiency"), the root concentration
        (``alpha0``) and ``n_chains``. A fit whose estimates end above the tolerance (or whose
        chains disagree) warns; the warning names the trees and the option to change.
        ``HDPOptions()`` is the default, ``"adaptive"``.
    selection_rows : int, "auto" or None, default=None
        ``structure="skdb"``: score the candidate (n*, k*) by leave-one-out on a sample of
        this many training rows when there are more (a seeded hash of the rows' positions, the
        same rows in memory and out of core; the counts are still every row's); ``"auto"``:
        ``max(5000, 1000 x the number of classes)``, :class:`~fastpath.ESKDBClassifier`'s
        default. ``None``: every row.
    discriminative : {"attribute", "attribute_class"} or None, default=None
        A discriminative layer on the tables: weights on the class prior's and each
        attribute's log-probability (``"attribute"``: one per attribute; ``"attribute_class"``:
        one per attribute and class), fitted by minimising the conditional log loss of the
        training rows (at most ``max(5000, 1000 x the number of classes)`` of them), each
        row's terms read from tables that leave it out, with a ridge towards the generative
        model (``w = 1``) chosen among 1, 10, 100 and 1000 by 3-fold cross-validation of the
        log loss; the probabilities stay proper (:mod:`fastpath.pipeline._weights`,
        docs/theory.md, "Beyond the paper: a discriminative layer on the tables"). ``None``:
        the generative model.
    n_jobs : int or None, default=None
        Threads of every stage: the HDP sampler's, numba's kernels' (structure scores,
        leave-one-out selection, prediction) and the library's pools (no stage calls BLAS, so
        it limits none: :mod:`fastpath.utils._threads`). ``None`` or ``-1``: all cores, as in
        LightGBM and XGBoost -- not scikit-learn's convention, where ``None`` means one job
        (inside a parallel ``GridSearchCV`` or ``cross_val_score``, pass ``n_jobs=1`` to
        avoid more threads than cores); ``-2``: all but one. Results do not depend on it.
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
    members_ : list of fastpath.pipeline.Member
        The one member (the attributes below read it).
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
        The m used (``estimation="m"``).
    m_scores_ : dict
        RMSE of each candidate m: leave-one-out (``m="auto"``) or on the holdout
        (``m="holdout"``, and ``partial_fit``).
    hdp_results_ : list of fastpath.estimate.HDPResult
        ``estimation="hdp"``: the sampler's output for every tree (posterior means, MCSE,
        traces, ``to_arviz()``). Not saved in model files.
    diagnostics_ : fastpath.estimate.FitDiagnostics
        ``estimation="hdp"``: every tree's iterations, the MCSE of what its rows read (and with
        two or more chains the R-hat of the rows' probabilities), and the R-hat and bulk ESS of
        its concentrations and log joint (``diagnostics_.summary()``,
        ``diagnostics_.to_frame()``). An :class:`~fastpath.UnconvergedWarning` (a scikit-learn
        ``ConvergenceWarning``) naming the trees and the option to change is raised when a
        tree's estimates are not certified (:mod:`fastpath.estimate._diagnostics`).
    fit_warnings_ : tuple of str
        What the fit warned about (the data's columns, the sampler), each message once, whether
        or not the warnings filters showed it; saved in model files (``hdpbn diagnose``).
    excluded_features_ : tuple of str
        The columns the fit left out (``exclude_features``), by name (``x<j>`` for a table
        without names); prediction ignores their values.
    """

    structure: str
    k: int
    estimation: str | HLSOptions

    def __init__(
        self, structure: str = "kdb", k: int = 1, estimation: str | HLSOptions = "hdp", *,
        m: float | str = "auto", m_backoff: str = "path", categorical_features: Any = "auto",
        na_values: str | Sequence[str] | None = None, numeric_errors: str = "coerce",
        exclude_features: str | Sequence[str | int] | None = "auto",
        class_weight: dict[Any, float] | str | None = None,
        sampler: str | HDPOptions = DEFAULT_SAMPLER, selection_rows: int | str | None = None,
        discriminative: str | None = None,
        n_jobs: int | None = None, random_state: int | np.random.Generator | None = None,
        verbose: int = 0,
    ) -> None:
        self._store_parameters(locals())

    encoder_ = _member_attribute("encoder_", "encoder", "The coding of the columns.")
    structure_ = _member_attribute("structure_", "structure", "The parents of every attribute.")
    selection_ = _member_attribute("selection_", "selection",
                                   "Selective kDB's selection record (``structure='skdb'``).")
    tree_specs_ = _member_attribute("tree_specs_", "tree_specs",
                                    "What each context tree counts (class prior first).")
    trees_ = _member_attribute("trees_", "trees", "The context trees (class prior first).")
    probability_tables_ = _member_attribute("probability_tables_", "probability_tables",
                                            "Every tree's table (read-only).")
    m_ = _member_attribute("m_", "m", "The m of the m-estimates.")
    m_scores_ = _member_attribute("m_scores_", "m_scores", "RMSE of each candidate m.")

    @property
    def _member(self) -> Member:
        self._check_fitted()
        return self.members_[0]

    # ------------------------------------------------------------------ predict
    def transform_codes(self, X: Any) -> np.ndarray:
        """Integer codes of ``X`` as the model sees them (``-1`` = unseen in training)."""
        member = self._member  # checks that the model is fitted
        return member.encoder.transform(self._validate_X(X))

    def predict_joint_log_proba(self, X: Any) -> np.ndarray:
        """log P(y, x) for every row and class, shape (n_samples, n_classes).

        Read from the prediction plan's packed trees, built when the model was fitted or
        loaded, as :meth:`predict_proba` reads them: a call packs nothing."""
        self._check_fitted()
        frame = self._model_columns(self._validate_X(X))
        with self._threads():
            return members_joint_log_proba(self.members_, frame, self._plan())[0]

    def predict_proba_with_tables(self, X: Any, tables: list[np.ndarray]) -> np.ndarray:
        """P(y | x) with this fitted structure and context trees but other probability tables.

        ``tables`` follows :attr:`probability_tables_` (the class prior's table first, then one
        ``(n_nodes, K)`` table per attribute tree of :attr:`trees_`), e.g. another estimation
        method's posterior means. The classifier itself is not modified.
        """
        member = self._member
        own = member.probability_tables
        if len(tables) != len(own):
            raise ValueError(f"tables: expected {len(own)} tables (class prior + attributes), "
                             f"got {len(tables)}")
        for i, (t, o) in enumerate(zip(tables, own, strict=True)):
            if np.shape(t) != o.shape:
                raise ValueError(f"tables[{i}] has shape {np.shape(t)}, the classifier's "
                                 f"{o.shape}")
        packed = member.pack([np.asarray(t, dtype=np.float64) for t in tables])
        codes = member.encoder.transform(self._validate_X(X))
        with self._threads():
            return posterior_from_joint(joint_log_likelihood(packed, codes))
