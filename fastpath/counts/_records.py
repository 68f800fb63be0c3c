"""Context trees as node records: the layout the leave-one-out kernels of selective kDB read.

A tree's nodes are numbered as in :class:`~fastpath.counts.ContextTree` (level by level, each
level in path order). Node ``i``'s record starts at ``records[position[i]]``:

* its row count, then the counts of the child's ``n_values`` values;
* for an internal node (depth below the tree's), a tag, then its children:

  - tag ``>= 0``: *direct*, ``tag`` slots, one per value ``v`` of the next branching variable,
    each the position of the child's record on ``v`` or -1 (never observed);
  - tag ``< 0``: *sparse*, ``-tag - 1`` pairs ``(v, position)`` in increasing ``v``, searched
    (:func:`find_child`): a node keeps them when one slot per value would take more than twice
    its children's pairs plus :data:`SPARSE_MARGIN` (a parent with hundreds of values whose
    nodes see a few each: hypothyroid's kDB-5 trees held 14 million slots for 120,000 nodes).

A node's numbers lie side by side (one or two cache lines per step of a descent, instead of a
line in each of four arrays), as 32-bit integers when every count and position fits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from numba import njit

from ..utils._numba_cache import flush_stale_cache
from . import _context_tree, _counting
from ._context_tree import ContextTree, _tree_nodes
from ._counting import _table_leaves

#: see the module docstring: a node with ``c`` children keeps them as pairs when its next
#: variable has more than ``2 c + SPARSE_MARGIN`` values
SPARSE_MARGIN = 8


class TreeRecords(NamedTuple):
    """Trees as node records (module docstring): tree ``t``'s root record starts at
    ``records[root[t]]``; its nodes of depth ``depth[t]`` are leaves."""

    records: np.ndarray
    root: np.ndarray
    depth: np.ndarray


@njit(cache=True, nogil=True)
def find_child(records, node, n_values, v):
    """The position of the record of the child on value ``v`` of the internal node whose
    record starts at ``node`` (``n_values``: the tree's child values); -1 if never observed."""
    at = node + 1 + n_values
    tag = records[at]
    if tag >= 0:
        return records[at + 1 + v]
    lo = 0
    hi = -tag - 1
    while lo < hi:
        mid = (lo + hi) >> 1
        value = records[at + 1 + 2 * mid]
        if value < v:
            lo = mid + 1
        elif value > v:
            hi = mid
        else:
            return records[at + 2 + 2 * mid]
    return -1


@njit(cache=True, nogil=True)
def _sparse(n_slots, n_children):
    return n_slots > 2 * n_children + SPARSE_MARGIN


@njit(cache=True, nogil=True)
def _append_tree(buf, at, level_offsets, branch_value, node_counts, child_offsets, cards):
    """Write a tree's records (:func:`~fastpath.counts._context_tree._tree_nodes`' arrays)
    from ``buf[at]``, growing ``buf`` by doubling; returns ``(buf, end, root position)``."""
    n_nodes, kv = node_counts.shape
    depth = cards.shape[0]
    position = np.empty(n_nodes, np.int64)
    end = at
    for d in range(depth + 1):
        for i in range(level_offsets[d], level_offsets[d + 1]):
            position[i] = end
            end += 1 + kv
            if d < depth:
                n_children = child_offsets[i + 1] - child_offsets[i]
                end += 1 + (2 * n_children if _sparse(cards[d], n_children) else cards[d])
    if end > buf.shape[0]:
        grown = np.empty(max(end, 2 * buf.shape[0]), buf.dtype)
        grown[:at] = buf[:at]
        buf = grown
    for d in range(depth + 1):
        for i in range(level_offsets[d], level_offsets[d + 1]):
            q = position[i]
            total = 0
            for x in range(kv):
                total += node_counts[i, x]
                buf[q + 1 + x] = node_counts[i, x]
            buf[q] = total
            if d == depth:
                continue
            tag = q + 1 + kv
            first = child_offsets[i]
            n_children = child_offsets[i + 1] - first
            if _sparse(cards[d], n_children):
                buf[tag] = -n_children - 1
                for j in range(n_children):
                    buf[tag + 1 + 2 * j] = branch_value[first + j]
                    buf[tag + 2 + 2 * j] = position[first + j]
            else:
                buf[tag] = cards[d]
                for v in range(cards[d]):
                    buf[tag + 1 + v] = -1
                for j in range(n_children):
                    buf[tag + 1 + branch_value[first + j]] = position[first + j]
    return buf, end, position[0]


@njit(cache=True, nogil=True)
def _flat_tree_records(dense, dense_lo, dense_hi, words, words_lo, words_hi, sparse_paths,
                       sparse_counts, path_lo, count_lo, n_leaves, n_values, radix, radix_lo,
                       radix_hi, depths):
    """:func:`~fastpath.counts._counting._flat_tree_arrays`' trees (same arguments) as node
    records: ``(records, root)`` (64-bit)."""
    n_tables = depths.shape[0]
    buf = np.empty(64 * n_tables + 64, np.int64)
    root = np.empty(n_tables, np.int64)
    at = np.int64(0)  # not the literal 0: _append_tree compiles once (int64)
    for t in range(n_tables):
        paths, leaf_counts = _table_leaves(t, dense, dense_lo, dense_hi, words, words_lo,
                                           words_hi, sparse_paths, sparse_counts, path_lo,
                                           count_lo, n_leaves, n_values, radix, radix_lo,
                                           radix_hi)
        cards = radix[radix_lo[t] : radix_lo[t] + depths[t]]
        ok, level_offsets, _, branch_value, node_counts, child_offsets = _tree_nodes(
            paths, leaf_counts, cards)
        if not ok:
            raise AssertionError("stored leaves must be sorted by path")
        buf, at, root[t] = _append_tree(buf, at, level_offsets, branch_value, node_counts,
                                        child_offsets, cards)
    return buf[:at].copy(), root


def _narrowed(records: np.ndarray) -> np.ndarray:
    """``records`` as 32-bit integers when every entry fits (counts and positions)."""
    limit = np.iinfo(np.int32).max
    if records.size < limit and (records.size == 0 or int(records.max()) < limit):
        return records.astype(np.int32)
    return records


def accumulated_records(acc: _counting.CountAccumulator,
                        indices: Sequence[int] | None = None) -> TreeRecords:
    """The node records of the tables ``indices`` of ``acc`` (default: every table, in order)
    at their full depth, built straight from the stored leaves (no slot arrays): one kernel
    call."""
    args = acc.leaf_arguments(indices)
    records, root = _flat_tree_records(*args)
    return TreeRecords(_narrowed(records), root, np.asarray(args[-1], np.int64))


def tree_records(trees: Sequence[ContextTree]) -> TreeRecords:
    """The node records of ``trees`` (the same integers :func:`accumulated_records` gives for
    the accumulator they were built from)."""
    buf = np.empty(64 * len(trees) + 64, np.int64)
    root = np.empty(len(trees), np.int64)
    at = 0
    for t, tree in enumerate(trees):
        cards = np.asarray(tree.branch_cardinalities, np.int64)[: tree.level_offsets.size - 2]
        buf, at, root[t] = _append_tree(buf, at, tree.level_offsets, tree.branch_value,
                                        tree.counts, tree.child_offsets, cards)
    depth = np.asarray([t.level_offsets.size - 2 for t in trees], np.int64)
    return TreeRecords(_narrowed(buf[:at].copy()), root, depth)


# the kernels compile _context_tree's and _counting's functions into their own cache entries
flush_stale_cache(globals(), [_context_tree, _counting])
