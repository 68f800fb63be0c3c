"""Fits across machines: every counting pass is a map over Dask partitions and a tree reduction.

``BayesNetClassifier.fit(ddf, "target")`` (or ``ESKDBClassifier``'s: every member's statistics
ride in the same passes) with a ``dask.dataframe.DataFrame`` runs the passes of
:mod:`fastpath.scale._passes` (schema, structure statistics, counts, and for SkDB the leave-one-out
pass) as Dask tasks:

* **map**: one task per partition builds the pass's statistics from its rows, in blocks of
  ``chunksize`` rows (:class:`~fastpath.scale._schema.SchemaStats`,
  :class:`~fastpath.scale._stats.PairStats`, :class:`~fastpath.scale._stats.CountStats`,
  :class:`~fastpath.scale._stats.LooStats`);
* **reduce**: the partials are merged in a tree (``split_every`` at a time) by their ``merge``
  methods (:meth:`fastpath.counts.CountAccumulator.merge` for the counts), and the client
  receives one merged object per pass; it learns the encoder, the structure and the
  probability tables from them exactly as a local streaming fit does.

**What crosses the network.** The task graph carries the encoder (categories and cut points),
the table specifications and, for the leave-one-out pass, the kDB-K count trees; the tasks
return count arrays: class-conditional histograms of the numeric columns (at most
``max_bins`` ranges each), the (attribute, attribute, class) tables, the context-tree counts,
at most 5,000 held-out rows (the m holdout, as integer codes), and the leave-one-out error sums.
Rows never leave the workers as long as the partitions are *read* on the workers (e.g.
``dask.dataframe.read_parquet`` / ``read_csv`` on storage they can reach, or a ``persist``-ed
frame); ``dask.dataframe.from_pandas`` embeds the rows in the graph and ships them from the
client in every pass.

**Where it runs.** On Dask's current scheduler: create a ``distributed.Client`` first and the
passes run on its cluster::

    from distributed import Client
    import dask.dataframe as dd
    client = Client("tcp://scheduler-host:8786")     # a running cluster's scheduler address
    ddf = dd.read_parquet("s3://bucket/train/*.parquet")
    clf = BayesNetClassifier("kdb", k=2, random_state=0).fit(ddf, "class")

Without a client, Dask's local threaded scheduler is used. Each worker needs ``hdpbn``
installed (``pip install 'hdpbn[dask]'``).

**Identical results.** Counts are integers and every merge is an addition (a minimum for the
first-row indices of sparse pair tables), so the counts, the mutual informations (summed from
the merged tables in the in-memory order), the m holdout and therefore the model with the same
``random_state`` are those of the in-memory fit of ``ddf.compute()`` (for numeric columns with
at most ``max_bins`` distinct values; more are discretised approximately, as in a local
stream, and the compressed histograms then depend on the partitioning). One exception: the
SkDB leave-one-out errors of rows of one of the 64 fixed row chunks that straddle partitions
are summed per partition and then added, so the RMSE of each candidate can differ from the
in-memory one in its last bits and an exact tie could be broken differently.

The HDP sampling runs on the client (threads, :func:`fastpath.estimate.hdp.estimate_trees`); it
is not spread over the workers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..encode._encoder import TableEncoder
from ..encode._sketch import DEFAULT_MAX_BINS
from ..io._column_types import is_numeric_dtype
from ..pipeline._config import FitConfig
from ..pipeline._fitted import FittedModel
from ..utils._threads import limit_threads
from ._errors import Where
from ._passes import DEFAULT_PAIR_MEMORY, fit_passes
from ._schema import SchemaStats
from ._sources import DEFAULT_CHUNKSIZE, check_chunksize, target_name


def _import_dask():
    try:
        import dask
        import dask.dataframe
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError(
            "fitting a Dask DataFrame needs dask: pip install 'hdpbn[dask]'"
        ) from exc
    return dask


def _schema_partition(frame, index: int, proto: SchemaStats, chunksize: int) -> SchemaStats:
    stats = proto.fresh()
    stats.lengths[index] = 0
    where = Where("partition", index, None, len(frame))
    for s in range(0, len(frame), chunksize):
        sub = frame.iloc[s : s + chunksize]
        stats.update(sub, where.sub(s, len(sub)))
    return stats


def _run_partition(frame, where: Where, coder, proto, chunksize: int):
    state = proto.fresh()
    with limit_threads(1):  # the parallelism is over partitions, every statistic inside included
        for s in range(0, len(frame), chunksize):
            sub = frame.iloc[s : s + chunksize]
            if len(sub) == 0:
                continue
            sub_where = where.sub(s, len(sub))
            codes, y = coder.encode(sub, sub_where)
            state.update(codes, y, sub_where.start)
    return state


def _merge_all(states: list) -> Any:
    out = states[0]
    for other in states[1:]:
        out.merge(other)
    return out


def _tree_reduce(items: list, split_every: int):
    from dask import delayed

    merge = delayed(_merge_all, pure=False)
    while len(items) > 1:
        items = [merge(items[i : i + split_every]) for i in range(0, len(items), split_every)]
    return items[0]


class DaskRunner:
    """Runs the passes of :func:`fastpath.scale._passes.fit_passes` over a Dask DataFrame.

    Parameters
    ----------
    ddf : dask.dataframe.DataFrame
    chunksize : int
        Rows per block inside a partition.
    split_every : int, default=8
        Fan-in of the tree reduction.
    """

    kind = "partition"

    def __init__(self, ddf, chunksize: int = DEFAULT_CHUNKSIZE, split_every: int = 8) -> None:
        self.dask = _import_dask()
        self.ddf = ddf
        self.chunksize = int(chunksize)
        self.split_every = max(2, int(split_every))
        self.parts = list(ddf.to_delayed())
        self.n_passes = 0
        self.offsets: np.ndarray | None = None
        self.lengths: np.ndarray | None = None

    def _compute(self, obj):
        self.n_passes += 1
        (out,) = self.dask.compute(obj)
        return out

    def schema(self, config: FitConfig, y: Any, max_bins: int) -> SchemaStats:
        from dask import delayed

        columns = [str(c) for c in self.ddf.columns]
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if columns.count(c) > 1})
            raise ValueError(f"duplicated column names: {dup}")
        target = target_name(y, columns)
        features = [c for c in columns if c != target]
        meta = self.ddf._meta.set_axis(columns, axis=1)
        encoder = config.table_encoder()
        proto = SchemaStats(features, target, encoder.column_types(meta[features]).nominal,
                            max_bins)
        proto.na_values, proto.numeric_errors = encoder.na_tokens, encoder.errors
        proto.has_names = all(isinstance(c, str) for c in self.ddf.columns)
        proto.target_numeric = is_numeric_dtype(meta[target].dtype)
        proto_d = delayed(proto, pure=True)
        partials = [
            delayed(_schema_partition, pure=False)(part, i, proto_d, self.chunksize)
            for i, part in enumerate(self.parts)
        ]
        stats = self._compute(_tree_reduce(partials, self.split_every))
        stats.has_names = proto.has_names
        self.lengths = np.asarray(
            [stats.lengths.get(i, 0) for i in range(len(self.parts))], dtype=np.int64
        )
        self.offsets = np.concatenate([[0], np.cumsum(self.lengths)[:-1]]).astype(np.int64)
        return stats

    def run(self, coder, state):
        from dask import delayed

        if self.offsets is None:
            raise RuntimeError("the schema pass must run first")
        coder_d = delayed(coder, pure=True)
        proto_d = delayed(state, pure=True)
        partials = [
            delayed(_run_partition, pure=False)(
                part,
                Where("partition", i, int(self.offsets[i]), int(self.lengths[i])),
                coder_d,
                proto_d,
                self.chunksize,
            )
            for i, part in enumerate(self.parts)
            if self.lengths[i] > 0
        ]
        if not partials:
            return state.fresh()
        return self._compute(_tree_reduce(partials, self.split_every))


def fit_dask(config: FitConfig, ddf, y: Any = None, *, chunksize: int | None = None,
             max_bins: int = DEFAULT_MAX_BINS, pair_memory: int = DEFAULT_PAIR_MEMORY,
             split_every: int = 8) -> FittedModel:
    """Fit on a Dask DataFrame whose column ``y`` (default: the last) is the target.

    See the module docstring.
    """
    runner = dask_runner(ddf, y, chunksize, split_every)
    return fit_passes(config, runner, y, max_bins=max_bins, pair_memory=pair_memory)


def dask_runner(ddf, y: Any, chunksize: int | None, split_every: int = 8) -> DaskRunner:
    """A :class:`DaskRunner` over ``ddf`` (checked with ``y`` and ``chunksize``)."""
    chunksize = check_chunksize(chunksize)
    if y is not None and not isinstance(y, str):
        target_name(y, [])  # raises the TypeError
    return DaskRunner(ddf, chunksize, split_every)
