"""Passes 2-4 of a fit out of core: statistics of coded chunks, each mergeable.

Every statistic follows one protocol (:class:`PassStatistic`): ``fresh()`` gives an empty copy
with the same configuration, ``update(codes, y, start)`` adds a chunk whose first row is row
``start`` of the stream, ``merge(other)`` adds another copy's statistics. A runner (in this
process, or Dask over partitions) gives every chunk or partition a fresh copy and merges them.
The statistics use as many threads as the calling thread's numba count
(:func:`fastpath.utils._threads.numba_threads`; set it with
:func:`~fastpath.utils._threads.limit_threads`); their results do not depend on it.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol, Self

import numpy as np

from ..counts._counting import CountAccumulator, TreeSpec
from ..pipeline._holdout import row_hashes
from ..structure._scores import mi_from_counts
from ..structure._selective import (
    loo_chunk_starts,
    loo_model,
    loo_sample_mask,
    loo_sample_threshold,
    loo_settings,
)
from ..utils._threads import numba_threads
from ._kernels import (
    add_errors,
    loo_errors,
    loo_model_errors,
    narrow_transpose,
    pair_cmi_from_table,
    pair_update,
)

#: rows per thread and block of the leave-one-out pass (their errors are buffered)
LOO_BLOCK = 2048


class PassStatistic(Protocol):
    """What a pass computes over coded chunks (see the module docstring)."""

    def fresh(self) -> Self: ...

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> Self: ...

    def merge(self, other: Self) -> Self: ...


class PairStats:
    """Pass 2: class, (attribute, class) and (attribute, attribute, class) counts, mergeable.

    Parameters
    ----------
    cards : sequence of int
    n_classes : int
    n_rows : int
        Rows of the whole data (known after pass 1): a pair whose table has more cells than
        rows is summed in first-occurrence order by :mod:`fastpath.structure._graphs`, so those
        pairs also record the first row of each cell (a min, hence still mergeable).
    pairs : (pair_i, pair_j)
        The pairs ``i < j`` this pass counts (all of them unless memory asks for groups).

    The pairs are shared by the calling thread's :func:`~fastpath.utils._threads.numba_threads`
    threads (the kernel releases the GIL).
    """

    def __init__(self, cards, n_classes, n_rows, pairs) -> None:
        self.cards = np.asarray(cards, dtype=np.int64)
        self.n_classes = int(n_classes)
        self.n_total = int(n_rows)
        self.pair_i = np.asarray(pairs[0], dtype=np.int64)
        self.pair_j = np.asarray(pairs[1], dtype=np.int64)
        k = self.n_classes
        self.class_counts = np.zeros(k, dtype=np.int64)
        self.joint_offsets = np.zeros(self.cards.size + 1, dtype=np.int64)
        np.cumsum(self.cards * k, out=self.joint_offsets[1:])
        self.joint = np.zeros(int(self.joint_offsets[-1]), dtype=np.int64)
        cells = self.cards[self.pair_i] * k * self.cards[self.pair_j]
        self.table_off = np.zeros(cells.size + 1, dtype=np.int64)
        np.cumsum(cells, out=self.table_off[1:])
        self.tables = np.zeros(int(self.table_off[-1]), dtype=np.int64)
        self.sparse = cells > self.n_total
        sizes = np.where(self.sparse, cells, 0)
        starts = np.concatenate([[0], np.cumsum(sizes)])
        self.first_off = np.where(self.sparse, starts[:-1], -1).astype(np.int64)
        self.first = np.full(int(starts[-1]), np.iinfo(np.int64).max, dtype=np.int64)

    def fresh(self) -> PairStats:
        """An empty copy with the same configuration."""
        out = copy.copy(self)
        out.class_counts = np.zeros_like(self.class_counts)
        out.joint = np.zeros_like(self.joint)
        out.tables = np.zeros_like(self.tables)
        out.first = np.full_like(self.first, np.iinfo(np.int64).max)
        return out

    @staticmethod
    def cell_bytes(cards, n_classes, n_rows, pair_i, pair_j) -> np.ndarray:
        """Bytes each pair's tables take (counts, plus first rows when summed sparsely)."""
        cards = np.asarray(cards, dtype=np.int64)
        cells = cards[pair_i] * int(n_classes) * cards[pair_j]
        return cells * 8 * np.where(cells > int(n_rows), 2, 1)

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> PairStats:
        n = y.shape[0]
        if n == 0:
            return self
        k = self.n_classes
        self.class_counts += np.bincount(y, minlength=k)
        for j in range(self.cards.size):
            lo, hi = self.joint_offsets[j], self.joint_offsets[j + 1]
            self.joint[lo:hi] += np.bincount(codes[:, j] * k + y, minlength=int(hi - lo))
        n_pairs = self.pair_i.size
        if n_pairs == 0:
            return self
        Xt = narrow_transpose(codes, int(self.cards.max()))
        y = np.ascontiguousarray(y, dtype=np.int64)
        args = (Xt, y, k, self.pair_i, self.pair_j, self.cards, self.table_off, self.tables,
                self.first_off, self.first, np.int64(start))
        n_threads = min(numba_threads(), n_pairs)
        if n_threads == 1:
            pair_update(*args, 0, n_pairs)
        else:
            # balance the threads by cells x rows is overkill: pairs cost about the same
            bounds = np.linspace(0, n_pairs, n_threads + 1).round().astype(np.int64)
            with ThreadPoolExecutor(n_threads) as pool:
                list(pool.map(lambda b: pair_update(*args, b[0], b[1]),
                              itertools.pairwise(bounds)))
        return self

    def merge(self, other: PairStats) -> PairStats:
        self.class_counts += other.class_counts
        self.joint += other.joint
        self.tables += other.tables
        np.minimum(self.first, other.first, out=self.first)
        return self

    def mutual_information(self) -> np.ndarray:
        return mi_from_counts(
            self.joint, self.cards, self.class_counts, self.joint_offsets, self.n_total
        )

    def cmi_values(self) -> np.ndarray:
        """``I(X_i; X_j | Y)`` of this pass's pairs, in nats."""
        out = np.zeros(self.pair_i.size)
        k = self.n_classes
        for p in range(self.pair_i.size):
            i, j = int(self.pair_i[p]), int(self.pair_j[p])
            t0, t1 = self.table_off[p], self.table_off[p + 1]
            fb = self.first_off[p]
            first = self.first[fb : fb + (t1 - t0)] if fb >= 0 else self.first[:0]
            out[p] = pair_cmi_from_table(
                self.tables[t0:t1], first, self.cards[i], self.cards[j], k,
                self.joint[self.joint_offsets[i] : self.joint_offsets[i + 1]],
                self.joint[self.joint_offsets[j] : self.joint_offsets[j + 1]],
                self.class_counts, self.n_total, bool(self.sparse[p]),
            )
        return out


def pair_groups(cards, n_classes, n_rows, budget) -> list[tuple[np.ndarray, np.ndarray]]:
    """All pairs ``i < j`` (structure's order), in groups whose tables fit ``budget`` bytes."""
    pair_i, pair_j = np.triu_indices(len(cards), k=1)
    nbytes = PairStats.cell_bytes(cards, n_classes, n_rows, pair_i, pair_j)
    groups, lo, used = [], 0, 0
    for p, b in enumerate(nbytes):
        if p > lo and used + b > budget:
            groups.append((pair_i[lo:p], pair_j[lo:p]))
            lo, used = p, 0
        used += int(b)
    groups.append((pair_i[lo:], pair_j[lo:]))
    return groups


class CountStats:
    """Pass 3: counts of every context tree, the m-holdout rows kept aside (mergeable)."""

    def __init__(self, specs: Sequence[TreeSpec], key: int | None, threshold: Any) -> None:
        self.accumulator = CountAccumulator(specs)  # rows outside the holdout
        self.key = key
        self.threshold = threshold
        self.hold: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def fresh(self) -> CountStats:
        """An empty copy with the same configuration."""
        return CountStats(self.accumulator.specs, self.key, self.threshold)

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> CountStats:
        if self.key is None:
            self.accumulator.update(codes, y)
            return self
        held = row_hashes(start, start + y.shape[0], self.key) <= self.threshold
        if held.any():
            rows = np.flatnonzero(held)
            self.hold.append((start + rows, codes[rows], y[rows]))
            self.accumulator.update(codes[~held], y[~held])
        else:
            self.accumulator.update(codes, y)
        return self

    def merge(self, other: CountStats) -> CountStats:
        self.accumulator.merge(other.accumulator)
        self.hold.extend(other.hold)
        return self

    def holdout(self, n_attributes: int) -> tuple[np.ndarray, np.ndarray]:
        """Held-out codes and classes, in row order."""
        if not self.hold:
            return np.empty((0, n_attributes), np.int64), np.empty(0, np.int64)
        rows = np.concatenate([h[0] for h in self.hold])
        order = np.argsort(rows, kind="stable")
        codes = np.concatenate([h[1] for h in self.hold])[order]
        y = np.concatenate([h[2] for h in self.hold])[order]
        return codes, y


class RowSample:
    """The codes and classes of the rows whose seeded hash of their position is at most
    ``threshold`` (every row when ``threshold`` is None): the discriminative layer's rows
    (:func:`~fastpath.pipeline._weights.layer_threshold`), mergeable in any order."""

    def __init__(self, key: int, threshold: Any) -> None:
        self.key = key
        self.threshold = threshold
        self.kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def fresh(self) -> RowSample:
        return RowSample(self.key, self.threshold)

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> RowSample:
        if self.threshold is None:
            rows = np.arange(y.shape[0])
        else:
            rows = np.flatnonzero(row_hashes(start, start + y.shape[0], self.key)
                                  <= self.threshold)
        if rows.size:
            self.kept.append((start + rows, np.array(codes[rows]), np.array(y[rows])))
        return self

    def merge(self, other: RowSample) -> RowSample:
        self.kept.extend(other.kept)
        return self

    def rows(self, n_attributes: int) -> tuple[np.ndarray, np.ndarray]:
        """The kept codes and classes, in row order."""
        if not self.kept:
            return np.empty((0, n_attributes), np.int64), np.empty(0, np.int64)
        order = np.argsort(np.concatenate([k[0] for k in self.kept]), kind="stable")
        return (np.concatenate([k[1] for k in self.kept])[order],
                np.concatenate([k[2] for k in self.kept])[order])


class LooStats:
    """Pass 4 (SkDB): leave-one-out squared errors of every (n*, k*), by global row chunk.

    ``trees`` are the kDB-K attribute trees in mutual-information order, counted on all rows;
    the flat arrays are built as :func:`fastpath.structure.loo_scores` builds them.
    ``whole_model``: only the whole model's sums (``sse[:, -1, max_k]``, the m choice's score,
    the same numbers) are gathered, as :func:`fastpath.estimate._m_choice.loo_m_scores` does in
    memory.
    The rows are shared by the calling thread's :func:`~fastpath.utils._threads.numba_threads`
    threads.
    """

    def __init__(self, specs, trees, class_counts, n_rows, max_k, m, *,
                 value_backoff: bool = False, whole_model: bool = False,
                 max_rows: int | None = None, sample_key: int = 0) -> None:
        self.n_total = int(n_rows)
        # a sampled selection scores the rows loo_sample_mask keeps, as loo_scores does
        self.max_rows = max_rows
        self.sample_key = int(sample_key)
        self.threshold = loo_sample_threshold(self.n_total, max_rows, self.sample_key)
        # the m choice reads only the whole model's entry (every tree at its full depth)
        self.whole_model = bool(whole_model)
        self.max_k = int(max_k)
        self.m = float(m)
        self.value_backoff = bool(value_backoff)
        self.model = loo_model(specs, trees, class_counts)
        self.settings = loo_settings(self.m, self.value_backoff, self.max_k, self.n_total)
        self.chunk_starts = loo_chunk_starts(self.n_total)
        self.sse = np.zeros((self.chunk_starts.size - 1, len(specs), self.max_k + 1))

    def fresh(self) -> LooStats:
        """A copy with zero sums (the model arrays are shared, read-only)."""
        out = copy.copy(self)
        out.sse = np.zeros_like(self.sse)
        return out

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> LooStats:
        n = y.shape[0]
        if n == 0:
            return self
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        n_threads = numba_threads()
        block = LOO_BLOCK * n_threads
        # whole_model: only [., -1, max_k] is written; the zeros elsewhere add nothing
        errors = (np.zeros if self.whole_model else np.empty)(
            (min(block, n), self.model.child_col.size, self.max_k + 1))
        keep = loo_sample_mask(start, n, self.threshold, self.sample_key)
        if self.whole_model:
            kernel = loo_model_errors
        else:
            def kernel(codes, y, model, settings, lo, hi, out, keep=keep):
                loo_errors(codes, y, model, settings, lo, hi, keep, out)
        cs = self.chunk_starts
        pool = ThreadPoolExecutor(n_threads) if n_threads > 1 else None
        try:
            for b0 in range(0, n, block):
                b1 = min(b0 + block, n)
                bounds = np.linspace(b0, b1, n_threads + 1).round().astype(np.int64)

                def rows(lo_hi, b0=b0):
                    lo, hi = int(lo_hi[0]), int(lo_hi[1])
                    if hi > lo:
                        kernel(codes, y, self.model, self.settings, lo, hi,
                               errors[lo - b0 : hi - b0])

                if pool is None:
                    rows((b0, b1))
                else:
                    list(pool.map(rows, itertools.pairwise(bounds)))
                g0, g1 = start + b0, start + b1
                first = int(np.searchsorted(cs, g0, side="right")) - 1
                last = int(np.searchsorted(cs, g1 - 1, side="right")) - 1
                seg_id = np.arange(first, last + 1, dtype=np.int64)
                seg_lo = (np.maximum(cs[seg_id], g0) - start).astype(np.int64)
                seg_hi = (np.minimum(cs[seg_id + 1], g1) - start).astype(np.int64)
                add_errors(errors, np.int64(b0), seg_lo, seg_hi, seg_id, self.sse)
        finally:
            if pool is not None:
                pool.shutdown()
        return self

    def merge(self, other: LooStats) -> LooStats:
        self.sse += other.sse
        return self

    def rmse(self) -> np.ndarray:
        return np.sqrt(self.sse.sum(axis=0) / min(self.n_total, self.max_rows or self.n_total))


class MemberStats:
    """One pass statistic per ensemble member, gathered in the same pass: member ``e`` reads
    the ``e``-th codes of a :class:`~fastpath.scale._schema.MemberCoder`; ``None`` is a member
    with nothing to gather in this pass."""

    def __init__(self, items: Sequence[PassStatistic | None]) -> None:
        self.items = list(items)

    def fresh(self) -> MemberStats:
        return MemberStats([None if item is None else item.fresh() for item in self.items])

    def update(self, codes: Sequence[np.ndarray], y: np.ndarray, start: int) -> MemberStats:
        for item, member_codes in zip(self.items, codes, strict=True):
            if item is not None:
                item.update(member_codes, y, start)
        return self

    def merge(self, other: MemberStats) -> MemberStats:
        for item, more in zip(self.items, other.items, strict=True):
            if item is not None:
                item.merge(more)
        return self


class StatGroup:
    """Several pass statistics gathered in the same pass (e.g. the leave-one-out errors of
    every candidate m); ``items`` keeps their order."""

    def __init__(self, items: Sequence[PassStatistic]) -> None:
        self.items = list(items)

    def fresh(self) -> StatGroup:
        return StatGroup([item.fresh() for item in self.items])

    def update(self, codes: np.ndarray, y: np.ndarray, start: int) -> StatGroup:
        for item in self.items:
            item.update(codes, y, start)
        return self

    def merge(self, other: StatGroup) -> StatGroup:
        for item, more in zip(self.items, other.items, strict=True):
            item.merge(more)
        return self
