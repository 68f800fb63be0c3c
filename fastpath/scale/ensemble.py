"""Out-of-core ensembles (ESKDB): every member's statistics in the same passes over the data.

:func:`fit_ensemble_passes` is :func:`fastpath.pipeline.ensemble.fit_ensemble_in_memory` over a
runner (:class:`~fastpath.scale.passes.LocalRunner` for files and chunk iterators,
:class:`~fastpath.scale.dask.DaskRunner` for Dask DataFrames), pass by pass:

1. **schema**, once for all members; member ``e`` then draws its own (stochastic) MDL cut
   points from the class histograms (:meth:`SchemaStats.encoder`);
2. **pair statistics** of every member (each codes the rows with its own cut points; a
   :class:`~fastpath.scale.schema.MemberCoder` codes a chunk once per member and
   :class:`~fastpath.scale.stats.MemberStats` hands each member its codes), from which member 0
   takes the mutual-information order and the others draw theirs, then kDB-K parents;
3. **counts** of every member's kDB-K trees (and the m holdout rows of ``m="holdout"``);
4. **leave-one-out** of every member (its n* and k*);
5. with m-estimates and ``m="auto"``: the leave-one-out error of every candidate m of every
   member.

So an ensemble of any size reads the data four or five times (more when the pairwise tables of
all members exceed ``pair_memory``: they are split into groups per member, and the groups of
every member share passes), not five times per member. Memory: per member, its pair tables
(bounded by ``pair_memory / n_members``), its count trees and, for ``m="holdout"``, at most
5,000 held-out rows; nothing grows with the number of rows.

Each member draws from the same generator, in the same order, as in memory (cut points, then
its attribute order, then its holdout key), and the passes compute the same integers and sums
(:mod:`fastpath.scale.passes`), so with numeric columns of at most ``max_bins`` distinct values
the streamed ensemble equals the in-memory one (tested); with more, the cut points come from
compressed histograms, as for a single model.
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import numpy as np

from ..encode.sketch import DEFAULT_MAX_BINS
from ..pipeline.config import FitConfig
from ..pipeline.ensemble import FittedEnsemble, Member, estimate_members, member_streams
from ..pipeline.holdout import holdout_threshold
from ..pipeline.stages import choose_m, name_trees, plan_m, selected, tree_specs
from ..structure.graphs import kdb_from_scores
from ..structure.orders import sample_order
from ..structure.selective import DEFAULT_LOO_M, SelectedStructure
from ..utils.validation import as_generator
from .dask import dask_runner
from .passes import (
    DEFAULT_PAIR_MEMORY,
    Runner,
    local_runner,
    loo_m_choice,
    loo_m_statistic,
    schema_pass,
)
from .schema import Coder, MemberCoder
from .stats import CountStats, LooStats, MemberStats, PairStats, ProjectedCounts, pair_groups

__all__ = ["fit_ensemble_dask", "fit_ensemble_passes", "fit_ensemble_stream"]


def fit_ensemble_stream(config: FitConfig, n_members: int, stochastic: bool, X: Any,
                        y: Any = None, *, chunksize: int | None = None,
                        max_bins: int = DEFAULT_MAX_BINS, pair_memory: int = DEFAULT_PAIR_MEMORY,
                        stacklevel: int = 2) -> FittedEnsemble:
    """An ensemble fitted from a stream in this process (a path, a callable returning chunk
    iterators, or an iterator of chunks; :func:`fastpath.scale.fit_stream`)."""
    with local_runner(X, y, chunksize, config.n_threads) as runner:
        return fit_ensemble_passes(config, n_members, stochastic, runner, y, max_bins=max_bins,
                                   pair_memory=pair_memory, stacklevel=stacklevel + 1)


def fit_ensemble_dask(config: FitConfig, n_members: int, stochastic: bool, ddf, y: Any = None,
                      *, chunksize: int | None = None, max_bins: int = DEFAULT_MAX_BINS,
                      pair_memory: int = DEFAULT_PAIR_MEMORY, split_every: int = 8,
                      stacklevel: int = 2) -> FittedEnsemble:
    """An ensemble fitted on a Dask DataFrame, every pass a map and tree reduction over its
    partitions (:mod:`fastpath.scale.dask`)."""
    runner = dask_runner(ddf, y, chunksize, split_every)
    return fit_ensemble_passes(config, n_members, stochastic, runner, y, max_bins=max_bins,
                               pair_memory=pair_memory, stacklevel=stacklevel + 1)


def fit_ensemble_passes(config: FitConfig, n_members: int, stochastic: bool, runner: Runner,
                        y: Any, *, max_bins: int = DEFAULT_MAX_BINS,
                        pair_memory: int = DEFAULT_PAIR_MEMORY,
                        stacklevel: int = 2) -> FittedEnsemble:
    """Fit ``n_members`` selective kDB-K members (``config.k``) in shared passes over
    ``runner`` (module docstring); ``y`` names the target column (default: the last)."""
    log = config.log()
    stats, classes, class_order = schema_pass(config, runner, y, max_bins, log)
    n = stats.n_rows
    if n < 2:
        raise ValueError(f"leave-one-out needs at least 2 rows, got {n}")
    n_classes = classes.size
    streams = member_streams(config.random_state, n_members)
    encoders = []
    for e, rng in enumerate(streams):
        with warnings.catch_warnings():
            if e > 0:  # the schema's warnings (identifiers, stray tokens) are said once
                warnings.simplefilter("ignore")
            encoders.append(stats.encoder(
                config.categorical_features, class_order,
                discretization="stochastic" if stochastic else "mdl", random_state=rng,
            ))
    coder = MemberCoder([Coder(enc, stats.target, classes) for enc in encoders])
    cards = [enc.cardinalities_ for enc in encoders]
    p = len(cards[0])

    # pass 2: every member's pair statistics; member e's g-th group rides in pass g
    log.stage(f"pass 2: pair statistics of {n} rows, {n_members} members")
    groups = [pair_groups(c, n_classes, n, max(1, pair_memory // n_members)) for c in cards]
    mi: list[np.ndarray | None] = [None] * n_members
    cmi = [np.zeros((p, p)) for _ in range(n_members)]
    for g in range(max(len(gs) for gs in groups)):
        gathered = runner.run(coder, MemberStats([
            PairStats(cards[e], n_classes, n, groups[e][g], config.n_threads)
            if g < len(groups[e]) else None
            for e in range(n_members)
        ]))
        for e, ps in enumerate(gathered.items):
            if ps is None:
                continue
            if mi[e] is None:
                mi[e] = ps.mutual_information()
            values = ps.cmi_values()
            cmi[e][ps.pair_i, ps.pair_j] = values
            cmi[e][ps.pair_j, ps.pair_i] = values
    structures = []
    for e, rng in enumerate(streams):
        order = None if e == 0 else sample_order(mi[e], rng)
        structures.append(kdb_from_scores(mi[e], cmi[e], config.k, order))

    # pass 3: the kDB-K counts of every member, each with its m holdout aside
    plans, all_specs, stats3 = [], [], []
    for e, rng in enumerate(streams):
        # member 0 holds out the rows a single selective kDB holds out (same generator)
        plan = plan_m(config, n, as_generator(config.random_state) if e == 0 else rng)
        threshold = holdout_threshold(n, plan.n_hold, plan.key) if plan.needs_holdout else None
        specs = tree_specs(structures[e], cards[e], n_classes, structures[e].order)
        plans.append(plan)
        all_specs.append(specs)
        stats3.append(CountStats(specs, plan.key, threshold))
    log.stage(f"pass {runner.n_passes + 1}: counting the members' context trees")
    counted = runner.run(coder, MemberStats(stats3)).items
    holdouts, trains, fulls = [], [], []
    for c in counted:
        hold_codes, hold_y = c.holdout(p)
        full = copy.deepcopy(c.accumulator)
        if hold_y.size:
            full.update(hold_codes, hold_y)
        holdouts.append((hold_codes, hold_y))
        trains.append(c.accumulator)
        fulls.append(full)

    # pass 4: every member's leave-one-out selection of n* and k*
    log.stage(f"pass {runner.n_passes + 1}: leave-one-out selection, {n_members} members")
    loo = runner.run(coder, MemberStats([
        LooStats(all_specs[e][1:], [fulls[e].tree(t) for t in range(1, len(all_specs[e]))],
                 fulls[e].tree(0).counts[0], n, structures[e].k, DEFAULT_LOO_M,
                 config.n_threads)
        for e in range(n_members)
    ])).items
    learned, specs_sel = [], []
    for e in range(n_members):
        chosen = selected(SelectedStructure.from_rmse(structures[e], loo[e].rmse(),
                                                      DEFAULT_LOO_M))
        specs = tree_specs(chosen.structure, cards[e], n_classes, chosen.attributes)
        trains[e] = ProjectedCounts(trains[e], all_specs[e], specs)
        fulls[e] = ProjectedCounts(fulls[e], all_specs[e], specs)
        learned.append(chosen)
        specs_sel.append(specs)

    # pass 5 (m="auto"): every member's leave-one-out choice of m
    choices: list[tuple[float | None, dict[float, float]]] = [(pl.m, pl.scores) for pl in plans]
    if any(pl.needs_loo for pl in plans):
        log.stage(f"pass {runner.n_passes + 1}: choosing m (loo), {n_members} members")
        groups_m = runner.run(coder, MemberStats([
            loo_m_statistic(config, specs_sel[e], fulls[e], n) if plans[e].needs_loo else None
            for e in range(n_members)
        ])).items
        for e, group in enumerate(groups_m):
            if group is not None:
                choices[e] = loo_m_choice(group, n)
    for e, plan in enumerate(plans):
        if plan.needs_holdout:
            choices[e] = choose_m(specs_sel[e], trains[e], *holdouts[e],
                                  backoff=config.m_backoff)

    members = []
    for e in range(n_members):
        trees = name_trees(fulls[e], specs_sel[e], encoders[e].feature_names_)
        m, scores = choices[e]
        members.append(Member(encoders[e], learned[e].structure.order, learned[e].selection,
                              specs_sel[e], trees, [], m,
                              scores if config.estimator == "m" else None))
    results, diagnostics = estimate_members(config, members, log=log,
                                            stacklevel=stacklevel + 1)
    log.stage(f"fitted in {runner.n_passes} passes")
    return FittedEnsemble(
        classes_=classes,
        n_features_in_=len(stats.features),
        feature_names_in_=np.asarray(stats.features, dtype=object) if stats.has_names else None,
        members_=members,
        hdp_results_=results,
        diagnostics_=diagnostics,
        n_passes_=runner.n_passes,
    )
