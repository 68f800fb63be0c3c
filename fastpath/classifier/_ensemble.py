"""ESKDB: an ensemble of selective kDB classifiers with HDP (or m-) estimates.

Zhang, Petitjean & Buntine, *Bayesian network classifiers using ensembles and smoothing*,
Knowledge and Information Systems 62 (2020). The members differ by their attribute order (drawn
by ``I(X_j; Y)``) and, on numeric columns, by their own cut points (a stochastic MDL, or cuts at
random resolution: ``discretization``); each is a selective
kDB whose tables are estimated like :class:`~fastpath.BayesNetClassifier`'s
(:mod:`fastpath.pipeline._members`) and, by default, weighed by a discriminative layer
(:mod:`fastpath.pipeline._weights`; ``discriminative=None``: the authors' generative members).
Everything but the parameters is the base class's
(:class:`~fastpath.classifier._base.BaseBayesNet`): streams and Dask DataFrames are fitted out
of core with every member's statistics in the same passes, ``partial_fit`` adds counts to every
member, and the model file is the single classifier's format with more members.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..estimate._hls_options import HLSOptions
from ..estimate.hdp._options import DEFAULT_ENSEMBLE_SAMPLER, HDPOptions
from ..pipeline._registry import ordered_structure_learner
from ..structure._selective import ENSEMBLE_SELECTION_ROWS
from ._base import BaseBayesNet


class ESKDBClassifier(BaseBayesNet):
    """Ensemble of selective kDB classifiers (ESKDB), averaged posteriors.

    Parameters
    ----------
    n_estimators : int, default=20
        Members (the authors' scripts use 20).
    k : int, default=5
        ``K`` of every member's selective kDB (the authors' default).
    estimation : {"hdp", "m", "hgs", "hls"}, HLSOptions or a registered method, default="hdp"
        How the members' tables are estimated (``"m"``: the ablation without HDP smoothing;
        ``"hgs"``, ``"hls"`` or an ``HLSOptions``: HDP's successors, as for
        :class:`~fastpath.BayesNetClassifier`).
    discretization : {"mixed", "stochastic", "random", "mdl"}, default="mixed"
        How the members cut numeric columns. ``"stochastic"``: each member its own stochastic
        MDL (:func:`~fastpath.encode.stochastic_mdl_cut_points`), with the authors' forced cut
        (a column of two or more distinct values that no cut passing the MDL criterion splits
        still gets one cut, drawn in proportion to information gain). ``"random"``: each member
        its own cuts at random resolution (:func:`~fastpath.encode.random_cut_points`: 2 to 12
        bins, each cut at the value of a row drawn uniformly, as a forest draws split points;
        no class is read). ``"mixed"``: the even members (member 0 among them) the stochastic
        MDL, the odd ones random resolution. ``"mdl"``: every member Weka's MDL cut points.
        With the discriminative layer, mixed members beat stochastic ones on 0-1 loss on 19
        of the 26 numeric datasets where they differ (docs/results.md, "Numeric columns:
        discriminative weights on the members' tables").
    structure : str, default="skdb"
        Every member's structure learner: selective kDB (the authors' ESKDB), or another
        *ordered* learner (``"kdb"``, or one registered with ``ordered=True``,
        :func:`fastpath.pipeline.register_structure`), which each member after the first runs
        on its own attribute order drawn from ``I(X; Y)``. ``ValueError`` for a learner that
        does not follow an order (``"nb"``, ``"tan"``): its members would all be alike.
    m, m_backoff, categorical_features, na_values, numeric_errors, exclude_features
        As for :class:`~fastpath.BayesNetClassifier` (``m`` is chosen per member, with the
        back-off ``m_backoff`` the members' m-estimates use).
    sampler : str or HDPOptions, default="ensemble"
        The members' HDP sampler: a preset's name or an :class:`~fastpath.HDPOptions`, as for
        :class:`~fastpath.BayesNetClassifier`, with the same rule: each tree sampled until the
        Monte-Carlo error of what its rows read is at most the tolerance. The default preset,
        ``"ensemble"``, makes the table-count moves the paper's plain ones, re-samples the
        concentrations at every iteration and makes the chains at least 60 iterations long
        (burn-in 10). The ``mcse_tolerance`` of the sampler, named or given, is that of the
        ensemble's average: each member's trees are sampled to ``mcse_tolerance *
        sqrt(n_estimators)`` (:meth:`HDPOptions.for_members`), since the average of the members
        divides their Monte-Carlo errors (the overrelaxed moves of ``"adaptive"``, the single
        classifier's default, or longer chains gave the same accuracy for more sampling time;
        docs/performance.md, "The ensemble's sampler"). ``sampler="ensemble"`` and
        ``sampler=HDPOptions.preset("ensemble")`` are the same sampler;
        :meth:`hdp_options` gives the options (``clf.hdp_options().replace(max_iter=...)``
        changes one of them). The authors ran ``sampler=HDPOptions.preset("paper",
        n_iter=1000)``.
    selection_rows : int, "auto" or None, default="auto"
        Each member scores its candidate (n*, k*) by leave-one-out on a sample of this many
        training rows when there are more (drawn by a seeded hash of the rows' positions, so
        in memory and out of core score the same rows); the counts, hence the models scored,
        are still every row's. ``"auto"``: ``max(5000, 1000 x the number of classes)``.
        ``None``: every row, as the authors did (the leave-one-out pass costs about one
        prediction of the training data per candidate k*; measurements of the choice:
        docs/performance.md, "Selection on a sample of the rows").
    discriminative : {"attribute_class", "attribute"} or None, default="attribute_class"
        A discriminative layer on every member's tables, as for
        :class:`~fastpath.BayesNetClassifier`: each member its own weights, fitted on the same
        rows with its own tables leaving each row out; the ensemble's ``P(y | x)`` is the mean
        of the members' weighted posteriors. ``None``: the generative ensemble (the authors'
        model; ``discretization="stochastic", discriminative=None`` is this class's default
        before the layer). The ridge is chosen by cross-validation of member 0's weights, then
        divided by ``n_estimators ** 1.5`` for every member: averaged, the members may follow
        their rows further than one classifier should (``discriminative_penalty_``).
    random_state : int, numpy Generator or None, default=None
        Seed of the members' orders, discretisations, m holdouts, selection samples and
        samplers.
    n_jobs, verbose
        As for :class:`~fastpath.BayesNetClassifier`: the threads of every stage, and what
        the fit says on standard error.

    Attributes
    ----------
    classes_, n_features_in_, feature_names_in_
        As for :class:`~fastpath.BayesNetClassifier`.
    members_ : list of fastpath.pipeline.Member
        Every member's encoder (its cut points), attribute order, selection (``n*``, ``k*``,
        leave-one-out RMSE), context trees and probability tables.
    hdp_results_ : list of fastpath.estimate.HDPResult
        ``estimation="hdp"``: the sampler's output for every distinct tree of the members (a
        tree that several members share -- same child, parents and coding -- is sampled once),
        in member order. Not saved in model files.
    diagnostics_ : fastpath.estimate.FitDiagnostics
        ``estimation="hdp"``: R-hat and bulk ESS of every tree (named ``member e: P(...)``).
    n_passes_ : int
        Out-of-core fits only: the passes made over the data (for every member at once).
    fit_warnings_ : tuple of str
        What the fit warned about (the data's columns, the sampler), each message once, whether
        or not the warnings filters showed it; saved in model files (``hdpbn diagnose``).
    excluded_features_ : tuple of str
        The columns the fit left out (``exclude_features``), the same for every member.
    """

    n_estimators: int
    k: int
    estimation: str | HLSOptions
    discretization: str
    structure: str

    def __init__(
        self, n_estimators: int = 20, k: int = 5, estimation: str | HLSOptions = "hdp", *,
        discretization: str = "mixed", structure: str = "skdb",
        m: float | str = "auto", m_backoff: str = "path", categorical_features: Any = "auto",
        na_values: str | Sequence[str] | None = None, numeric_errors: str = "coerce",
        exclude_features: str | Sequence[str | int] | None = "auto",
        class_weight: dict[Any, float] | str | None = None,
        sampler: str | HDPOptions = DEFAULT_ENSEMBLE_SAMPLER,
        selection_rows: int | str | None = ENSEMBLE_SELECTION_ROWS,
        discriminative: str | None = "attribute_class",
        n_jobs: int | None = None, random_state: int | np.random.Generator | None = None,
        verbose: int = 0,
    ) -> None:
        self._store_parameters(locals())

    def _fit_params(self) -> dict[str, Any]:
        """The members' parameters: ``n_estimators`` members of the ordered ``structure``
        (``ValueError`` naming the ordered learners otherwise)."""
        ordered_structure_learner(self.structure)
        return self.get_params()
