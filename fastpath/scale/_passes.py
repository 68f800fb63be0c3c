"""Out-of-core fits: a few passes over chunks of rows, in memory that does not grow with N.

Paper, "Efficiency of BNC learning" and "Out-of-core capacity": BNCs learn out of core because
every statistic they need is a *count*, and counts of chunks add up. A streaming fit of
:class:`~fastpath.BayesNetClassifier` makes these passes over the data:

1. **schema** (every structure): the columns, the class labels, the values of every nominal
   column, missing values, and for every numeric column a class-conditional histogram
   (:class:`fastpath.encode.ClassHistogram`) from which MDL cut points are computed without
   holding the column;
2. **structure statistics** (TAN, kDB, SkDB): the (attribute, class) and (attribute,
   attribute, class) count tables, from which ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` give the
   structure (:func:`fastpath.structure.tan_from_scores`,
   :func:`~fastpath.structure.kdb_from_scores`);
3. **counts** of every context tree (:class:`fastpath.counts.CountAccumulator`), with the
   rows of the m holdout (``m="holdout"``, at most 5,000) kept aside in memory;
4. **leave-one-out** (SkDB only): the incremental leave-one-out RMSE of every ``(n*, k*)``
   (:mod:`fastpath.structure._selective`), from the kDB-K counts of pass 3;
5. **the choice of m** (m-estimates with ``m="auto"``): the leave-one-out RMSE of the whole
   model for every candidate m (:func:`fastpath.estimate._m_choice.loo_m_scores`), in one pass.

Naive Bayes therefore reads the data twice, TAN and kDB three times, SkDB four times (the
paper's one, two and three passes plus the discretisation pass), m-estimates with ``m="auto"``
once more. When the pairwise tables of pass 2 would not fit in ``pair_memory`` bytes, pass 2 is
split into several passes over groups of attribute pairs.

**Identical to the in-memory fit.** Counts are integers, so every count table equals the one the
in-memory fit computes; the mutual informations are summed in the same order as
:mod:`fastpath.structure._scores` sums them, the leave-one-out errors in the same order as
:mod:`fastpath.structure._selective` (the choice of m too), and the m holdout is the same set of
rows (:func:`fastpath.pipeline._holdout.holdout_rows`: the ``min(N/10, 5000)`` rows with the
smallest seeded hash of their row index, used by the in-memory fit too). So on nominal data, and on
numeric columns with at most ``max_bins`` distinct values, a streaming fit with the same
``random_state`` gives the same model, bit for bit, as ``fit(pandas.concat(chunks))``. Numeric
columns with more distinct values get approximate cut points (see :mod:`fastpath.encode._sketch` and
``docs/scale.md``).

**Sources.** ``fit`` streams when ``X`` is

* a path (``str`` or ``os.PathLike``) to a CSV/TSV file (optionally compressed: ``.gz``,
  ``.bz2``, ``.xz``, ``.zip``, ``.zst``, read with pandas in chunks of ``chunksize`` rows) or a
  Parquet file (read with pyarrow in record batches of ``chunksize`` rows);
* a callable returning a fresh iterator of DataFrame chunks (e.g.
  ``functools.partial(pd.read_csv, path, chunksize=10**5)``): called once per pass;
* an iterator (a generator, a ``pandas`` chunked reader) of DataFrames (or pyarrow record
  batches). An iterator can be read only once, but a fit needs several passes: its chunks are
  written during the first pass to a temporary directory (``tempfile.gettempdir()``, pickled
  DataFrames, removed when the fit ends) and the later passes read them back. Memory stays
  bounded; the disk holds a copy of the data. Pass a path or a callable to avoid the copy;
* a ``dask.dataframe.DataFrame`` (:mod:`fastpath.scale._dask`).

Every chunk holds the feature columns *and* the target column (``y`` names it; default: the
last column). Column types are fixed by the first chunk (CSV: a column is numeric when pandas
reads every field of its first chunk as a number, as :func:`fastpath.io.read_table` decides for
the whole file; Parquet: by the file's schema; DataFrames: by their dtypes, and
``categorical_features`` as for in-memory fits).

**Bad input** stops the fit with a ``ValueError`` that names the chunk (0-based, with its rows),
the row (0-based over the whole stream) and the column: a malformed CSV row, a column that is
missing or new, a non-number in a numeric column, an infinite value, a missing class label.
The driver returns the learned state (:class:`~fastpath.pipeline.FittedModel`) and the estimator
assigns it only when every pass has succeeded, so after an error it is exactly as before the call
(unfitted, or still holding its previous fit).

Every pass is a statistic of :mod:`fastpath.scale._stats` run over the chunks by a *runner*
(:class:`LocalRunner` here, :class:`fastpath.scale._dask.DaskRunner` on Dask); the stages that turn
the statistics into a model are those of the in-memory fit (:mod:`fastpath.pipeline._stages`).
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import numpy as np
import pandas as pd

from ..counts._counting import ProjectedCounts
from ..encode._sketch import DEFAULT_MAX_BINS
from ..estimate._mestimate import M_GRID_POSITIVE
from ..io._column_types import say_excluded
from ..pipeline._config import FitConfig
from ..pipeline._fitted import FittedModel, Member
from ..pipeline._holdout import holdout_generator
from ..pipeline._members import finish_fit, member_order, member_streams
from ..pipeline._registry import STRUCTURES
from ..pipeline._stages import (
    check_learned_from_scores,
    choose_m,
    name_trees,
    pick_m,
    plan_m,
    selected,
    selection_key,
    structure_from_scores,
    structure_name,
)
from ..pipeline._weights import layer_threshold
from ..structure._selective import DEFAULT_LOO_M, SelectedStructure, full_depth, full_model_rmse
from ..structure._specs import tree_specs
from ..utils._progress import FitLog
from ..utils._validation import check_two_classes
from ._errors import Where
from ._schema import Coder, MemberCoder, SchemaStats, first_stats
from ._sources import Restart, Source, as_frame_chunk, check_chunksize, open_source, target_name
from ._stats import (
    CountStats,
    LooStats,
    MemberStats,
    PairStats,
    PassStatistic,
    RowSample,
    StatGroup,
    pair_groups,
)

#: memory for the pairwise (attribute, attribute, class) tables of one pass over the data
DEFAULT_PAIR_MEMORY = 256 * 2**20


# ====================================================================== runners
class Runner(Protocol):
    """What :func:`fit_passes` needs of a runner: the schema pass, then any statistic's pass."""

    n_passes: int

    def schema(self, config: FitConfig, y: Any, max_bins: int) -> SchemaStats: ...

    def run(self, coder: Coder, state: PassStatistic) -> PassStatistic: ...


class LocalRunner:
    """Runs the passes over a :class:`~fastpath.scale._sources.Source` in this process, chunk
    after chunk."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.n_passes = 0

    def _frames(self, first_pass: bool) -> Iterator[tuple[Where, pd.DataFrame]]:
        self.n_passes += 1
        start = 0
        for i, obj in enumerate(self.source.frames(first_pass)):
            frame = as_frame_chunk(obj, Where("chunk", i, start, 0))
            yield Where("chunk", i, start, len(frame)), frame
            start += len(frame)

    def schema(self, config: FitConfig, y: Any, max_bins: int) -> SchemaStats:
        for attempt in range(2):
            try:
                stats = None
                for where, frame in self._frames(first_pass=True):
                    if stats is None:
                        stats = first_stats(frame, y, config.categorical_features, max_bins,
                                            where, na_values=config.na_values,
                                            numeric_errors=config.numeric_errors)
                    stats.update(frame, where)
                if stats is None:
                    raise ValueError("the stream holds no chunk")
                return stats
            except Restart:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    def run(self, coder: Coder, state: PassStatistic) -> PassStatistic:
        for where, frame in self._frames(first_pass=False):
            if len(frame) == 0:
                continue
            codes, y = coder.encode(frame, where)
            state.update(codes, y, where.start)
        return state


# ====================================================================== the fit
def fit_passes(config: FitConfig, runner: Runner, y: Any, *, max_bins: int = DEFAULT_MAX_BINS,
               pair_memory: int = DEFAULT_PAIR_MEMORY) -> FittedModel:
    """The passes of a streaming fit over ``runner``; returns what the fit learned.

    ``runner`` provides ``schema(config, y, max_bins)``, ``run(coder, state)``
    and ``n_passes`` (:class:`LocalRunner`, or :class:`fastpath.scale._dask.DaskRunner`). Every
    member of the fit (``config.n_members``, :mod:`fastpath.pipeline._members`) gathers its
    statistics in the same passes: member ``e`` codes each chunk with its own encoder
    (:class:`~fastpath.scale._schema.MemberCoder`) and reads its own codes
    (:class:`~fastpath.scale._stats.MemberStats`), drawing from its generator in the order the
    in-memory fit draws (cut points, attribute order, holdout key), so an ensemble of any size
    reads the data as often as one member does. Memory: per member, its pair tables (bounded
    by ``pair_memory / n_members``), its count trees and at most 5,000 held-out rows.
    """
    check_learned_from_scores(config)
    log = config.log()
    n_members = config.n_members
    of_members = f", {n_members} members" if n_members > 1 else ""
    # pass 1: schema, once for all members; each member then draws its own cut points
    stats, classes, class_order = schema_pass(config, runner, y, max_bins, log)
    n = stats.n_rows
    n_classes = classes.size
    if STRUCTURES[config.structure].selective and n < 2:
        raise ValueError(f"leave-one-out needs at least 2 rows, got {n}")
    streams = member_streams(config)
    # identifiers and dates (by default) are left out, as in memory
    excluded = stats.excluded(config.exclude_features)
    excluded_names = say_excluded(excluded, stats.features)
    encoders = []
    for e, (rng, discretization) in enumerate(zip(streams, config.member_discretizations(),
                                                  strict=True)):
        with warnings.catch_warnings():
            if e > 0:  # the schema's warnings (identifiers, stray tokens) are said once
                warnings.simplefilter("ignore")
            encoders.append(stats.encoder(config.categorical_features, class_order,
                                          discretization=discretization,
                                          random_state=rng, excluded=excluded))
    coder = MemberCoder([Coder(enc, stats.target, classes, excluded_names)
                         for enc in encoders])
    cards = [enc.cardinalities_ for enc in encoders]
    p = len(cards[0])

    # pass 2: every member's pair statistics; member e's g-th group rides in pass g
    mi: list[np.ndarray | None] = [None] * n_members
    cmi = [np.zeros((p, p)) for _ in range(n_members)]
    if STRUCTURES[config.structure].scores:
        log.stage(f"pass 2: pair statistics of {n} rows ({structure_name(config)}){of_members}")
        groups = [pair_groups(c, n_classes, n, max(1, pair_memory // n_members)) for c in cards]
        for g in range(max(len(gs) for gs in groups)):
            gathered = runner.run(coder, MemberStats([
                PairStats(cards[e], n_classes, n, groups[e][g])
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
    structures = [structure_from_scores(config, mi[e], cmi[e], p,
                                        member_order(config, e, rng, mi[e]))
                  for e, rng in enumerate(streams)]

    # pass 3: counts of every member's trees (SkDB: its kDB-K trees), with the m holdout aside
    plans, all_specs, counting = [], [], []
    for e, rng in enumerate(streams):
        plan = plan_m(config, n, holdout_generator(config.random_state, e, rng))
        attributes = structures[e].order if STRUCTURES[config.structure].selective else range(p)
        specs = tree_specs(structures[e], cards[e], n_classes, attributes)
        plans.append(plan)
        all_specs.append(specs)
        counting.append(CountStats(specs, plan.key, plan.holdout_threshold(n)))
    what = (f"{len(all_specs[0])} context trees" if n_members == 1
            else "the members' context trees")
    log.stage(f"pass {runner.n_passes + 1}: counting {what}")
    counted = runner.run(coder, MemberStats(counting)).items
    holdouts, trains, fulls = [], [], []
    for c in counted:
        hold_codes, hold_y = c.holdout(p)
        # the counts of every row: without a holdout they are the training counts themselves
        # (read, never updated, from here on), with one a copy that adds the held-out rows
        full = c.accumulator
        if hold_y.size:
            full = copy.deepcopy(c.accumulator).update(hold_codes, hold_y)
        holdouts.append((hold_codes, hold_y))
        trains.append(c.accumulator)
        fulls.append(full)

    # pass 4 (SkDB): every member's leave-one-out selection of n* and k*
    selections: list[SelectedStructure | None] = [None] * n_members
    final_specs = all_specs
    if STRUCTURES[config.structure].selective:
        log.stage(f"pass {runner.n_passes + 1}: leave-one-out selection of attributes and "
                  f"k{of_members}")
        loo = runner.run(coder, MemberStats([
            LooStats(all_specs[e][1:], [fulls[e].tree(t) for t in range(1, len(all_specs[e]))],
                     fulls[e].tree(0).counts[0], n, structures[e].k, DEFAULT_LOO_M,
                     max_rows=config.selection_sample(n_classes),
                     sample_key=selection_key(config, streams[e], n, n_classes))
            for e in range(n_members)
        ])).items
        final_specs = []
        for e in range(n_members):
            chosen = selected(SelectedStructure.from_rmse(structures[e], loo[e].rmse(),
                                                          DEFAULT_LOO_M))
            specs = tree_specs(chosen.structure, cards[e], n_classes, chosen.attributes)
            trains[e] = ProjectedCounts(trains[e], all_specs[e], specs)
            fulls[e] = ProjectedCounts(fulls[e], all_specs[e], specs)
            structures[e], selections[e] = chosen.structure, chosen.selection
            final_specs.append(specs)

    # pass 5 (m="auto"): every member's leave-one-out errors of every candidate m, in one pass
    choices: list[tuple[float | None, dict[float, float]]] = [(pl.m, pl.scores) for pl in plans]
    if any(pl.needs_loo for pl in plans):
        log.stage(f"pass {runner.n_passes + 1}: choosing m (loo){of_members}")
        groups_m = runner.run(coder, MemberStats([
            loo_m_statistic(config, final_specs[e], fulls[e], n) if plans[e].needs_loo else None
            for e in range(n_members)
        ])).items
        for e, group in enumerate(groups_m):
            if group is not None:
                choices[e] = loo_m_choice(group, n)
    for e, plan in enumerate(plans):
        if plan.needs_holdout:
            choices[e] = choose_m(final_specs[e], trains[e], *holdouts[e],
                                  backoff=config.m_backoff)

    # the discriminative layer's rows, as each member codes them (the same rows in memory)
    layer = None
    if config.discriminative is not None:
        log.stage(f"pass {runner.n_passes + 1}: the discriminative layer's rows")
        key, threshold = layer_threshold(config, n, n_classes)
        kept = runner.run(coder, MemberStats([RowSample(key, threshold)
                                              for _ in range(n_members)])).items
        rows = [sample.rows(p) for sample in kept]
        layer = ([codes for codes, _ in rows], rows[0][1])

    members = []
    for e in range(n_members):
        m, scores = choices[e]
        members.append(Member.counted(
            encoders[e], structures[e], final_specs[e],
            name_trees(fulls[e], final_specs[e], encoders[e].feature_names_),
            selection=selections[e], m=m, m_scores=scores if config.chooses_m else None,
        ))
    fitted = finish_fit(config, members, classes=classes, feature_names=stats.features,
                        has_names=stats.has_names, log=log, n_passes=runner.n_passes,
                        excluded=excluded_names, layer=layer)
    log.stage(f"fitted in {runner.n_passes} passes")
    return fitted


def schema_pass(config: FitConfig, runner: Runner, y: Any, max_bins: int, log: FitLog
                ) -> tuple[SchemaStats, np.ndarray, np.ndarray]:
    """Pass 1 and its checks: the schema, the classes and their order."""
    log.stage("pass 1: the schema (columns, classes, values, histograms of numeric columns)")
    stats = runner.schema(config, y, max_bins)
    if stats.n_rows == 0:
        raise ValueError("Found array with 0 sample(s) while a minimum of 1 is required.")
    classes, class_order = stats.classes()
    check_two_classes(classes)
    return stats, classes, class_order


def loo_m_statistic(config: FitConfig, specs, counts, n_rows: int) -> StatGroup:
    """The pass statistic of the leave-one-out choice of m (``m="auto"``): every candidate's
    errors over ``counts`` (the trees of ``specs`` counted on all ``n_rows`` rows)."""
    trees = [counts.tree(i) for i in range(1, len(specs))]
    class_counts = counts.tree(0).counts[0]
    depth = full_depth(specs[1:])
    return StatGroup([
        LooStats(specs[1:], trees, class_counts, n_rows, depth, m,
                 value_backoff=config.m_backoff == "value", whole_model=True)
        for m in M_GRID_POSITIVE
    ])


def loo_m_choice(group: StatGroup, n_rows: int) -> tuple[float, dict[float, float]]:
    """m and the candidates' RMSE from a gathered :func:`loo_m_statistic`: the same sums in
    the same row chunks as :func:`fastpath.pipeline._stages.choose_m_loo`, hence the same m."""
    scores = {
        m: full_model_rmse(stat.sse.sum(axis=0), n_rows)
        for m, stat in zip(M_GRID_POSITIVE, group.items, strict=True)
    }
    return pick_m(scores), scores


def fit_stream(config: FitConfig, X: Any, y: Any = None, *, chunksize: int | None = None,
               max_bins: int = DEFAULT_MAX_BINS,
               pair_memory: int = DEFAULT_PAIR_MEMORY, sep: str | None = None) -> FittedModel:
    """Fit from a stream in this process: a path, a callable returning an iterator of DataFrame
    chunks, or an iterator of chunks (module doc); ``y`` names the target column (default: the
    last column); ``sep``: a CSV/TSV file's field separator."""
    with local_runner(X, y, chunksize, sep) as runner:
        return fit_passes(config, runner, y, max_bins=max_bins, pair_memory=pair_memory)


@contextmanager
def local_runner(X: Any, y: Any, chunksize: int | None, sep: str | None = None
                 ) -> Iterator[LocalRunner]:
    """A :class:`LocalRunner` over the stream ``X`` (checked with ``y`` and ``chunksize``),
    its source closed (spilled chunks removed) when the block ends."""
    chunksize = check_chunksize(chunksize)
    if y is not None and not isinstance(y, str):
        target_name(y, [])  # raises the TypeError
    source = open_source(X, chunksize, sep)
    try:
        yield LocalRunner(source)
    finally:
        source.close()
