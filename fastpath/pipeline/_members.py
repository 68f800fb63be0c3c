"""The members of a classifier: how they are drawn, estimated, assembled and combined.

Every classifier of fastpath is a list of members (:class:`~fastpath.pipeline._fitted.Member`);
``BayesNetClassifier`` has one, ``ESKDBClassifier`` (Zhang, Petitjean & Buntine, *Bayesian
network classifiers using ensembles and smoothing*, Knowledge and Information Systems 62, 2020)
has ``n_estimators``. Member ``e`` of ``E``:

1. codes the table with its own encoder: Weka's MDL cut points, or cut points of its own drawn
   by the stochastic MDL (:func:`~fastpath.encode.stochastic_mdl_cut_points`,
   ``discretization="stochastic"``), at random resolution
   (:func:`~fastpath.encode.random_cut_points`, ``"random"``), or by either in turn
   (``"mixed"``: :meth:`~fastpath.pipeline._config.FitConfig.member_discretizations`);
2. orders the attributes: member 0 by ``I(X_j; Y)`` (as kDB and selective kDB do), the others
   by an order drawn with probability proportional to ``I(X_j; Y)``
   (:func:`~fastpath.structure.sample_order`);
3. learns the structure of the fit (``config.structure``; ESKDB: selective kDB) in that order;
4. counts its context trees and estimates their tables (m-estimates with the member's own m
   choice, or HDP, HGS or HLS: one call over every distinct tree of the members (HDP's spread
   over threads); members whose child, parents and coding coincide share one tree and its fit).

The classifier's ``P(y | x)`` is the mean of the members' posteriors
(:mod:`fastpath.predict._combine`; here the rows are coded for the members' packed trees, the
prediction plan). Member ``e`` draws from
the ``e``-th child of one ``SeedSequence``, so an integer ``random_state`` reproduces every
member; member 0 holds out the m-holdout rows of ``random_state`` itself and its trees come
first in the sampler's streams, so member 0 is exactly the single classifier with the same
parameters (without stochastic discretisation).

Every driver (in memory, out of core, ``partial_fit``) ends with :func:`finish_fit`: the one
place where a fitted record is built.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from ..counts._context_tree import ContextTree
from ..counts._counting import TreeSpec
from ..encode._encoder import MembersLayout, TableEncoder, code_members, fit_members, members_layout
from ..estimate._diagnostics import tree_label
from ..io._column_types import ColumnTypes, type_columns
from ..predict._combine import members_log_posterior, members_posterior
from ..predict._inference import PackedMembers, packed_joint_log_likelihood
from ..structure._orders import sample_order
from ..structure._scores import ScoreCache, mutual_information
from ..structure._specs import tree_specs
from ..utils._progress import FitLog
from ..utils._validation import seed_int
from ._config import FitConfig
from ._fitted import FittedModel, Member
from ._registry import STRUCTURES
from ._stages import (
    LearnedStructure,
    estimate_tables,
    learn_structure,
    pack_fitted,
    selection_key,
    structure_name,
)
from ._weights import fit_layer


def member_streams(config: FitConfig) -> list[np.random.Generator | None]:
    """One generator per member, children of one ``SeedSequence`` of ``config.random_state``
    (reproducible for an int). A single member that draws nothing (MDL cut points, the
    ``I(X; Y)`` order) gets ``None`` and leaves ``random_state`` untouched."""
    if config.n_members == 1 and config.discretization == "mdl":
        return [None]
    root = np.random.SeedSequence(seed_int(config.random_state))
    return [np.random.default_rng(child) for child in root.spawn(config.n_members)]


def member_order(config: FitConfig, index: int, rng: np.random.Generator | None,
                 mutual_information: np.ndarray | Callable[[], np.ndarray],
                 ) -> tuple[int, ...] | None:
    """Member ``index``'s attribute order (step 2 of the module docstring; every driver's):
    ``None`` for member 0 and for a structure learner that follows no order (the learner
    ranks the attributes by ``I(X_j; Y)`` itself), else an order drawn from the member's
    generator ``rng`` with probability proportional to ``I(X_j; Y)``
    (:func:`~fastpath.structure.sample_order`). ``mutual_information``: the member's
    ``I(X_j; Y)``, or a function that computes it (called only when an order is drawn)."""
    if index == 0 or not STRUCTURES[config.structure].ordered:
        return None
    mi = mutual_information() if callable(mutual_information) else mutual_information
    return sample_order(mi, rng)


def typed_columns(config: FitConfig, frame: pd.DataFrame
                  ) -> tuple[ColumnTypes, pd.DataFrame, tuple[str, ...]]:
    """The types of ``frame``'s columns under the fit's rules, decided once
    (:func:`~fastpath.io._column_types.type_columns`: nominal or numeric, declared and stray
    missing tokens, and the columns ``config.exclude_features`` leaves out, identifiers and
    dates by default, each said once in a warning): the kept columns' record (what the
    members' encoders code from), ``frame`` without the left-out columns, and their names
    (what the model records as ``excluded_features_``)."""
    types = type_columns(frame, config.categorical_features, na_values=config.na_values,
                         exclude_features=config.exclude_features)
    names = types.say_excluded()
    return types.kept(), kept_columns(frame, names), names


def kept_columns(frame: pd.DataFrame, excluded: Sequence[str]) -> pd.DataFrame:
    """``frame`` (columns as in fit) without the ``excluded`` ones (names as in fit; a frame
    without names calls its columns ``x0``, ``x1``, ... as :func:`~fastpath.encode._encoder.
    as_frame` does)."""
    if not excluded:
        return frame
    gone = set(excluded)
    kept = [j for j, c in enumerate(frame.columns.tolist()) if str(c) not in gone]
    return frame.iloc[:, kept]


def member_encoders(config: FitConfig, streams: Sequence[np.random.Generator | None],
                    types: ColumnTypes, y_codes: np.ndarray, n_classes: int,
                    log: FitLog | None = None) -> list[TableEncoder]:
    """Every member's coding of the columns (step 1 of the module docstring), learned from
    the typed table ``types`` (:func:`typed_columns`) in this thread, the table read once
    (:func:`~fastpath.encode._encoder.fit_members`): member 0 fits it, the others take its
    nominal codings and draw their own cut points from the same rows and their own
    generators. What the data warns about (stray tokens, identifiers, empty columns) is said
    once and points at the caller's line (a warning raised in a worker thread could not)."""
    log = FitLog(0) if log is None else log
    # "attributes": the columns the model codes, those left out not counted (hdpbn fit's last
    # line counts them alike)
    log.stage(f"coding {types.frame.shape[0]} rows x {types.frame.shape[1]} attributes"
              + (f", {config.n_members} members" if config.n_members > 1 else ""))
    return fit_members(types, y_codes, n_classes, config.member_discretizations(), streams,
                       na_values=config.na_values, numeric_errors=config.numeric_errors)


def learn_member(config: FitConfig, index: int, rng: np.random.Generator | None,
                 encoder: TableEncoder, frame: pd.DataFrame, y_codes: np.ndarray,
                 n_classes: int, log: FitLog | None = None, *, columns: dict | None = None,
                 scores: tuple[ScoreCache, Sequence] | None = None,
                 ) -> tuple[np.ndarray, LearnedStructure, list[TreeSpec]]:
    """Member ``index``'s attribute order and structure, learned in memory with its coding
    ``encoder`` (steps 2-3 of the module docstring): the codes of ``frame``, the structure and
    its trees' specs. ``rng`` is the member's generator (after its cut points were drawn);
    ``log`` says the step of a single member, or one line per member of several; ``columns``:
    a filled :func:`~fastpath.encode._encoder.column_cache` of ``frame`` (the members then
    parse each column once); ``scores``: the fit's :class:`~fastpath.structure._scores.
    ScoreCache` and this member's column keys (:func:`score_keys`), so that members coding
    columns alike compute their mutual informations once."""
    log = FitLog(0) if log is None else log
    if config.n_members == 1:
        log.stage(f"learning the structure ({structure_name(config)})")
    else:
        log.stage(f"member {index + 1}/{config.n_members}: attribute order, "
                  f"{structure_name(config)}")
    codes = (encoder.transform(frame) if columns is None
             else encoder.transform_shared(frame, columns))
    cards = encoder.cardinalities_
    mi_cmi = None
    if STRUCTURES[config.structure].ordered and scores is not None:
        cache, keys = scores
        mi_cmi = cache.scores(codes, y_codes, cards, n_classes, keys)
    order = member_order(config, index, rng,
                         lambda: (mi_cmi[0] if mi_cmi is not None
                                  else mutual_information(codes, y_codes, cards, n_classes)))
    learned = learn_structure(config, codes, y_codes, cards, n_classes, order,
                              sample_key=selection_key(config, rng, codes.shape[0],
                                                       n_classes), scores=mi_cmi)
    specs = tree_specs(learned.structure, cards, n_classes, learned.attributes)
    return codes, learned, specs


def score_keys(encoders: Sequence[TableEncoder]) -> list[list]:
    """Each encoder's column keys for a :class:`~fastpath.structure._scores.ScoreCache`:
    ``(j, coding)`` for a column that another encoder codes alike, else ``None`` (a member's
    own stochastic cut points: nothing to share)."""
    seen: dict[tuple, int] = {}
    for encoder in encoders:
        for key in enumerate(encoder.codings_):
            seen[key] = seen.get(key, 0) + 1
    return [[key if seen[key] > 1 else None for key in enumerate(encoder.codings_)]
            for encoder in encoders]


def finish_fit(config: FitConfig, members: list[Member], *, classes: np.ndarray,
               feature_names: Sequence[str], has_names: bool, log: FitLog | None = None,
               n_passes: int | None = None, excluded: Sequence[str] = (),
               layer: tuple[Sequence[np.ndarray], np.ndarray] | None = None) -> FittedModel:
    """Estimate every member's tables and return the fitted record (every driver's last step).

    m-estimates with each member's m; or HDP (HGS, HLS): members whose (child, parents, coding
    of those columns) coincide count the same tree, so it is sampled (fitted) once and shared
    (the class prior, every nominal-only factor that two orders give the same parents). One
    sampler call over the distinct trees spreads them over threads; member 0's trees come
    first, so they keep the stream keys (positions) of a single classifier's fit.

    With ``config.discriminative``, ``layer`` holds every member's codes of the layer's rows
    and their classes (:func:`~fastpath.pipeline._weights.layer_sample`), and the members'
    weights are fitted on them (:func:`~fastpath.pipeline._weights.fit_layer`).
    """
    log = config.log() if log is None else log
    results = diagnostics = None
    # the drivers' members (Member.counted) get their tables here, in place: they come only
    # now, estimated for every member at once
    if config.chooses_m:
        for member in members:
            member.probability_tables = estimate_tables(config, member.trees, member.m).tables
    else:
        distinct, names, slots = distinct_trees(members)
        estimated = estimate_tables(config, distinct, None, tree_names=names, log=log)
        for member, slot in zip(members, slots, strict=True):
            member.probability_tables = [estimated.tables[j] for j in slot]
        results, diagnostics = estimated.hdp_results, estimated.diagnostics
    penalty = None
    for member in members:
        member.term_weights = None
    if config.discriminative is not None:
        if layer is None:
            raise ValueError("a discriminative fit needs the layer's rows")
        log.stage(f"fitting the discriminative weights ({config.discriminative}) on "
                  f"{layer[1].size} rows")
        per_member = (None if results is None
                      else [[results[j] for j in slot] for slot in slots])
        penalty = fit_layer(config, members, layer[0], layer[1], per_member)
    return FittedModel(
        classes_=classes,
        n_features_in_=len(feature_names),
        feature_names_in_=np.asarray(feature_names, dtype=object) if has_names else None,
        members_=members,
        hdp_results_=results,
        diagnostics_=diagnostics,
        n_passes_=n_passes,
        excluded_features_=tuple(excluded),
        discriminative_penalty_=penalty,
    )


def distinct_trees(members: list[Member]
                    ) -> tuple[list[ContextTree], list[str], list[list[int]]]:
    """The members' distinct trees, their names in the diagnostics (``member e: P(...)`` when
    there are several members) and, per member, the position of each of its trees."""
    position: dict[tuple, int] = {}
    distinct: list[ContextTree] = []
    names: list[str] = []
    slots: list[list[int]] = []
    for e, member in enumerate(members):
        slots.append([])
        for i, (spec, tree) in enumerate(zip(member.tree_specs, member.trees, strict=True)):
            key = _tree_key(spec, member.encoder)
            if key not in position:
                position[key] = len(distinct)
                distinct.append(tree)
                label = tree_label(tree, i)
                names.append(label if len(members) == 1 else f"member {e}: {label}")
            slots[-1].append(position[key])
    return distinct, names, slots


def _tree_key(spec: TreeSpec, encoder: TableEncoder) -> tuple:
    """What determines a member's context tree: its variables and how they are coded."""
    columns = [c for c in (spec.child, *spec.conditioning) if c >= 0]
    return spec.child, spec.conditioning, tuple(encoder.codings_[c] for c in columns)


# ---------------------------------------------------------------------- prediction
def members_joint_log_proba(members: Sequence[Member], frame: pd.DataFrame,
                            plan: PredictionPlan | None = None) -> np.ndarray:
    """Every member's ``log P(y, x)`` of every row of ``frame`` (columns as in fit), shape
    (n_members, n_rows, n_classes): the rows coded once per distinct column coding (every
    nominal column once for all members, each numeric column parsed once), then each member's
    kernel on its columns. ``plan``: the members' :func:`prediction_plan`, which a fitted
    estimator keeps (built for this call otherwise)."""
    plan = prediction_plan(members) if plan is None else plan
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    return packed_joint_log_likelihood(plan.packed, codes, columns)


class PredictionPlan(NamedTuple):
    """What every prediction of a fitted model reuses: the members (to check it is theirs),
    their encoders, where their codes go (:func:`~fastpath.encode._encoder.members_layout`)
    and their packed trees end to end (:class:`~fastpath.predict._inference.PackedMembers`)."""

    members: tuple[Member, ...]
    encoders: list[TableEncoder]
    layout: MembersLayout
    packed: PackedMembers


def prediction_plan(members: Sequence[Member]) -> PredictionPlan:
    """The members' :class:`PredictionPlan`. A fitted estimator builds it once, when it is
    fitted or loaded, and passes it to every prediction, so that predictions only read. The
    members' trees, one or several, are packed straight into the plan
    (:func:`~fastpath.pipeline._stages.pack_fitted`): the members keep no packed copy of
    their own."""
    packed = pack_fitted([m.tree_specs for m in members], [m.trees for m in members],
                         [m.prediction_tables() for m in members])
    encoders = [member.encoder for member in members]
    return PredictionPlan(tuple(members), encoders, members_layout(encoders), packed)


def is_plan_of(plan: PredictionPlan | None, members: Sequence[Member]) -> bool:
    """Whether ``plan`` was built for these very members (a model's members replaced since
    are predicted with a plan of their own). A member's tables changed in place are not seen:
    the estimators change them only through a fit, which builds a new plan."""
    return (plan is not None and len(plan.members) == len(members)
            and all(a is b for a, b in zip(plan.members, members, strict=True)))


def members_proba(members: Sequence[Member], frame: pd.DataFrame,
                  class_shift: np.ndarray | None = None,
                  plan: PredictionPlan | None = None) -> np.ndarray:
    """The mean of the members' posteriors ``P(y | x)`` (for one member: its posterior);
    ``class_shift``: ``log w`` of each class, added to every member's joint log likelihood
    (``class_weight``: the class prior times ``w``, renormalised); ``plan`` as for
    :func:`members_joint_log_proba`."""
    plan = prediction_plan(members) if plan is None else plan
    codes, columns = code_members(plan.encoders, frame, plan.layout)
    return members_posterior(plan.packed, codes, columns, class_shift)


def members_log_proba(members: Sequence[Member], frame: pd.DataFrame,
                      class_shift: np.ndarray | None = None,
                      plan: PredictionPlan | None = None) -> np.ndarray:
    """log of :func:`members_proba`, from the members' joint log likelihoods (finite where a
    posterior underflows)."""
    return members_log_posterior(members_joint_log_proba(members, frame, plan), class_shift)
