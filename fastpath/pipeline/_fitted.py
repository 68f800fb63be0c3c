"""What a fit learns: one record every driver returns and every estimator assigns.

A fitted classifier is a list of *members*, each a Bayesian network classifier with its own
coding of the columns, structure, context trees and probability tables; its ``P(y | x)`` is the
mean of the members' posteriors. A single classifier (``BayesNetClassifier``) is an ensemble of
one member, so one record, one model-file layout and one prediction path serve both.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from ..counts._context_tree import ContextTree
from ..counts._counting import TreeSpec
from ..encode._encoder import TableEncoder
from ..estimate._diagnostics import FitDiagnostics
from ..estimate.hdp._results import HDPResult
from ..predict._inference import PackedMembers
from ..structure._graphs import Structure
from ..structure._selective import SelectedStructure
from ._stages import pack_fitted


def node_classes(tree: ContextTree) -> np.ndarray:
    """The class below which each node of a tree whose first branch is the class lies (-1 at
    the root): a level's nodes take their parents' (the levels are contiguous, in order)."""
    out = np.full(tree.n_nodes, -1, np.int64)
    offsets = tree.level_offsets
    if tree.depth >= 1:
        out[offsets[1]:offsets[2]] = tree.branch_value[offsets[1]:offsets[2]]
    for d in range(2, tree.depth + 1):
        out[offsets[d]:offsets[d + 1]] = out[tree.parent[offsets[d]:offsets[d + 1]]]
    return out


@dataclass(kw_only=True)
class Member:
    """One member of a fitted classifier: its coding, structure, trees and tables.

    ``selection`` is the selective kDB record (``None`` for NB, TAN and kDB); ``m`` the m of
    m-estimates (``None`` for HDP estimates) and ``m_scores`` every candidate's RMSE when it was
    chosen; ``term_weights`` (trees, classes) the discriminative layer's weights on each tree's
    log-probabilities, the class prior's first (:mod:`fastpath.pipeline._weights`; ``None``:
    the generative model). The estimator's prediction plan packs its members' trees
    (:func:`fastpath.pipeline._members.prediction_plan`), so a member keeps no packed copy;
    :meth:`pack` packs one member alone, as a model of one member.

    Built by keywords only: a driver's member by :meth:`counted` (tables estimated later by
    ``finish_fit``), a loaded one with every field it read.
    """

    encoder: TableEncoder
    structure: Structure
    tree_specs: list[TreeSpec]
    trees: list[ContextTree]
    probability_tables: list[np.ndarray]
    selection: SelectedStructure | None = None
    m: float | None = None
    m_scores: dict[float, float] | None = None
    term_weights: np.ndarray | None = None

    @property
    def order(self) -> tuple[int, ...]:
        """The member's attribute order (selective kDB: the order of its kDB-K, before the
        selection kept a prefix of it)."""
        if self.selection is not None:
            return tuple(self.selection.full_structure.order)
        return tuple(self.structure.order)

    @classmethod
    def counted(cls, encoder: TableEncoder, structure: Structure, tree_specs: list[TreeSpec],
                trees: list[ContextTree], *, selection: SelectedStructure | None = None,
                m: float | None = None, m_scores: dict[float, float] | None = None) -> Member:
        """A member whose trees are counted and whose tables are not estimated yet: how every
        driver (in memory, out of core, ``partial_fit``) builds its members. Its tables are
        left empty because they genuinely come later: :func:`~fastpath.pipeline._members.
        finish_fit` estimates every member's at once (the trees that members share are sampled
        once, in one sampler call) and sets them in place."""
        return cls(encoder=encoder, structure=structure, tree_specs=tree_specs, trees=trees,
                   probability_tables=[], selection=selection, m=m, m_scores=m_scores)

    def pack(self, tables: list[np.ndarray] | None = None) -> PackedMembers:
        """The member's trees packed for prediction, as a model of one member
        (:func:`~fastpath.pipeline._stages.pack_fitted`), with its prediction tables or with
        ``tables`` (laid out as :attr:`probability_tables`, the class prior's first)."""
        return pack_fitted([self.tree_specs], [self.trees],
                           [self.prediction_tables() if tables is None else tables])

    def prediction_tables(self) -> list[np.ndarray]:
        """The tables a prediction reads: the estimates, each node raised to the weight of its
        tree for the class it lies below (``P(y) ** w_(0,y)`` for the class prior; a tree's
        root, above the class, keeps its estimate), or the estimates themselves without
        ``term_weights`` (:mod:`fastpath.pipeline._weights`)."""
        weights = self.term_weights
        if weights is None:
            return self.probability_tables
        out = [self.probability_tables[0] ** weights[0][None, :]]
        for t, (tree, table) in enumerate(zip(self.trees[1:], self.probability_tables[1:],
                                              strict=True), start=1):
            classes = node_classes(tree)
            exponent = np.where(classes >= 0, weights[t][np.maximum(classes, 0)], 1.0)
            out.append(table ** exponent[:, None])
        return out


@dataclass
class FittedModel:
    """The learned state of a classifier (the estimators' ``*_`` attributes).

    Fields left ``None`` do not apply to the fit (``n_passes_`` for in-memory fits,
    ``hdp_results_`` and ``diagnostics_`` for m-estimates) and are not assigned.
    """

    classes_: np.ndarray
    n_features_in_: int
    feature_names_in_: np.ndarray | None
    members_: list[Member]
    hdp_results_: list[HDPResult] | None = None
    diagnostics_: FitDiagnostics | None = None
    n_passes_: int | None = None
    #: what the fit warned about (each message once), whether or not it was shown
    fit_warnings_: tuple[str, ...] | None = None
    #: the columns the fit left out (identifiers, dates, or those ``exclude_features`` lists),
    #: by name (``x<j>`` for a table without names); prediction ignores them
    excluded_features_: tuple[str, ...] | None = None
    #: the ridge of the discriminative layer's weights (``discriminative`` fits only)
    discriminative_penalty_: float | None = None
    #: the tables' posterior draws a loaded model file kept (a
    #: :class:`~fastpath.pipeline._intervals.ModelDraws`); a fitted model draws them from its
    #: ``hdp_results_`` instead
    posterior_draws_: Any = None

    def attributes(self) -> dict[str, Any]:
        """The fields that apply, by attribute name."""
        return {f.name: getattr(self, f.name) for f in fields(self)
                if getattr(self, f.name) is not None}

    @classmethod
    def attribute_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in fields(cls))
