"""The stages of a fit, shared by every driver (in memory, out of core, ``partial_fit``, Dask).

Each stage is a function of plain data; a driver's only job is to bring it that data (a code
matrix in memory, or statistics gathered chunk by chunk) and to return a
:class:`~fastpath.pipeline._fitted.FittedModel`::

    structure --tree_specs--> specs --(counts)--> trees --estimate_tables--> tables
            plan_m --(every row, or holdout rows)--> choose_m_loo / choose_m --^

The choice of m (``m="auto"``): the candidates :data:`~fastpath.estimate.M_GRID_POSITIVE`
are scored by the leave-one-out RMSE of the whole model over every training row (each row
predicted from the counts without it; :func:`fastpath.estimate._m_choice.loo_m_scores`), and the
best is used on all rows. No candidate is 0, so no estimate is exactly 0 unless the user asks for
``m=0``. ``m="holdout"`` is the paper's rule: the candidates :data:`~fastpath.estimate.M_GRID`
(0 included) are scored by the RMSE, on ``min(N/10, 5000)`` held-out rows
(:mod:`fastpath.pipeline._holdout`), of tables counted on the other rows.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from ..counts._context_tree import ContextTree
from ..counts._counting import CountAccumulator, ProjectedCounts, TreeSpec
from ..estimate._m_choice import loo_m_scores
from ..estimate._mestimate import M_GRID, M_GRID_POSITIVE, m_estimate_table
from ..predict._inference import (
    PackedMembers,
    joint_log_likelihood,
    pack_members,
    posterior_from_joint,
)
from ..structure._graphs import Structure
from ..structure._selective import CountedScores, SelectedStructure, counted_select_skdb
from ..utils._progress import FitLog
from ..utils._validation import seed_int
from ._config import FitConfig
from ._holdout import holdout_key, holdout_rows, holdout_size, holdout_threshold
from ._registry import (
    ESTIMATORS,
    STRUCTURES,
    EstimatedTables,
    EstimationContext,
    check_tables,
)


class TreeSource(Protocol):
    """Counts that give context trees: ``CountAccumulator`` or projected kDB-K counts."""

    def tree(self, i: int, **names: Any) -> ContextTree: ...

    def trees(self, indices: Sequence[int] | None = None, *,
              names: Sequence[tuple[str | None, Sequence[str] | None]] | None = None,
              ) -> list[ContextTree]:
        """``[tree(i, child_name=..., conditioning_names=...) for i in indices]``, batched."""
        ...


# ---------------------------------------------------------------------- structure -> specs
@dataclass(frozen=True)
class LearnedStructure:
    """A structure, the attributes that get a context tree, and (SkDB) the selection record."""

    structure: Structure
    attributes: tuple[int, ...]
    selection: SelectedStructure | None = None
    #: SkDB: the selection's counts of every row (kDB-K trees and the class prior), which
    #: hold the selected model's trees (:meth:`counts`)
    scored: CountedScores | None = None

    def counts(self, specs: Sequence[TreeSpec], codes: np.ndarray,
               y_codes: np.ndarray) -> TreeSource:
        """The context trees of ``specs`` (this structure's) on the rows ``codes``,
        ``y_codes`` it was learned from: read off the selection's kDB-K counts when it has
        them (the same integers), else counted."""
        if self.scored is not None:
            return ProjectedCounts(self.scored.counts, self.scored.specs, specs)
        return CountAccumulator(specs, n_rows=codes.shape[0]).update(codes, y_codes)


def learn_structure(config: FitConfig, codes: np.ndarray, y_codes: np.ndarray,
                    cardinalities: Sequence[int], n_classes: int,
                    order: Sequence[int] | None = None, *, sample_key: int = 0,
                    scores: tuple[np.ndarray, np.ndarray] | None = None,
                    ) -> LearnedStructure:
    """The structure of ``config.structure`` learned from an in-memory code matrix; ``order``
    (kDB and SkDB) replaces the ``I(X; Y)`` ranking of the attributes, and ``scores`` (kDB and
    SkDB), when given, are the codes' mutual informations (:func:`~fastpath.structure.
    _scores.mutual_information_scores`). SkDB scores its candidates on
    ``config.selection_sample(n_classes)`` rows drawn with ``sample_key``
    (:func:`selection_key`) when the data has more."""
    cards = tuple(cardinalities)
    learner = STRUCTURES[config.structure]
    if not learner.selective:
        return LearnedStructure(learner.learn(codes, y_codes, cards, n_classes, config.k, order,
                                              scores), tuple(range(len(cards))))
    selection, scored = counted_select_skdb(
        codes, y_codes, cards, n_classes, config.k, order=order,
        max_rows=config.selection_sample(n_classes), sample_key=sample_key, scores=scores)
    return dataclasses.replace(selected(selection), scored=scored)


#: the spawn-key entry that derives a member's selection sample from its generator's seed
_SELECTION_STREAM = 0x5E1EC7


def selection_key(config: FitConfig, rng: np.random.Generator | None, n_rows: int,
                  n_classes: int) -> int:
    """The hash key of a member's sampled leave-one-out selection (0 when every row is scored).

    Derived from the seed of the member's generator ``rng`` without drawing from it (a child of
    its ``SeedSequence``), so the rest of the fit draws what it drew before the selection could
    be sampled, in memory and out of core alike; a member without a generator (a single
    classifier with MDL cut points) takes ``config.random_state``'s integer seed.
    """
    sample = config.selection_sample(n_classes)
    if not STRUCTURES[config.structure].selective or sample is None or n_rows <= sample:
        return 0
    if rng is None:
        return seed_int(config.random_state)
    seq = rng.bit_generator.seed_seq
    child = np.random.SeedSequence(seq.entropy, spawn_key=(*seq.spawn_key, _SELECTION_STREAM))
    return int(child.generate_state(1, np.uint64)[0] >> np.uint64(1))


def check_learned_from_scores(config: FitConfig) -> None:
    """Refuse, before any data is read, an out-of-core fit of a structure learner that fits in
    memory only (no ``from_scores``)."""
    if STRUCTURES[config.structure].from_scores is None:
        raise ValueError(f"structure={config.structure!r} is learned in memory only: fit a "
                         "DataFrame or an array, not a file, a chunk iterator or Dask")


def structure_from_scores(config: FitConfig, mutual_information: np.ndarray | None,
                          conditional_mutual_information: np.ndarray | None,
                          n_attributes: int, order: Sequence[int] | None = None) -> Structure:
    """The structure from precomputed scores (out of core); SkDB gets its kDB-K here.
    ``order`` (kDB and SkDB) replaces the ``I(X; Y)`` ranking of the attributes, as in
    :func:`learn_structure`."""
    learner = STRUCTURES[config.structure]
    check_learned_from_scores(config)
    return learner.from_scores(mutual_information, conditional_mutual_information, n_attributes,
                               config.k, order)


def selected(selection: SelectedStructure) -> LearnedStructure:
    """The learned structure of a selective kDB: only the selected attributes get a tree."""
    return LearnedStructure(selection.structure, tuple(sorted(selection.attributes)), selection)


def name_trees(counts: TreeSource, specs: Sequence[TreeSpec],
               feature_names: Sequence[str]) -> list[ContextTree]:
    """Every spec's context tree from ``counts``, with its variables' names."""
    names = [
        ("class" if spec.child < 0 else feature_names[spec.child],
         tuple("class" if c < 0 else feature_names[c] for c in spec.conditioning))
        for spec in specs
    ]
    return counts.trees(range(len(specs)), names=names)


def pack_fitted(specs: Sequence[Sequence[TreeSpec]], trees: Sequence[Sequence[ContextTree]],
                tables: Sequence[Sequence[np.ndarray]]) -> PackedMembers:
    """The prediction arrays of members' trees and tables, each member's laid out as a fit
    holds them (the class prior's tree first): :func:`~fastpath.predict._inference.
    pack_members` of their class priors and attribute trees."""
    return pack_members([t[0][0] for t in tables], [list(s[1:]) for s in specs],
                        [list(t[1:]) for t in trees], [list(t[1:]) for t in tables])


# ---------------------------------------------------------------------- m
@dataclass(frozen=True)
class MPlan:
    """How m is set: a fixed ``m``; the leave-one-out rule (``rule="loo"``); or a holdout of
    ``n_hold`` rows hashed with ``key`` (``rule="holdout"``, the paper's).

    ``m`` is None when it is still to be chosen, and for HDP estimates.
    """

    m: float | None
    key: int | None = None
    n_hold: int = 0
    scores: dict[float, float] = field(default_factory=dict)
    rule: str | None = None

    @property
    def needs_holdout(self) -> bool:
        return self.rule == "holdout"

    @property
    def needs_loo(self) -> bool:
        return self.rule == "loo"

    def holdout_rows(self, n_rows: int) -> np.ndarray:
        """The held-out rows of ``n_rows`` (a holdout plan), in row order: the ``n_hold``
        with the smallest hashes of ``key`` (:func:`~fastpath.pipeline._holdout.holdout_rows`,
        the rows :meth:`holdout_threshold` selects chunk by chunk)."""
        return holdout_rows(n_rows, self.n_hold, self.key)

    def holdout_threshold(self, n_rows: int) -> np.uint64 | None:
        """The largest hash of a held-out row of ``n_rows`` (None without a holdout): a row
        whose hash is at most this is held out, chunk by chunk."""
        return holdout_threshold(n_rows, self.n_hold, self.key) if self.needs_holdout else None


def plan_m(config: FitConfig, n_rows: int, rng: np.random.Generator | None, *,
           key: int | None = None) -> MPlan:
    """The m plan of a fit over ``n_rows`` rows. A holdout's key is ``key`` when the caller
    drew it before (``partial_fit``'s first call), else drawn from ``rng`` (a member's
    :func:`~fastpath.pipeline._holdout.holdout_generator`), and only when a holdout is
    planned."""
    if not ESTIMATORS[config.estimation].chooses_m:
        return MPlan(None)
    if config.m_rule is None:
        return MPlan(float(config.m))
    if config.m_rule == "loo":
        if n_rows < 2:
            return MPlan(1.0)  # nothing to leave out: Schurmann–Grassberger's m = 1
        return MPlan(None, rule="loo")
    n_hold = holdout_size(n_rows)
    if n_hold < 1 or n_rows - n_hold < 1:
        return MPlan(1.0)  # too little data to hold any out: Schurmann–Grassberger's m = 1
    return MPlan(None, holdout_key(rng) if key is None else key, n_hold, rule="holdout")


def pick_m(scores: dict[float, float]) -> float:
    """The candidate with the lowest score; ties to the smaller m."""
    return min(scores, key=lambda m: (scores[m], m))


def choose_m(specs: Sequence[TreeSpec], train_counts: TreeSource, hold_codes: np.ndarray,
             hold_y: np.ndarray, *, backoff: str = "path",
             grid: Sequence[float] = M_GRID) -> tuple[float, dict[float, float]]:
    """The paper's rule: the m of ``grid`` (:data:`M_GRID`) whose tables, counted on the
    training rows, give the lowest RMSE on the held-out rows (ties to the smaller m), and every
    candidate's RMSE.

    ``backoff`` is the m-estimates' back-off rule (:func:`~fastpath.estimate.m_estimate_table`):
    pass the fit's ``config.m_backoff``, so that candidates are scored as they will be used."""
    trees = train_counts.trees(range(len(specs)))
    rows = np.arange(hold_y.size)
    scores = {}
    for m in grid:
        packed = pack_fitted([specs], [trees], [[m_estimate_table(t, m, backoff) for t in trees]])
        proba = posterior_from_joint(joint_log_likelihood(packed, hold_codes))
        scores[m] = float(np.sqrt(np.mean((1.0 - proba[rows, hold_y]) ** 2)))
    return pick_m(scores), scores


def choose_m_loo(specs: Sequence[TreeSpec], counts: TreeSource, codes: np.ndarray,
                 y_codes: np.ndarray, *, backoff: str = "path") -> tuple[float, dict[float, float]]:
    """The default rule: the m of :data:`M_GRID_POSITIVE` with the lowest leave-one-out RMSE of
    the whole model over the rows ``codes``, ``y_codes`` that ``counts`` counted (ties to the
    smaller m), and every candidate's RMSE."""
    prior, *trees = counts.trees(range(len(specs)))
    scores = loo_m_scores(specs[1:], trees, prior.counts[0], codes, y_codes,
                          M_GRID_POSITIVE, backoff=backoff)
    return pick_m(scores), scores


def choose_m_from_codes(config: FitConfig, specs: Sequence[TreeSpec], codes: np.ndarray,
                        y_codes: np.ndarray, rng: np.random.Generator, *,
                        counts: TreeSource | None = None,
                        ) -> tuple[float | None, dict[float, float]]:
    """:func:`plan_m` then :func:`choose_m_loo` or :func:`choose_m` on an in-memory code matrix:
    m and the candidates' RMSE (empty for a fixed m; m None for HDP estimates). ``rng``: the
    member's :func:`~fastpath.pipeline._holdout.holdout_generator`; ``counts``: the ``specs``
    counted on every row, when the caller has them."""
    plan = plan_m(config, codes.shape[0], rng)
    if plan.needs_loo:
        if counts is None:
            counts = CountAccumulator(specs, n_rows=codes.shape[0]).update(codes, y_codes)
        return choose_m_loo(specs, counts, codes, y_codes, backoff=config.m_backoff)
    if not plan.needs_holdout:
        return plan.m, plan.scores
    # the n_hold rows with the smallest seeded hash of their index, in row order: the rule the
    # out-of-core fit applies chunk by chunk, so both hold out the same rows
    hold = plan.holdout_rows(codes.shape[0])
    train = np.ones(codes.shape[0], dtype=bool)
    train[hold] = False
    train_counts = CountAccumulator(specs, n_rows=int(train.sum())).update(codes[train],
                                                                       y_codes[train])
    return choose_m(specs, train_counts, codes[hold], y_codes[hold], backoff=config.m_backoff)


# ---------------------------------------------------------------------- trees -> tables
def structure_name(config: FitConfig) -> str:
    """``nb``, ``tan``, ``kdb, k=2``, ``skdb, k=5``: the structure a fit asks for, in a line."""
    return config.structure + (f", k={config.k}" if STRUCTURES[config.structure].uses_k else "")


def estimate_tables(config: FitConfig, trees: Sequence[ContextTree], m: float | None, *,
                    tree_names: Sequence[str] | None = None,
                    log: FitLog | None = None) -> EstimatedTables:
    """The tables of the registered estimator of ``config.estimation``
    (:data:`~fastpath.pipeline._registry.ESTIMATORS`), given an
    :class:`~fastpath.pipeline._registry.EstimationContext` of the fit's parameters: its
    options (``config.estimation_options``), the sampler's (``config.hdp``), the chosen ``m``
    and ``config.m_backoff``, the seed, threads and ``log`` (default ``config.log()``); its
    tables checked (:func:`~fastpath.pipeline._registry.check_tables`) and made read-only.

    HDP fits warn (:class:`~fastpath.estimate._diagnostics.UnconvergedWarning`, pointed at the
    first line outside fastpath) when a tree's estimates are not certified
    (:meth:`~fastpath.estimate._diagnostics.FitDiagnostics.unconverged`), with advice in the
    classifiers' parameters; ``tree_names`` name the trees in the diagnostics (default:
    ``P(child | parents)``).
    """
    record = ESTIMATORS[config.estimation]
    context = EstimationContext(
        options=config.estimation_options, sampler=config.hdp, n_members=config.n_members,
        m=m, m_backoff=config.m_backoff, seed=seed_int(config.random_state),
        n_threads=config.n_threads, log=config.log() if log is None else log,
        tree_names=tree_names)
    estimated = record.estimate(trees, context)
    check_tables(record, trees, estimated.tables, tree_names)
    for t in estimated.tables:
        t.flags.writeable = False
    return estimated
