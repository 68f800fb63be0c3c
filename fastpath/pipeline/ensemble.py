"""Ensembles of selective kDB (ESKDB), in memory: every member through the same stages.

Zhang, Petitjean & Buntine, *Bayesian network classifiers using ensembles and smoothing*,
Knowledge and Information Systems 62 (2020). Member ``e`` of ``E``:

1. codes the table with its own encoder: Weka's MDL cut points, or (``stochastic=True``) cut
   points drawn by :func:`~fastpath.encode.stochastic_mdl_cut_points`;
2. orders the attributes: member 0 by ``I(X_j; Y)`` (as selective kDB does), the others by an
   order drawn with probability proportional to ``I(X_j; Y)`` (:func:`~fastpath.structure.
   sample_order`);
3. runs selective kDB in that order (kDB-K parents, then n* and k* by leave-one-out RMSE);
4. counts its context trees and estimates their tables (m-estimates with the member's own m
   choice, or HDP: one sampler call over every distinct tree of the members, spread over
   threads; members whose child, parents and coding coincide share one tree and its fit).

The ensemble's ``P(y | x)`` is the mean of the members' posteriors. Member ``e`` draws from the
``e``-th child of one ``SeedSequence``, so an integer ``random_state`` reproduces the whole
ensemble; member 0 without stochastic discretisation is exactly the selective kDB that
:func:`~fastpath.pipeline.memory.fit_in_memory` fits with the same parameters (same holdout
for m, same sampler streams for its trees).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..counts.context_tree import ContextTree
from ..counts.counting import CountAccumulator, TreeSpec
from ..encode.encoder import TableEncoder
from ..estimate.diagnostics import FitDiagnostics, tree_label
from ..estimate.hdp.results import HDPResult
from ..predict.inference import PackedModel, joint_log_likelihood, posterior_from_joint
from ..structure.graphs import Structure
from ..structure.orders import sample_order
from ..structure.scores import mutual_information
from ..structure.selective import SelectedStructure, select_skdb
from ..utils.progress import FitLog
from ..utils.validation import as_generator, seed_int
from .config import FitConfig
from .stages import (
    LearnedStructure,
    choose_m_from_codes,
    estimate_tables,
    name_trees,
    pack,
    selected,
    tree_specs,
)

__all__ = [
    "FittedEnsemble", "Member", "ensemble_proba", "estimate_members",
    "fit_ensemble_in_memory", "learn_member", "member_codes", "member_streams",
]


@dataclass
class Member:
    """One member of a fitted ensemble: its coding, structure, trees and tables."""

    encoder: TableEncoder
    order: tuple[int, ...]
    selection: SelectedStructure
    tree_specs: list[TreeSpec]
    trees: list[ContextTree]
    probability_tables: list[np.ndarray]
    m: float | None = None
    m_scores: dict[float, float] | None = None
    packed: PackedModel | None = field(default=None, repr=False)

    @property
    def structure(self) -> Structure:
        return self.selection.structure

    def pack(self) -> PackedModel:
        """The member's prediction arrays (built once)."""
        if self.packed is None:
            self.packed = pack(self.tree_specs, self.trees, self.probability_tables)
        return self.packed

    def predict_proba(self, frame: pd.DataFrame) -> np.ndarray:
        """The member's ``P(y | x)`` of every row of ``frame`` (columns as in fit)."""
        codes = self.encoder.transform(frame)
        return posterior_from_joint(joint_log_likelihood(self.pack(), codes))


@dataclass
class FittedEnsemble:
    """What an ensemble fit learns (the ensemble estimator's ``*_`` attributes)."""

    classes_: np.ndarray
    n_features_in_: int
    feature_names_in_: np.ndarray | None
    members_: list[Member]
    hdp_results_: list[HDPResult] | None = None
    diagnostics_: FitDiagnostics | None = None
    n_passes_: int | None = None


def member_streams(random_state, n_members: int) -> list[np.random.Generator]:
    """One generator per member, children of one ``SeedSequence`` (reproducible for an int)."""
    root = np.random.SeedSequence(seed_int(random_state))
    return [np.random.default_rng(child) for child in root.spawn(n_members)]


def fit_ensemble_in_memory(config: FitConfig, n_members: int, stochastic: bool,
                           frame: pd.DataFrame, has_names: bool, classes: np.ndarray,
                           y_codes: np.ndarray, *, stacklevel: int = 2) -> FittedEnsemble:
    """Fit ``n_members`` selective kDB members (module docstring) on a checked frame.

    ``config`` holds the members' shared parameters (``k`` is the K of selective kDB).
    """
    n_classes = classes.size
    streams = member_streams(config.random_state, n_members)
    log = config.log()

    def fit_member(e: int, rng: np.random.Generator) -> Member:
        log.stage(f"member {e + 1}/{n_members}: coding, attribute order, selective kDB")
        encoder, codes, learned, specs = learn_member(config, e, rng, stochastic, frame,
                                                      y_codes, n_classes)
        # member 0 holds out the rows a single selective kDB holds out (same generator)
        counts = CountAccumulator(specs).update(codes, y_codes)
        m, scores = choose_m_from_codes(
            config, specs, codes, y_codes, as_generator(config.random_state) if e == 0 else rng,
            counts=counts,
        )
        trees = name_trees(counts, specs, encoder.feature_names_)
        return Member(encoder, learned.structure.order, learned.selection, specs, trees, [], m,
                      scores if config.estimator == "m" else None)

    # members in parallel threads: each draws only from its own generator and the results are
    # kept in member order, so the ensemble does not depend on the number of threads
    n_threads = min(config.n_threads, n_members)
    if n_threads > 1:
        with ThreadPoolExecutor(n_threads) as pool:
            members = list(pool.map(fit_member, range(n_members), streams))
    else:
        members = [fit_member(e, rng) for e, rng in enumerate(streams)]

    results, diagnostics = estimate_members(config, members, log=log,
                                            stacklevel=stacklevel + 1)
    return FittedEnsemble(
        classes_=classes,
        n_features_in_=frame.shape[1],
        feature_names_in_=np.asarray(frame.columns, dtype=object) if has_names else None,
        members_=members,
        hdp_results_=results,
        diagnostics_=diagnostics,
    )


def learn_member(config: FitConfig, index: int, rng: np.random.Generator, stochastic: bool,
                 frame: pd.DataFrame, y_codes: np.ndarray, n_classes: int
                 ) -> tuple[TableEncoder, np.ndarray, LearnedStructure, list[TreeSpec]]:
    """Member ``index``'s coding, attribute order and selective kDB, learned in memory
    (steps 1-3 of the module docstring): its encoder, the codes of ``frame``, the selected
    structure and its trees' specs. ``rng`` is the member's generator (drawn in that order)."""
    encoder = TableEncoder(
        config.categorical_features,
        discretization="stochastic" if stochastic else "mdl",
        random_state=rng,
    ).fit(frame, y_codes, n_classes)
    codes = encoder.transform(frame)
    cards = encoder.cardinalities_
    order = None
    if index > 0:
        order = sample_order(mutual_information(codes, y_codes, cards, n_classes), rng)
    learned = selected(select_skdb(codes, y_codes, cards, n_classes, config.k, order=order))
    specs = tree_specs(learned.structure, cards, n_classes, learned.attributes)
    return encoder, codes, learned, specs


def estimate_members(config: FitConfig, members: list[Member], *, log: FitLog | None = None,
                     stacklevel: int = 2
                     ) -> tuple[list[HDPResult] | None, FitDiagnostics | None]:
    """Every member's probability tables (set on the members), by any driver.

    m-estimates with each member's m; or HDP: members whose (child, parents, coding of those
    columns) coincide count the same tree, so it is sampled once and shared (the class prior,
    every nominal-only factor that two orders give the same parents). One sampler call over the
    distinct trees spreads them over threads; member 0's trees come first, so they keep the
    stream keys (positions) of a single selective kDB fit. Returns the sampler's results and
    diagnostics (None for m-estimates).
    """
    if config.estimator == "m":
        for member in members:
            member.probability_tables = estimate_tables(config, member.trees, member.m).tables
        return None, None
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
                names.append(f"member {e}: {tree_label(tree, i)}")
            slots[-1].append(position[key])
    estimated = estimate_tables(config, distinct, None, tree_names=names, log=log)
    for member, slot in zip(members, slots, strict=True):
        member.probability_tables = [estimated.tables[j] for j in slot]
    return estimated.hdp_results, estimated.diagnostics


def _tree_key(spec: TreeSpec, encoder: TableEncoder) -> tuple:
    """What determines a member's context tree: its variables and how they are coded."""
    columns = [c for c in (spec.child, *spec.conditioning) if c >= 0]
    return spec.child, spec.conditioning, tuple(encoder.codings_[c] for c in columns)


def member_codes(members: list[Member], frame: pd.DataFrame) -> list[np.ndarray]:
    """Every member's codes of ``frame``; a column the members code alike (every nominal one,
    numeric ones cut at the same points) is coded once."""
    cache: dict = {}
    return [member.encoder.transform_shared(frame, cache) for member in members]


def ensemble_proba(members: list[Member], frame: pd.DataFrame) -> np.ndarray:
    """The mean of the members' posteriors (ESKDB's combination)."""
    total = None
    for member, codes in zip(members, member_codes(members, frame), strict=True):
        proba = posterior_from_joint(joint_log_likelihood(member.pack(), codes))
        total = proba if total is None else total + proba
    return total / len(members)
