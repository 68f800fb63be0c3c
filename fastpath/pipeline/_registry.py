"""The one registration point of each kind of part a fit can be built from: the estimators of the
probability tables (the methods a classifier's ``estimation`` names) and the structure learners
(its ``structure``).

:data:`ESTIMATORS` and :data:`STRUCTURES` map every name those parameters accept to its
record; the parameter checks (:class:`~fastpath.pipeline._config.FitConfig`), the stages
(:func:`~fastpath.pipeline._stages.estimate_tables`, :func:`~fastpath.pipeline._stages.
learn_structure`, :func:`~fastpath.pipeline._stages.structure_from_scores`) and the command
line's choices read them, so a part added with :func:`register_estimator` or
:func:`register_structure` is accepted everywhere at once (docs/architecture.md, "Adding an
estimator", "Adding a structure learner"). Model files store the name, so a file names the part
it was fitted with and loads where that part is registered.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..counts._context_tree import ContextTree
from ..estimate._diagnostics import FitDiagnostics, summarise_fit, tree_label
from ..estimate._hgs import hgs_tables
from ..estimate._hls import hls_tables
from ..estimate._hls_options import HLSOptions
from ..estimate._mestimate import m_estimate_table
from ..estimate.hdp._api import estimate_trees
from ..estimate.hdp._options import HDPOptions
from ..estimate.hdp._results import HDPResult
from ..structure import _graphs as graphs
from ..structure._graphs import Structure
from ..utils._progress import FitLog


@dataclass(frozen=True)
class EstimatedTables:
    """Probability tables (read-only) and, for HDP estimates, the sampler's output."""

    tables: list[np.ndarray]
    hdp_results: list[HDPResult] | None = None
    diagnostics: FitDiagnostics | None = None


@dataclass(frozen=True)
class EstimationContext:
    """What an estimator is given with the context trees: the fit's parameters that concern
    the tables, and nothing of the fit's internals.

    Attributes
    ----------
    options : object or None
        The estimator's options: the ``estimation`` parameter when it is an instance of the
        record's ``options`` class (``estimation=HLSOptions(C=0.5)``), an instance of that class
        with its defaults when the parameter is the estimation method's name, None for an
        estimator without an options class.
    sampler : HDPOptions or None
        An estimator with ``sampler=True``: the options the ``sampler`` parameter gives (a
        preset's, or the ``HDPOptions`` passed), which warnings' advice is written in; each
        tree is sampled with :attr:`tree_sampler`. None otherwise.
    n_members : int
        The members whose estimates the classifier averages (1 for a single classifier).
    m : float or None
        The chosen m when the estimator ``chooses_m``, else None.
    m_backoff : str
        The m-estimates' back-off rule (:func:`fastpath.estimate.m_estimate_table`).
    seed : int
        The fit's seed (from ``random_state``): the same seed, the same tables, for any
        ``n_threads``.
    n_threads : int
        Threads the estimator may use (``n_jobs``).
    log : FitLog
        The fit's stage lines and progress bars (silent unless ``verbose``).
    tree_names : sequence of str or None
        The trees' names for diagnostics (None: ``P(child | parents)``).
    """

    options: Any = None
    sampler: HDPOptions | None = None
    n_members: int = 1
    m: float | None = None
    m_backoff: str = "path"
    seed: int = 0
    n_threads: int = 1
    log: FitLog = dataclasses.field(default_factory=FitLog)
    tree_names: Sequence[str] | None = None

    @property
    def tree_sampler(self) -> HDPOptions:
        """The options each tree is sampled with: :attr:`sampler` with the tolerance of one of
        :attr:`n_members` averaged members (:meth:`HDPOptions.for_members`)."""
        if self.sampler is None:
            raise ValueError("this estimator does not read the sampler (sampler=False)")
        return self.sampler.for_members(self.n_members)


#: ``estimate(trees, context) -> EstimatedTables``: every tree's table, in the trees' order
TableFunction = Callable[[Sequence[ContextTree], EstimationContext], EstimatedTables]


@dataclass(frozen=True)
class TableEstimator:
    """How one estimation method (a value of the classifiers' ``estimation``) turns a fit's
    context trees into probability tables.

    Attributes
    ----------
    name : str
        The name the classifiers' ``estimation`` takes and model files store.
    estimate : callable
        ``estimate(trees, context) -> EstimatedTables``: a table of shape
        ``tree.counts.shape`` for every tree, each row (a node of the tree) a probability
        vector over the child's values, summing to 1 (a registered estimator's rows are
        checked: :func:`check_tables`). ``context`` is an :class:`EstimationContext`.
    options : type or None
        A class whose instances ``estimation`` also takes, in place of the name, carrying the
        estimator's options (:class:`~fastpath.estimate.HLSOptions` for ``"hls"``); it must be
        constructible without arguments (the options of the bare name). Model files store an
        instance as the name and the instance's fields, so a dataclass of JSON values (numbers,
        strings, booleans, None, lists of them) saves and loads with no more code.
    chooses_m : bool
        The estimator reads ``m`` and ``m_backoff``: a rule named by ``m`` (``"auto"``,
        ``"holdout"``) chooses m before the tables are estimated.
    sampler : bool
        The estimator reads the ``sampler`` parameter (``context.sampler``, an
        ``HDPOptions``).
    """

    name: str
    estimate: TableFunction
    options: type | None = None
    chooses_m: bool = False
    sampler: bool = False


def _m_tables(trees: Sequence[ContextTree], context: EstimationContext) -> EstimatedTables:
    return EstimatedTables([m_estimate_table(t, context.m, context.m_backoff) for t in trees])


def _hgs_tables(trees: Sequence[ContextTree], context: EstimationContext) -> EstimatedTables:
    context.log.stage(f"fitting the HGS estimates of {len(trees)} trees")
    return EstimatedTables(hgs_tables(trees))


def _hls_tables(trees: Sequence[ContextTree], context: EstimationContext) -> EstimatedTables:
    context.log.stage(f"fitting the HLS estimates of {len(trees)} trees")
    return EstimatedTables(hls_tables(trees, context.options.C))


def _hdp_tables(trees: Sequence[ContextTree], context: EstimationContext) -> EstimatedTables:
    """HDP estimates, each tree sampled with ``context.tree_sampler``; warns
    (:class:`~fastpath.estimate._diagnostics.UnconvergedWarning`, pointed at the first line
    outside fastpath) when a tree's estimates are not certified, with advice in the
    classifiers' parameters (``context.sampler``'s options)."""
    options = context.tree_sampler
    length = (f"up to {options.max_iter} iterations (adaptive)" if options.adaptive
              else f"{options.n_iter} iterations")
    log = context.log
    log.stage(f"sampling {len(trees)} trees x {options.n_chains} chain(s) x {length}")
    results = estimate_trees(trees, options, seed=context.seed, n_threads=context.n_threads,
                             progress=log.progress("sampling", "tree"),
                             progress_unit="trees")
    tree_names = context.tree_names
    if tree_names is None:
        tree_names = [tree_label(t, i) for i, t in enumerate(trees)]
    # a certified fit's R-hat and ESS are computed when diagnostics_ is first read, unless
    # the traces they read are dropped now (the deferred summary would keep them alive)
    keep = options.keep_traces
    diagnostics = summarise_fit(results, tree_names, deferred=keep, options=context.sampler)
    diagnostics.warn_if_unconverged()
    if not keep:
        results = [r.without_traces() for r in results]
    # the results' read-only float64 estimates themselves: a table is not a second copy
    tables = [r.probabilities for r in results]
    return EstimatedTables(tables, results, diagnostics)


#: every ``estimation`` name, in the order messages and ``--help`` list them: m-estimates, HDP,
#: hierarchical gradient smoothing, hierarchical linear smoothing, then those registered since
ESTIMATORS: dict[str, TableEstimator] = {
    e.name: e for e in (
        TableEstimator("m", _m_tables, chooses_m=True),
        TableEstimator("hdp", _hdp_tables, sampler=True),
        TableEstimator("hgs", _hgs_tables),
        TableEstimator("hls", _hls_tables, options=HLSOptions),
    )
}


#: ``learn(codes, y_codes, cardinalities, n_classes, k, order, scores) -> Structure``
LearnFunction = Callable[[np.ndarray, np.ndarray, tuple[int, ...], int, int,
                          "Sequence[int] | None", "tuple[np.ndarray, np.ndarray] | None"],
                         Structure]
#: ``from_scores(mutual_information, conditional_mutual_information, n_attributes, k, order)``
ScoresFunction = Callable[["np.ndarray | None", "np.ndarray | None", int, int,
                           "Sequence[int] | None"], Structure]


@dataclass(frozen=True)
class StructureLearner:
    """How one ``structure`` name learns a member's graph (:func:`register_structure` adds
    one; the built-in ones are :data:`STRUCTURES`' first four).

    Attributes
    ----------
    name : str
        The name the classifiers' ``structure`` takes and model files store.
    learn : callable
        ``learn(codes, y_codes, cardinalities, n_classes, k, order, scores) -> Structure`` from
        an in-memory code matrix (``order``: a member's attribute order in place of the
        ``I(X; Y)`` ranking, or None; ``scores``: the codes' ``(I(X; Y), I(X_i; X_j | Y))``
        when the caller has them, or None). The :class:`~fastpath.structure.Structure` is one
        of its kinds (``"nb"``, ``"tan"``, ``"kdb"``): the kind is the graph's shape, the
        learner's name how it was found.
    from_scores : callable or None
        ``from_scores(mutual_information, conditional_mutual_information, n_attributes, k,
        order) -> Structure``: the same structure from the scores an out-of-core fit gathers
        (None for ``"nb"``, which needs none). None: the learner fits in memory only.
    uses_k : bool
        ``k`` bounds the parents (the fit's stage line names it).
    selective : bool
        Selective kDB: a kDB-K whose (n*, k*) the leave-one-out search selects
        (:mod:`fastpath.structure._selective`, which learns that kDB-K itself). The built-in
        ``"skdb"`` only: :func:`register_structure` refuses it.
    ordered : bool
        The learner follows an attribute ``order`` and reads the ``scores``: an ensemble's
        members after the first draw their orders from ``I(X; Y)`` (ESKDB's diversity), and
        members coding columns alike share their mutual informations. A learner that is not
        gets ``order=None`` and ``scores=None``.
    scores : bool
        The learner reads the pair scores (``I(X; Y)`` and ``I(X_i; X_j | Y)``); False (naive
        Bayes) lets an out-of-core fit skip the pass that gathers them. An ordered learner
        reads them (the members' orders are drawn from ``I(X; Y)``).
    """

    name: str
    learn: LearnFunction
    from_scores: ScoresFunction | None = None
    uses_k: bool = False
    selective: bool = False
    ordered: bool = False
    scores: bool = True


def _naive_bayes(codes: np.ndarray, y_codes: np.ndarray, cards: tuple[int, ...],
                 n_classes: int, k: int, order: Sequence[int] | None,
                 scores: tuple[np.ndarray, np.ndarray] | None) -> Structure:
    return graphs.naive_bayes(len(cards))


def _naive_bayes_from_scores(mi: np.ndarray | None, cmi: np.ndarray | None, n_attributes: int,
                             k: int, order: Sequence[int] | None) -> Structure:
    return graphs.naive_bayes(n_attributes)


def _tan(codes: np.ndarray, y_codes: np.ndarray, cards: tuple[int, ...], n_classes: int,
         k: int, order: Sequence[int] | None,
         scores: tuple[np.ndarray, np.ndarray] | None) -> Structure:
    return graphs.tan(codes, y_codes, cards, n_classes)


def _tan_from_scores(mi: np.ndarray | None, cmi: np.ndarray | None, n_attributes: int, k: int,
                     order: Sequence[int] | None) -> Structure:
    return graphs.tan_from_scores(mi, cmi)


def _kdb(codes: np.ndarray, y_codes: np.ndarray, cards: tuple[int, ...], n_classes: int,
         k: int, order: Sequence[int] | None,
         scores: tuple[np.ndarray, np.ndarray] | None) -> Structure:
    if scores is None:
        return graphs.kdb(codes, y_codes, cards, n_classes, k, order)
    return graphs.kdb_from_scores(*scores, k, order)


def _kdb_from_scores(mi: np.ndarray | None, cmi: np.ndarray | None, n_attributes: int, k: int,
                     order: Sequence[int] | None) -> Structure:
    return graphs.kdb_from_scores(mi, cmi, k, order)


#: every ``structure`` name, in the order messages and ``--help`` list them, then those
#: registered since
STRUCTURES: dict[str, StructureLearner] = {
    s.name: s for s in (
        StructureLearner("nb", _naive_bayes, _naive_bayes_from_scores, scores=False),
        StructureLearner("tan", _tan, _tan_from_scores),
        StructureLearner("kdb", _kdb, _kdb_from_scores, uses_k=True, ordered=True),
        StructureLearner("skdb", _kdb, _kdb_from_scores, uses_k=True, selective=True,
                         ordered=True),
    )
}

#: the parts this package defines, which cannot be replaced or unregistered
BUILT_IN_ESTIMATORS = frozenset(ESTIMATORS)
BUILT_IN_STRUCTURES = frozenset(STRUCTURES)
#: the names a registered part of each kind cannot take: the built-ins of its kind, and for
#: structures ``"eskdb"``, which the command line's ``--structure`` reads as the ensemble
_RESERVED = {TableEstimator: BUILT_IN_ESTIMATORS,
             StructureLearner: BUILT_IN_STRUCTURES | {"eskdb"}}


def _register(table: dict[str, Any], record: Any, kind: type, replace: bool) -> None:
    if not isinstance(record, kind):
        raise TypeError(f"expected a {kind.__name__}, got {record!r:.80}")
    if not isinstance(record.name, str) or not record.name:
        raise ValueError(f"a {kind.__name__}'s name must be a non-empty string, got "
                         f"{record.name!r}")
    if record.name in _RESERVED[kind]:
        raise ValueError(f"{record.name!r} is a built-in name; register yours under another")
    if record.name in table and not replace:
        raise ValueError(f"{record.name!r} is already registered (pass replace=True to "
                         "replace it)")
    table[record.name] = record


def _unregister(table: dict[str, Any], name: str, kind: type) -> None:
    if name in _RESERVED[kind]:
        raise ValueError(f"{name!r} is a built-in name and cannot be unregistered")
    if name not in table:
        raise ValueError(f"{name!r} is not registered")
    del table[name]


#: how far a registered estimator's row may sum from 1: rounding of a few operations per
#: value, for the widest tables a model holds
ROW_SUM_TOLERANCE = 1e-9


def check_tables(record: TableEstimator, trees: Sequence[ContextTree], tables: Sequence[Any],
                 tree_names: Sequence[str] | None = None) -> None:
    """Refuse an estimator's tables that prediction could not read, each error naming the
    estimator, the tree and the node: one float64 table per tree, of the tree's shape (nodes
    x values), and for a registered estimator, every row a probability vector (finite values
    in [0, 1] summing to 1 within :data:`ROW_SUM_TOLERANCE` per value). The built-in
    estimators' tables are their tests' (m-estimates backing off by value are not
    renormalised: ``m_backoff="value"``)."""
    name = record.name
    if len(tables) != len(trees):
        raise ValueError(f"estimator {name!r} returned {len(tables)} tables for "
                         f"{len(trees)} trees")
    for i, (tree, table) in enumerate(zip(trees, tables, strict=True)):
        if (not isinstance(table, np.ndarray) or table.dtype != np.float64
                or table.shape != tree.counts.shape):
            raise ValueError(f"estimator {name!r}: table {i} must be a float64 array of "
                             f"shape {tree.counts.shape} (the tree's nodes x values), got "
                             f"{getattr(table, 'dtype', type(table).__name__)} "
                             f"{getattr(table, 'shape', '')}")
    if name in BUILT_IN_ESTIMATORS:
        return
    for i, (tree, table) in enumerate(zip(trees, tables, strict=True)):
        label = tree_label(tree, i) if tree_names is None else tree_names[i]
        with np.errstate(invalid="ignore"):
            bad = ~((table >= 0) & (table <= 1)).all(axis=1)
            sums = table.sum(axis=1)
        if bad.any():
            node = int(np.flatnonzero(bad)[0])
            raise ValueError(f"estimator {name!r}: table {i} ({label}), node {node}: its row "
                             f"{table[node].tolist()!r:.120} holds values outside [0, 1] (or "
                             "not finite)")
        off = np.abs(sums - 1.0) > ROW_SUM_TOLERANCE * table.shape[1]
        if off.any():
            node = int(np.flatnonzero(off)[0])
            raise ValueError(f"estimator {name!r}: table {i} ({label}), node {node}: its row "
                             f"sums to {float(sums[node])!r}, not 1 (each row is P(child | the "
                             "node's path), a probability vector)")


def register_estimator(estimator: TableEstimator, *, replace: bool = False) -> None:
    """Make ``estimator.name`` a value of ``estimation`` (``ValueError``: a taken name)."""
    _register(ESTIMATORS, estimator, TableEstimator, replace)


def unregister_estimator(name: str) -> None:
    """Remove an estimator :func:`register_estimator` added."""
    _unregister(ESTIMATORS, name, TableEstimator)


def register_structure(learner: StructureLearner, *, replace: bool = False) -> None:
    """Make ``learner.name`` a value of ``structure`` (``ValueError``: a taken name, or
    ``selective=True``: selective kDB's leave-one-out selection learns its own kDB-K, in memory
    and out of core, and is the built-in ``"skdb"`` only)."""
    if isinstance(learner, StructureLearner) and learner.selective:
        raise ValueError(f"structure {learner.name!r}: selective=True is the built-in 'skdb' "
                         "learner's (its leave-one-out selection learns its own kDB-K); "
                         "register a learner without it")
    if isinstance(learner, StructureLearner) and learner.ordered and not learner.scores:
        raise ValueError(f"structure {learner.name!r}: an ordered learner reads the scores "
                         "(its members' orders are drawn from I(X; Y)): scores=False applies "
                         "to a learner that is not ordered")
    _register(STRUCTURES, learner, StructureLearner, replace)


def unregister_structure(name: str) -> None:
    """Remove a structure learner :func:`register_structure` added."""
    _unregister(STRUCTURES, name, StructureLearner)


def uses_sampler(estimation: Any) -> bool:
    """Whether ``estimation`` (a stored name) is a registered estimation method with the HDP
    sampler (whose fits have sampler options and diagnostics)."""
    record = ESTIMATORS.get(estimation) if isinstance(estimation, str) else None
    return record is not None and record.sampler


def estimator_of(estimation: Any) -> tuple[TableEstimator, Any]:
    """The record of the ``estimation`` parameter (a registered name, or an instance of a
    registered estimator's ``options`` class) and its options (:attr:`EstimationContext.options`:
    the instance, the options class's defaults for the name, None without an options class);
    ``ValueError`` listing the names otherwise."""
    if isinstance(estimation, str) and estimation in ESTIMATORS:
        record = ESTIMATORS[estimation]
        return record, (None if record.options is None else record.options())
    for record in ESTIMATORS.values():
        if record.options is not None and isinstance(estimation, record.options):
            return record, estimation
    raise ValueError(f"estimation must be one of {tuple(ESTIMATORS)}, got {estimation!r}")


def structure_learner(structure: Any) -> StructureLearner:
    """The record of the ``structure`` parameter; ``ValueError`` listing the names otherwise."""
    if isinstance(structure, str) and structure in STRUCTURES:
        return STRUCTURES[structure]
    raise ValueError(f"structure must be one of {tuple(STRUCTURES)}, got {structure!r}")


def ordered_structure_learner(structure: Any) -> StructureLearner:
    """The record of an ensemble's ``structure`` parameter: a registered learner that follows
    an attribute order (``ordered=True``), so that members differ by their drawn orders;
    ``ValueError`` listing those otherwise."""
    ordered = tuple(name for name, s in STRUCTURES.items() if s.ordered)
    if not (isinstance(structure, str) and structure in ordered):
        raise ValueError(f"structure of an ensemble must be an ordered structure learner, one "
                         f"of {ordered}, got {structure!r}")
    return STRUCTURES[structure]
