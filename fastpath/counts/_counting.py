"""Counting: integer-coded rows -> leaf count tables -> context trees.

One pass over the rows fills the counts of every conditional probability table of a model at
once (paper, "Efficiency of BNC learning"). A table is described by a :class:`TreeSpec`: which
column is the child and which columns it is conditioned on, in branching order (class first).
Column ``-1`` stands for the class.

Two storage modes, chosen per table from the size of its key space:

* **dense** — when (product of conditioning cardinalities) x K is small, counts live in a flat
  array indexed by the mixed-radix code of the path; a numba kernel fills all dense tables in a
  single pass over the rows.
* **sparse** — otherwise, each chunk is reduced to its distinct observed paths with their counts
  (a sort), so memory follows the number of observed paths, never the key space.

Both are *mergeable*: counts of two chunks (or of two Dask partitions) add up, so the same
accumulator serves in-memory fits, streaming fits and distributed reductions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit

from ..utils._numba_cache import flush_stale_cache
from . import _context_tree
from ._context_tree import ContextTree, _tree_arrays

#: largest dense table (cells) before a table switches to sparse storage (32 MiB of int64)
DENSE_CELL_LIMIT = 1 << 22


@dataclass(frozen=True)
class TreeSpec:
    """Which columns one context tree counts.

    Attributes
    ----------
    child : int
        Column of the child variable; ``-1`` for the class.
    conditioning : tuple of int
        Columns branched on, in order (``-1`` for the class).
    n_values : int
        Cardinality of the child.
    cardinalities : tuple of int
        Cardinality of each conditioning column.
    """

    child: int
    conditioning: tuple[int, ...]
    n_values: int
    cardinalities: tuple[int, ...]

    @property
    def n_cells(self) -> int:
        # exact Python integers: a key space can exceed int64
        return math.prod(int(c) for c in self.cardinalities) * int(self.n_values)

    @property
    def dense(self) -> bool:
        return self.n_cells <= DENSE_CELL_LIMIT


@njit(cache=True, nogil=True)
def _dense_count_kernel(codes, y, child_col, cond_ptr, cond_cols, radix, n_values, offsets, out,
                        key_offsets, seen):
    """Add every row to every dense table: one pass over the rows, all tables per row.

    ``seen[key_offsets[a] + key]`` is set for every path counted, so that reading a table's
    leaves (:func:`_dense_leaves`) skips the unobserved paths eight at a time instead of
    scanning its whole (mostly zero) block of counts."""
    n_rows = codes.shape[0]
    n_tables = child_col.shape[0]
    for r in range(n_rows):
        for a in range(n_tables):
            key = 0
            for j in range(cond_ptr[a], cond_ptr[a + 1]):
                c = cond_cols[j]
                v = y[r] if c < 0 else codes[r, c]
                key = key * radix[j] + v
            c = child_col[a]
            cv = y[r] if c < 0 else codes[r, c]
            out[offsets[a] + key * n_values[a] + cv] += 1
            seen[key_offsets[a] + key] = 1


@njit(cache=True, nogil=True)
def _dense_leaves(block, words, n_values, radix):
    """The observed rows of a dense table: their paths (decoded from the mixed-radix cell
    index, so in path order) and their counts, as fresh arrays.

    ``words`` are the table's observed-path flags (:func:`_dense_count_kernel`), one byte per
    path, read eight at a time: most paths of a large table are never observed."""
    n_keys = block.shape[0] // n_values
    depth = radix.shape[0]
    observed = np.empty(n_keys, np.int64)
    n_observed = 0
    for w in range(words.shape[0]):
        if words[w] == 0:
            continue
        for key in range(8 * w, min(8 * w + 8, n_keys)):
            # which of the word's paths: their counts say, whatever the machine's byte order
            if block[key * n_values : (key + 1) * n_values].any():
                observed[n_observed] = key
                n_observed += 1
    paths = np.empty((n_observed, depth), np.int64)
    counts = np.empty((n_observed, n_values), np.int64)
    for row in range(n_observed):
        key = observed[row]
        rest = key
        for d in range(depth - 1, -1, -1):
            paths[row, d] = rest % radix[d]
            rest //= radix[d]
        for v in range(n_values):
            counts[row, v] = block[key * n_values + v]
    return paths, counts


class FlatTrees(NamedTuple):
    """Several context trees in one set of arrays: tree ``t``'s arrays of
    :class:`~fastpath.counts.ContextTree` are the slices ``[ptr[t]:ptr[t + 1]]`` of each.

    ``node_ptr`` delimits ``parent``, ``branch_value``, ``lookup_offsets`` and ``totals``;
    ``child_offsets`` has one more entry per tree (``node_ptr[t] + t``); ``count_ptr``
    delimits ``counts`` (flat, node-major), ``lookup_ptr`` ``child_lookup`` and ``level_ptr``
    ``level_offsets``. Indices inside a tree's arrays are local to it. ``totals`` is every
    node's row count.
    """

    level_offsets: np.ndarray
    level_ptr: np.ndarray
    parent: np.ndarray
    branch_value: np.ndarray
    lookup_offsets: np.ndarray
    totals: np.ndarray
    node_ptr: np.ndarray
    child_offsets: np.ndarray
    counts: np.ndarray
    count_ptr: np.ndarray
    child_lookup: np.ndarray
    lookup_ptr: np.ndarray


@njit(cache=True, nogil=True)
def _append(buf, used, part):
    """Write ``part`` (flattened) at ``buf[used:]``, growing ``buf`` by doubling; returns it.

    Growing in place keeps the batched trees free of per-tree lists (numba's typed lists cost
    more than building a small tree)."""
    need = used + part.size
    if need > buf.shape[0]:
        grown = np.empty(max(need, 2 * buf.shape[0]), np.int64)
        grown[:used] = buf[:used]
        buf = grown
    buf[used:need] = part.ravel()
    return buf


@njit(cache=True, nogil=True)
def _table_leaves(t, dense, dense_lo, dense_hi, words, words_lo, words_hi, sparse_paths,
                  sparse_counts, path_lo, count_lo, n_leaves, n_values, radix, radix_lo,
                  radix_hi):
    """Table ``t``'s observed paths and counts (arguments of :func:`_flat_tree_arrays`)."""
    cards = radix[radix_lo[t] : radix_hi[t]]
    k = n_values[t]
    if dense_lo[t] >= 0:
        return _dense_leaves(dense[dense_lo[t] : dense_hi[t]], words[words_lo[t] : words_hi[t]],
                             k, cards)
    width = cards.shape[0]
    n = n_leaves[t]
    paths = sparse_paths[path_lo[t] : path_lo[t] + n * width].reshape(n, width)
    leaf_counts = sparse_counts[count_lo[t] : count_lo[t] + n * k].reshape(n, k)
    return paths, leaf_counts


@njit(cache=True, nogil=True)
def _flat_tree_arrays(dense, dense_lo, dense_hi, words, words_lo, words_hi, sparse_paths,
                      sparse_counts, path_lo, count_lo, n_leaves, n_values, radix, radix_lo,
                      radix_hi, depths):
    """Build many trees in one call (:class:`FlatTrees`' arrays, in its field order).

    Table ``t`` branches on ``radix[radix_lo[t]:radix_hi[t]]`` and is built to depth
    ``depths[t]``. Its leaves are the dense block ``dense[dense_lo[t]:dense_hi[t]]`` (observed
    paths flagged in ``words[words_lo[t]:words_hi[t]]``) when ``dense_lo[t] >= 0``, else
    ``n_leaves[t]`` rows sorted by path, flat in ``sparse_paths`` from ``path_lo[t]`` and in
    ``sparse_counts`` from ``count_lo[t]``.
    """
    n_tables = depths.shape[0]
    level_ptr = np.zeros(n_tables + 1, np.int64)
    node_ptr = np.zeros(n_tables + 1, np.int64)
    count_ptr = np.zeros(n_tables + 1, np.int64)
    lookup_ptr = np.zeros(n_tables + 1, np.int64)
    guess = 16 * n_tables
    levels = np.empty(guess, np.int64)
    parents = np.empty(guess, np.int64)
    values = np.empty(guess, np.int64)
    lookups = np.empty(guess, np.int64)
    totals = np.empty(guess, np.int64)
    children = np.empty(guess, np.int64)
    counts = np.empty(guess, np.int64)
    slots = np.empty(guess, np.int64)
    for t in range(n_tables):
        cards = radix[radix_lo[t] : radix_hi[t]]
        k = n_values[t]
        paths, leaf_counts = _table_leaves(t, dense, dense_lo, dense_hi, words, words_lo,
                                           words_hi, sparse_paths, sparse_counts, path_lo,
                                           count_lo, n_leaves, n_values, radix, radix_lo,
                                           radix_hi)
        (ok, level_offsets, parent, branch_value, node_counts, child_offsets, lookup_offsets,
         child_lookup) = _tree_arrays(paths, leaf_counts, cards[: depths[t]])
        if not ok:
            raise AssertionError("stored leaves must be sorted by path")
        n_nodes = parent.shape[0]
        node_totals = np.zeros(n_nodes, np.int64)
        for i in range(n_nodes):
            for j in range(k):
                node_totals[i] += node_counts[i, j]
        lo = node_ptr[t]
        levels = _append(levels, level_ptr[t], level_offsets)
        parents = _append(parents, lo, parent)
        values = _append(values, lo, branch_value)
        lookups = _append(lookups, lo, lookup_offsets)
        totals = _append(totals, lo, node_totals)
        children = _append(children, lo + t, child_offsets)
        counts = _append(counts, count_ptr[t], node_counts)
        slots = _append(slots, lookup_ptr[t], child_lookup)
        level_ptr[t + 1] = level_ptr[t] + level_offsets.shape[0]
        node_ptr[t + 1] = lo + n_nodes
        count_ptr[t + 1] = count_ptr[t] + node_counts.size
        lookup_ptr[t + 1] = lookup_ptr[t] + child_lookup.shape[0]
    n_nodes = node_ptr[n_tables]
    # copies of the used parts: the trees should not keep the doubling's slack alive
    return (
        levels[: level_ptr[n_tables]].copy(), level_ptr,
        parents[:n_nodes].copy(), values[:n_nodes].copy(), lookups[:n_nodes].copy(),
        totals[:n_nodes].copy(), node_ptr,
        children[: n_nodes + n_tables].copy(),
        counts[: count_ptr[n_tables]].copy(), count_ptr,
        slots[: lookup_ptr[n_tables]].copy(), lookup_ptr,
    )


def _column(codes: np.ndarray, y: np.ndarray, col: int) -> np.ndarray:
    return y if col < 0 else codes[:, col]


def _compact(paths: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Merge duplicate paths (sort + segment sums)."""
    if paths.shape[0] <= 1 or paths.shape[1] == 0:
        if paths.shape[1] == 0 and paths.shape[0] > 1:
            return paths[:1], counts.sum(axis=0, keepdims=True)
        return paths, counts
    order = np.lexsort(paths.T[::-1])
    paths, counts = paths[order], counts[order]
    starts = np.flatnonzero(np.r_[True, (paths[1:] != paths[:-1]).any(axis=1)])
    return paths[starts], np.add.reduceat(counts, starts, axis=0)


@njit(cache=True, nogil=True)
def _leaf_keys(codes, y, child_col, cond_cols, cards, n_values):
    """Each row's key: its path's codes in mixed radix (the first variable most significant;
    column -1 is the class), times ``n_values``, plus its child's code."""
    n = y.shape[0]
    keys = np.empty(n, dtype=np.int64)
    for r in range(n):
        key = 0
        for d in range(cond_cols.shape[0]):
            col = cond_cols[d]
            key = key * cards[d] + (y[r] if col < 0 else codes[r, col])
        keys[r] = key * n_values + (y[r] if child_col < 0 else codes[r, child_col])
    return keys


@njit(cache=True, nogil=True)
def _leaf_runs(keys, cards, n_values):
    """The distinct paths of sorted ``keys`` (:func:`_leaf_keys`), ascending, and each one's
    counts of the child's values."""
    n = keys.shape[0]
    depth = cards.shape[0]
    n_paths = 0
    for r in range(n):
        if r == 0 or keys[r] // n_values != keys[r - 1] // n_values:
            n_paths += 1
    paths = np.empty((n_paths, depth), dtype=np.int64)
    counts = np.zeros((n_paths, n_values), dtype=np.int64)
    row = -1
    for r in range(n):
        path = keys[r] // n_values
        if r == 0 or path != keys[r - 1] // n_values:
            row += 1
            rest = path
            for d in range(depth - 1, -1, -1):
                paths[row, d] = rest % cards[d]
                rest //= cards[d]
        counts[row, keys[r] % n_values] += 1
    return paths, counts


def _sorted_leaves(codes: np.ndarray, y: np.ndarray, child_col: int, cond_cols: np.ndarray,
                   cards: np.ndarray, n_values: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`count_leaves` when every (path, value) has an int64 key, read straight from the
    code matrix: the keys sorted once (numpy's sort), then each run of one path read into a
    row of counts -- the paths distinct and in ascending order."""
    keys = _leaf_keys(codes, y, child_col, cond_cols, cards, n_values)
    keys.sort()
    return _leaf_runs(keys, cards, n_values)


def count_leaves(
    child: np.ndarray,
    conditioning: np.ndarray,
    n_values: int,
    cardinalities: Sequence[int],
) -> tuple[np.ndarray, np.ndarray]:
    """Distinct observed paths and their child-value counts.

    Parameters
    ----------
    child : array of int, shape (n_rows,)
        Codes of the child variable, in [0, n_values).
    conditioning : array of int, shape (n_rows, depth)
        Codes of the conditioning variables in branching order.

    Returns
    -------
    paths : ndarray of int64, shape (L, depth)
    counts : ndarray of int64, shape (L, n_values)
    """
    child = np.asarray(child, dtype=np.int64)
    conditioning = np.asarray(conditioning, dtype=np.int64).reshape(child.shape[0], -1)
    depth = conditioning.shape[1]
    cards = np.asarray(cardinalities, dtype=np.int64)
    if child.size:
        if child.min() < 0 or child.max() >= n_values:
            raise ValueError(f"child codes must lie in [0, {n_values})")
        if depth and ((conditioning < 0).any() or (conditioning >= cards).any()):
            raise ValueError("conditioning codes out of range of their cardinalities")
    space = int(np.prod(cards, dtype=object))
    if space * n_values < 2**62:
        # mixed-radix key of the path and the child's value, then one sort: the conditioning
        # matrix is the "codes" (its columns in order) and the child the "class" column (-1)
        return _sorted_leaves(np.ascontiguousarray(conditioning), child, -1,
                              np.arange(depth, dtype=np.int64), cards, int(n_values))
    uniq, inverse = np.unique(conditioning, axis=0, return_inverse=True)
    counts = np.zeros((uniq.shape[0], n_values), dtype=np.int64)
    np.add.at(counts, (inverse.ravel(), child), 1)
    return uniq.astype(np.int64), counts


def count_tree(
    child: np.ndarray,
    conditioning: np.ndarray,
    n_values: int,
    cardinalities: Sequence[int],
    *,
    child_name: str | None = None,
    conditioning_names: Sequence[str] | None = None,
) -> ContextTree:
    """Count rows into a :class:`~fastpath.counts.ContextTree` (see :func:`count_leaves`)."""
    paths, counts = count_leaves(child, conditioning, n_values, cardinalities)
    return ContextTree.from_leaf_counts(
        paths,
        counts,
        cardinalities,
        n_values,
        child_name=child_name,
        conditioning_names=conditioning_names,
    )


class CountAccumulator:
    """Counts of many context trees, filled chunk by chunk and mergeable.

    Parameters
    ----------
    specs : sequence of TreeSpec
    n_rows : int, optional
        The rows it will count, when known (an in-memory fit): a table of more than
        ``max(2**16, 8 * n_rows)`` cells is then kept sparse, since at most ``n_rows`` of its
        cells are non-zero (a dense one would cost its whole size in memory written). The
        layout changes no count and no tree; accumulators merge only with one of the same
        layout.
    """

    def __init__(self, specs: Sequence[TreeSpec], n_rows: int | None = None) -> None:
        self.specs = tuple(specs)
        self.n_rows = 0
        cap = None if n_rows is None else max(1 << 16, 8 * int(n_rows))
        dense = [i for i, s in enumerate(self.specs)
                 if s.dense and (cap is None or s.n_cells <= cap)]
        self._dense_set = frozenset(dense)
        self._dense_ids = np.asarray(dense, dtype=np.int64)
        sizes = [self.specs[i].n_cells for i in dense]
        self._dense_offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        self._dense = np.zeros(int(self._dense_offsets[-1]), dtype=np.int64)
        # each table's cardinalities as the array the leaf kernels read
        self._radix = [np.asarray(s.cardinalities, dtype=np.int64) for s in self.specs]
        # the same, end to end, and each table's dense block (-1: sparse), for _flat_tree_arrays
        depths = np.asarray([len(s.cardinalities) for s in self.specs], dtype=np.int64)
        self._radix_flat = np.asarray([c for s in self.specs for c in s.cardinalities],
                                      dtype=np.int64)
        self._radix_hi = np.cumsum(depths)
        self._radix_lo = self._radix_hi - depths
        self._depths = depths
        self._n_values = np.asarray([s.n_values for s in self.specs], dtype=np.int64)
        self._dense_lo = np.full(len(self.specs), -1, dtype=np.int64)
        self._dense_hi = np.full(len(self.specs), -1, dtype=np.int64)
        self._dense_lo[self._dense_ids] = self._dense_offsets[:-1]
        self._dense_hi[self._dense_ids] = self._dense_offsets[1:]
        # one flag per path of every dense table, observed or not; each table's flags start
        # on a multiple of 8, so that they are read as whole 64-bit words
        # (paths counted from the cardinalities: a table of an empty column has no values)
        n_words = [-(-math.prod(self.specs[i].cardinalities) // 8) for i in dense]
        word_offsets = np.concatenate([[0], np.cumsum(n_words)]).astype(np.int64)
        self._key_offsets = 8 * word_offsets
        self._seen = np.zeros(int(self._key_offsets[-1]), dtype=np.uint8)
        self._words_lo = np.full(len(self.specs), -1, dtype=np.int64)
        self._words_hi = np.full(len(self.specs), -1, dtype=np.int64)
        self._words_lo[self._dense_ids] = word_offsets[:-1]
        self._words_hi[self._dense_ids] = word_offsets[1:]
        self._sparse: dict[int, tuple[np.ndarray, np.ndarray]] = {
            i: (
                np.empty((0, len(s.conditioning)), np.int64),
                np.empty((0, s.n_values), np.int64),
            )
            for i, s in enumerate(self.specs)
            if i not in self._dense_set
        }
        # kernel arguments for the dense tables
        child_col, cond_ptr, cond_cols, radix, n_values = [], [0], [], [], []
        for i in dense:
            s = self.specs[i]
            child_col.append(s.child)
            cond_cols.extend(s.conditioning)
            radix.extend(s.cardinalities)
            cond_ptr.append(len(cond_cols))
            n_values.append(s.n_values)
        self._kernel_spec = (
            np.asarray(child_col, dtype=np.int64),
            np.asarray(cond_ptr, dtype=np.int64),
            np.asarray(cond_cols, dtype=np.int64),
            np.asarray(radix, dtype=np.int64),
            np.asarray(n_values, dtype=np.int64),
        )

    def update(self, codes: np.ndarray, y: np.ndarray) -> CountAccumulator:
        """Add a chunk of integer-coded rows (codes: (n, p), y: (n,)); returns self."""
        codes = np.ascontiguousarray(codes, dtype=np.int64)
        y = np.ascontiguousarray(y, dtype=np.int64)
        if codes.ndim != 2 or y.ndim != 1 or codes.shape[0] != y.shape[0]:
            raise ValueError("codes must be (n, p) and y (n,) with the same n")
        if codes.size and codes.min() < 0:
            raise ValueError("codes must be non-negative (unknown values cannot be counted)")
        if y.size:
            self._check_ranges(codes, y)
        if self._dense_ids.size and y.size:
            child_col, cond_ptr, cond_cols, radix, n_values = self._kernel_spec
            _dense_count_kernel(
                codes, y, child_col, cond_ptr, cond_cols, radix, n_values,
                self._dense_offsets, self._dense, self._key_offsets, self._seen,
            )
        for i, (paths, counts) in self._sparse.items():
            s = self.specs[i]
            if s.n_cells < 2**62:  # the rows' keys read straight from the codes (checked)
                new_paths, new_counts = _sorted_leaves(
                    codes, y, s.child, np.asarray(s.conditioning, dtype=np.int64),
                    np.asarray(s.cardinalities, dtype=np.int64), s.n_values)
            else:
                cond = (
                    np.stack([_column(codes, y, c) for c in s.conditioning], axis=1)
                    if s.conditioning
                    else np.zeros((y.shape[0], 0), np.int64)
                )
                new_paths, new_counts = count_leaves(
                    _column(codes, y, s.child), cond, s.n_values, s.cardinalities
                )
            if paths.shape[0] == 0 and s.conditioning:
                # count_leaves' paths are distinct and sorted (mixed-radix keys, the first
                # variable most significant, or np.unique's rows): what _compact returns
                self._sparse[i] = (new_paths, new_counts)
            else:
                self._sparse[i] = _compact(
                    np.concatenate([paths, new_paths]), np.concatenate([counts, new_counts])
                )
        self.n_rows += int(y.shape[0])
        return self

    def _check_ranges(self, codes: np.ndarray, y: np.ndarray) -> None:
        # the dense kernel trusts its codes: an out-of-range code would land in another cell
        col_max = codes.max(axis=0) if codes.shape[1] else np.zeros(0, np.int64)
        y_max = int(y.max())
        if y.min() < 0:
            raise ValueError("class codes must be non-negative")
        for s in self.specs:
            cols = (s.child, *s.conditioning)
            cards = (s.n_values, *s.cardinalities)
            for col, card in zip(cols, cards, strict=True):
                top = y_max if col < 0 else int(col_max[col])
                if top >= card:
                    what = "the class" if col < 0 else f"column {col}"
                    raise ValueError(f"code {top} of {what} is out of range [0, {card})")

    def merge(self, other: CountAccumulator) -> CountAccumulator:
        """Add another accumulator's counts (same specs); returns self."""
        if other.specs != self.specs:
            raise ValueError("cannot merge counts of different table specifications")
        if other._dense_set != self._dense_set:
            raise ValueError("cannot merge counts stored in different layouts (one accumulator "
                             "was sized for its rows with n_rows)")
        self._dense += other._dense
        self._seen |= other._seen
        for i, (paths, counts) in self._sparse.items():
            op, oc = other._sparse[i]
            self._sparse[i] = _compact(np.concatenate([paths, op]), np.concatenate([counts, oc]))
        self.n_rows += other.n_rows
        return self

    def leaf_counts(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """Observed paths and counts of table ``i`` (copies)."""
        paths, counts = self._leaves(i)
        if i in self._sparse:
            return paths.copy(), counts.copy()
        return paths, counts  # the dense kernel wrote fresh arrays

    def _leaves(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`leaf_counts` for readers that do not change them: the stored arrays of a
        sparse table (not copies), sorted by path, every row observed."""
        if i in self._sparse:
            return self._sparse[i]
        block = self._dense[self._dense_lo[i] : self._dense_hi[i]]
        # a view made when needed, never stored: a pickled accumulator would lose the link
        words = self._seen.view(np.uint64)[self._words_lo[i] : self._words_hi[i]]
        return _dense_leaves(block, words, self.specs[i].n_values, self._radix[i])

    def tree(self, i: int, *, child_name: str | None = None,
             conditioning_names: Sequence[str] | None = None,
             depth: int | None = None) -> ContextTree:
        """Context tree of table ``i``.

        Parameters
        ----------
        i : int
            Index of the table in ``specs``.
        child_name, conditioning_names : optional
            Variable names, as in :meth:`ContextTree.from_leaf_counts`.
        depth : int, optional
            Keep only the top ``depth`` branching levels (default: all): the tree of the first
            ``depth`` conditioning variables, the same integers a count of those gives.
        """
        s = self.specs[i]
        cards = s.cardinalities if depth is None else s.cardinalities[:depth]
        if depth is not None and not 0 <= depth <= len(s.cardinalities):
            raise ValueError(f"depth must lie in [0, {len(s.cardinalities)}], got {depth}")
        if conditioning_names is not None and len(conditioning_names) != len(cards):
            raise ValueError("conditioning_names must name one variable per depth")
        paths, counts = self._leaves(i)
        # the leaves are valid by construction (checked codes, sorted by path, observed), so
        # the public constructor's checks are skipped; the builder reads the first
        # len(cards) path columns only
        return ContextTree._from_valid_leaves(
            paths,
            counts,
            cards,
            s.n_values,
            child_name=child_name,
            conditioning_names=None if conditioning_names is None else tuple(conditioning_names),
        )

    def flat_trees(self, indices: Sequence[int] | None = None,
                   depths: Sequence[int] | None = None) -> FlatTrees:
        """The trees of tables ``indices`` (default: all, in order) in one :class:`FlatTrees`,
        built in one kernel call: the arrays :meth:`tree` gives, end to end. The arrays are
        fresh and the caller's (writeable, so that numba kernels taking them compile as for
        any other array).

        ``depths[t]``, when given, keeps the top ``depths[t]`` branching levels of tree ``t``
        (as :meth:`tree`'s ``depth``).
        """
        ids = (np.arange(len(self.specs), dtype=np.int64) if indices is None
               else np.asarray(indices, dtype=np.int64).reshape(-1))
        full = self._depths[ids]
        levels = full if depths is None else np.asarray(depths, dtype=np.int64).reshape(-1)
        if levels.shape != ids.shape or (levels < 0).any() or (levels > full).any():
            raise ValueError("depths must give each tree a depth within its table's")
        if not ids.size:
            empty = np.zeros(0, np.int64)
            start = np.zeros(1, np.int64)
            return FlatTrees(empty, start, empty, empty, empty, empty, start, empty, empty,
                             start, empty, start)
        return FlatTrees(*_flat_tree_arrays(*self._leaf_arguments(ids, levels)))

    def leaf_arguments(self, indices: Sequence[int] | None = None) -> tuple:
        """The stored leaves and full depth of the tables ``indices`` (default: all, in
        order) as the arguments of the kernels that build trees from them
        (:func:`_table_leaves`; ``depths`` last)."""
        ids = (np.arange(len(self.specs), dtype=np.int64) if indices is None
               else np.asarray(indices, dtype=np.int64).reshape(-1))
        return self._leaf_arguments(ids, self._depths[ids])

    def _leaf_arguments(self, ids: np.ndarray, levels: np.ndarray) -> tuple:
        # the sparse tables' stored leaves, end to end (dense blocks are read in place)
        path_lo = np.zeros(ids.size, np.int64)
        count_lo = np.zeros(ids.size, np.int64)
        n_leaves = np.zeros(ids.size, np.int64)
        paths_parts, counts_parts = [], []
        n_paths = n_counts = 0
        for t, i in enumerate(ids.tolist()):
            if i in self._sparse:
                paths, counts = self._sparse[i]
                path_lo[t], count_lo[t], n_leaves[t] = n_paths, n_counts, paths.shape[0]
                paths_parts.append(paths.ravel())
                counts_parts.append(counts.ravel())
                n_paths += paths.size
                n_counts += counts.size
        sparse_paths = np.concatenate(paths_parts) if paths_parts else np.zeros(0, np.int64)
        sparse_counts = np.concatenate(counts_parts) if counts_parts else np.zeros(0, np.int64)
        return (
            self._dense, self._dense_lo[ids], self._dense_hi[ids], self._seen.view(np.uint64),
            self._words_lo[ids], self._words_hi[ids], sparse_paths, sparse_counts,
            path_lo, count_lo, n_leaves, self._n_values[ids], self._radix_flat,
            self._radix_lo[ids], self._radix_hi[ids], levels,
        )

    def trees(self, indices: Sequence[int] | None = None, *,
              depths: Sequence[int] | None = None,
              names: Sequence[tuple[str | None, Sequence[str] | None]] | None = None,
              ) -> list[ContextTree]:
        """The trees :meth:`tree` gives for tables ``indices`` (default: all), built in one
        kernel call; their arrays are read-only views of one :class:`FlatTrees`.

        ``depths`` as in :meth:`flat_trees`; ``names[t]`` is tree ``t``'s ``(child_name,
        conditioning_names)``.
        """
        ids = list(range(len(self.specs))) if indices is None else [int(i) for i in indices]
        flat = self.flat_trees(ids, depths)
        cuts = [a.tolist() for a in (flat.level_ptr, flat.node_ptr, flat.count_ptr,
                                     flat.lookup_ptr)]
        level_ptr, node_ptr, count_ptr, lookup_ptr = cuts
        out = []
        for t, i in enumerate(ids):
            s = self.specs[i]
            depth = level_ptr[t + 1] - level_ptr[t] - 2
            cards = s.cardinalities[:depth]
            child_name, conditioning_names = (None, None) if names is None else names[t]
            if conditioning_names is not None and len(conditioning_names) != depth:
                raise ValueError("conditioning_names must name one variable per depth")
            lo, hi = node_ptr[t], node_ptr[t + 1]
            arrays = {
                "level_offsets": flat.level_offsets[level_ptr[t] : level_ptr[t + 1]],
                "parent": flat.parent[lo:hi],
                "branch_value": flat.branch_value[lo:hi],
                "counts": flat.counts[count_ptr[t] : count_ptr[t + 1]].reshape(hi - lo,
                                                                                s.n_values),
                "child_offsets": flat.child_offsets[lo + t : hi + t + 1],
                "lookup_offsets": flat.lookup_offsets[lo:hi],
                "child_lookup": flat.child_lookup[lookup_ptr[t] : lookup_ptr[t + 1]],
            }
            for a in arrays.values():
                a.flags.writeable = False  # trees are immutable values (views of `flat`)
            out.append(ContextTree(
                n_values=s.n_values,
                branch_cardinalities=cards,
                child_name=child_name,
                conditioning_names=(None if conditioning_names is None
                                    else tuple(conditioning_names)),
                **arrays,
            ))
        return out


class ProjectedCounts:
    """Trees of a selected SkDB model read off kDB-K counts (nested parent sets).

    The kDB-k* tree of an attribute is the top ``1 + k*`` levels of its kDB-K tree, so its
    leaf counts are the kDB-K leaf counts summed over the deeper levels: the same integers a
    fresh count gives. ``counted_specs`` are the accumulator's specs (the class prior's among
    them when ``specs`` has one); a spec of ``specs`` reads the counted spec of its child.
    """

    def __init__(self, accumulator: CountAccumulator, counted_specs: Sequence[TreeSpec],
                 specs: Sequence[TreeSpec]) -> None:
        self.accumulator = accumulator
        position = {spec.child: t for t, spec in enumerate(counted_specs)}
        self.source_of = {i: position[spec.child] for i, spec in enumerate(specs)}
        self.specs = list(specs)

    def tree(self, i: int, **names) -> ContextTree:
        return self.accumulator.tree(self.source_of[i], depth=len(self.specs[i].cardinalities),
                                     **names)

    def trees(self, indices: Sequence[int] | None = None, *,
              names: Sequence[tuple[str | None, Sequence[str] | None]] | None = None,
              ) -> list[ContextTree]:
        """:meth:`tree` of each of ``indices`` (default: all), built in one kernel call."""
        ids = list(range(len(self.specs)) if indices is None else indices)
        return self.accumulator.trees([self.source_of[i] for i in ids],
                                      depths=[len(self.specs[i].cardinalities) for i in ids],
                                      names=names)


# _flat_tree_arrays compiles _context_tree's _tree_arrays into its own cache entry
flush_stale_cache(globals(), [_context_tree])
