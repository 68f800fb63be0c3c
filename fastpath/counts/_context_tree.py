"""Context trees: the counts of one child variable given its ordered conditioning variables.

A context tree (paper, section "Context tree -- data structure") holds, for one conditional
probability table P(X_c | y, x_1, ..., x_n), a node for every *observed* prefix of the
conditioning values: the root (no conditioning), one node per observed class value, one per
observed (class, first parent) pair, and so on down to the leaves at depth n + 1.

The layout is a flat struct of arrays, ordered level by level (breadth first) and, within a
level, lexicographically by path. So

* the nodes of depth ``d`` are ``level_offsets[d]:level_offsets[d + 1]``;
* the children of a node are contiguous and sorted by branch value
  (``child_offsets[i]:child_offsets[i + 1]``), and always lie in the next level;
* ``child_lookup[lookup_offsets[i] + v]`` is the child of internal node ``i`` on branch value ``v``
  (``-1`` when that value was never observed), an O(1) descent for prediction kernels.

``counts[i, k]`` is the number of training rows whose path passes through node ``i`` and whose
child value is ``k`` (for a leaf: its data; for an internal node: the sum over its subtree). The
HDP sampler uses the leaf rows as data and treats internal counts as derived quantities; m-estimates
use every level directly.

All arrays are read-only: a tree is an immutable value that samplers, estimators and the
NumPyro model share without copying.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numba import njit

Tying = Literal["none", "same-parent", "level", "single"]
TYING_STRATEGIES: tuple[str, ...] = ("none", "same-parent", "level", "single")


@njit(cache=True, nogil=True)
def _tree_arrays(paths, counts, cards):
    """The arrays of a tree from leaf rows sorted by path (first column most significant):
    :func:`_tree_nodes`' and the lookup slots (one per value of the next branching variable,
    for every internal node).

    Returns ``(ok, level_offsets, parent, branch_value, counts, child_offsets, lookup_offsets,
    child_lookup)``; ``ok`` is False, and the arrays empty, when the rows are not sorted.
    """
    depth = cards.shape[0]
    ok, level_offsets, parent, branch_value, node_counts, child_offsets = _tree_nodes(
        paths, counts, cards)
    if not ok:
        empty = np.empty(0, np.int64)
        return (False, empty, empty, empty, node_counts, empty, empty, empty)
    n_nodes = parent.shape[0]
    lookup_offsets = np.full(n_nodes, -1, np.int64)
    n_slots = 0
    for d in range(depth):
        for node in range(level_offsets[d], level_offsets[d + 1]):
            lookup_offsets[node] = n_slots
            n_slots += cards[d]
    child_lookup = np.full(n_slots, -1, np.int64)
    for node in range(1, n_nodes):
        child_lookup[lookup_offsets[parent[node]] + branch_value[node]] = node
    return (True, level_offsets, parent, branch_value, node_counts, child_offsets,
            lookup_offsets, child_lookup)


@njit(cache=True, nogil=True)
def _tree_nodes(paths, counts, cards):
    """The nodes of a tree from leaf rows sorted by path (first column most significant).

    ``paths`` may have more columns than ``cards``: only the first ``len(cards)`` are read, so
    a caller can pass the leaves of a deeper tree (its top levels) without a copy. Rows may
    repeat (their counts are added); rows whose counts sum to zero are skipped. Counts must be
    non-negative.

    Returns ``(ok, level_offsets, parent, branch_value, counts, child_offsets)``; ``ok`` is
    False, and the arrays empty, when the rows are not sorted. Nodes are numbered level by
    level, each level in path order, so a node's children are contiguous and in branch-value
    order: ``child_offsets[i]:child_offsets[i + 1]``.
    """
    n_rows = paths.shape[0]
    depth = cards.shape[0]
    k = counts.shape[1]
    empty = np.empty(0, np.int64)
    # pass 1: the first column where each kept row differs from the kept row above (a row
    # opens one new node at every depth below that column), and the size of every level
    first = np.full(n_rows, -1, np.int64)
    level_sizes = np.zeros(depth + 1, np.int64)
    level_sizes[0] = 1
    prev = -1
    for i in range(n_rows):
        total = 0
        for j in range(k):
            total += counts[i, j]
        if total <= 0:
            continue  # the tree holds observed paths only
        f = 0
        if prev >= 0:
            f = depth
            for d in range(depth):
                if paths[i, d] != paths[prev, d]:
                    f = d
                    break
            if f < depth and paths[i, f] < paths[prev, f]:
                return (False, empty, empty, empty, np.empty((0, k), np.int64), empty)
        first[i] = f
        for d in range(f + 1, depth + 1):
            level_sizes[d] += 1
        prev = i

    level_offsets = np.zeros(depth + 2, np.int64)
    for d in range(depth + 1):
        level_offsets[d + 1] = level_offsets[d] + level_sizes[d]
    n_nodes = level_offsets[depth + 1]

    # pass 2: nodes in level order and, within a level, in row (= path) order; every kept
    # row's counts go to the node of each of its prefixes
    parent = np.empty(n_nodes, np.int64)
    branch_value = np.empty(n_nodes, np.int64)
    node_counts = np.zeros((n_nodes, k), np.int64)
    parent[0] = -1
    branch_value[0] = -1
    cursor = level_offsets[:-1].copy()  # next free node of each level
    on_path = np.zeros(depth + 1, np.int64)  # the current row's node at each depth
    for i in range(n_rows):
        f = first[i]
        if f < 0:
            continue
        for d in range(f + 1, depth + 1):
            node = cursor[d]
            cursor[d] += 1
            parent[node] = on_path[d - 1]
            branch_value[node] = paths[i, d - 1]
            on_path[d] = node
        for d in range(depth + 1):
            node = on_path[d]
            for j in range(k):
                node_counts[node, j] += counts[i, j]

    # children are contiguous (a level is in parent order), so offsets are running sums
    child_offsets = np.empty(n_nodes + 1, np.int64)
    n_children = np.zeros(n_nodes, np.int64)
    for node in range(1, n_nodes):
        n_children[parent[node]] += 1
    child_offsets[0] = 1
    for node in range(n_nodes):
        child_offsets[node + 1] = child_offsets[node] + n_children[node]
    return (True, level_offsets, parent, branch_value, node_counts, child_offsets)


def _read_only(a: np.ndarray) -> np.ndarray:
    """``a`` (a fresh array nobody else holds) marked read-only, without a copy."""
    a.flags.writeable = False
    return a


@dataclass(frozen=True)
class TreeLevel:
    """One depth of a context tree, with parent indices local to the previous level."""

    depth: int
    parent: np.ndarray  # int64 (n,), index into the previous level's nodes; -1 at depth 0
    branch_value: np.ndarray  # int64 (n,), value of the variable branched on above; -1 at depth 0
    counts: np.ndarray  # int64 (n, K)


@dataclass(frozen=True, eq=False)
class ContextTree:
    """Counts of a child variable along every observed path of its conditioning variables.

    Build one with :meth:`from_leaf_counts` (or :func:`fastpath.counts.count_tree`); the
    constructor is not meant to be called directly.

    Attributes
    ----------
    n_values : int
        ``K``, the number of values of the child variable.
    branch_cardinalities : tuple of int
        Cardinality of the variable branched on at each depth: the class first, then the
        parents in branching order. ``len(branch_cardinalities)`` is the depth of the leaves.
    level_offsets : ndarray of int64, shape (depth + 2,)
    parent : ndarray of int64, shape (n_nodes,)
        Global index of the parent node, ``-1`` for the root.
    branch_value : ndarray of int64, shape (n_nodes,)
        Value of the branching variable on the edge from the parent, ``-1`` for the root.
    counts : ndarray of int64, shape (n_nodes, K)
    child_offsets : ndarray of int64, shape (n_nodes + 1,)
    lookup_offsets : ndarray of int64, shape (n_nodes,)
        Start of each internal node's slots in ``child_lookup``; ``-1`` for leaves.
    child_lookup : ndarray of int64
    child_name, conditioning_names
        Optional variable names, for display and export.
    """

    n_values: int
    branch_cardinalities: tuple[int, ...]
    level_offsets: np.ndarray
    parent: np.ndarray
    branch_value: np.ndarray
    counts: np.ndarray
    child_offsets: np.ndarray
    lookup_offsets: np.ndarray
    child_lookup: np.ndarray
    child_name: str | None = None
    conditioning_names: tuple[str, ...] | None = field(default=None)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_leaf_counts(
        cls,
        paths: np.ndarray,
        counts: np.ndarray,
        branch_cardinalities: Sequence[int],
        n_values: int | None = None,
        *,
        child_name: str | None = None,
        conditioning_names: Sequence[str] | None = None,
    ) -> ContextTree:
        """Build a tree from aggregated leaf counts.

        Parameters
        ----------
        paths : array of int, shape (L, depth)
            Conditioning values of each leaf, in branching order (class first). Rows may repeat
            (their counts are added) and may come in any order. Rows whose counts are all zero
            are dropped: the tree holds observed paths only.
        counts : array of int, shape (L, K)
            Child-value counts of each leaf.
        branch_cardinalities : sequence of int, length depth
        n_values : int, optional
            ``K``; taken from ``counts.shape[1]`` when omitted.
        """
        # C order: the kernel is compiled for (and cached with) one array layout
        paths = np.ascontiguousarray(paths, dtype=np.int64)
        counts = np.ascontiguousarray(counts, dtype=np.int64)
        cards = tuple(int(c) for c in branch_cardinalities)
        depth = len(cards)
        if paths.ndim != 2 or paths.shape[1] != depth:
            raise ValueError(f"paths must have shape (L, {depth}), got {paths.shape}")
        if counts.ndim != 2 or counts.shape[0] != paths.shape[0]:
            raise ValueError(f"counts must have shape ({paths.shape[0]}, K), got {counts.shape}")
        k = counts.shape[1] if n_values is None else int(n_values)
        if counts.shape[1] != k or k < 1:
            raise ValueError(f"counts has {counts.shape[1]} columns, expected n_values={k}")
        if (counts < 0).any():
            raise ValueError("counts must be non-negative")
        for d, c in enumerate(cards):
            col = paths[:, d]
            if col.size and (col.min() < 0 or col.max() >= c):
                raise ValueError(
                    f"path values at depth {d + 1} must lie in [0, {c}), "
                    f"got [{col.min()}, {col.max()}]"
                )
        if conditioning_names is not None and len(conditioning_names) != depth:
            raise ValueError("conditioning_names must name one variable per depth")

        return cls._from_valid_leaves(
            paths,
            counts,
            cards,
            k,
            child_name=child_name,
            conditioning_names=None if conditioning_names is None else tuple(conditioning_names),
        )

    @classmethod
    def _from_valid_leaves(
        cls,
        paths: np.ndarray,
        counts: np.ndarray,
        cards: tuple[int, ...],
        n_values: int,
        *,
        child_name: str | None = None,
        conditioning_names: tuple[str, ...] | None = None,
    ) -> ContextTree:
        """:meth:`from_leaf_counts` without its checks, for callers whose leaves are valid.

        Parameters
        ----------
        paths : ndarray of int64, shape (L, >= len(cards)), C order
            Only the first ``len(cards)`` columns are read (the top levels of a deeper tree's
            leaves need no copy). Read, never kept or changed.
        counts : ndarray of int64, shape (L, n_values), C order
            Non-negative. Read, never kept or changed.
        cards : tuple of int
            The branching cardinalities; path values lie in ``[0, cards[d])``.
        n_values : int
        child_name, conditioning_names
            As in :meth:`from_leaf_counts` (names as a tuple).

        Notes
        -----
        Rows sorted by path, as :class:`~fastpath.counts.CountAccumulator` stores them, are
        built in one pass; others are sorted first, so any order gives the same tree.
        """
        cards_arr = np.asarray(cards, dtype=np.int64)
        built = _tree_arrays(paths, counts, cards_arr)
        if not built[0]:
            depth = len(cards)
            # first column most significant; lexsort is stable, so the order is well defined
            order = np.lexsort(paths[:, :depth].T[::-1])
            built = _tree_arrays(paths[order], counts[order], cards_arr)
        _, level_offsets, parent, branch_value, node_counts, child_offsets, lookups, slots = built
        return cls(
            n_values=n_values,
            branch_cardinalities=cards,
            level_offsets=_read_only(level_offsets),
            parent=_read_only(parent),
            branch_value=_read_only(branch_value),
            counts=_read_only(node_counts),
            child_offsets=_read_only(child_offsets),
            lookup_offsets=_read_only(lookups),
            child_lookup=_read_only(slots),
            child_name=child_name,
            conditioning_names=conditioning_names,
        )

    # ------------------------------------------------------------------ shape
    @property
    def depth(self) -> int:
        """Depth of the leaves (number of conditioning variables, class included)."""
        return len(self.branch_cardinalities)

    @property
    def n_nodes(self) -> int:
        return int(self.level_offsets[-1])

    @property
    def n_rows(self) -> int:
        """Number of training rows counted in the tree (the root's total)."""
        return int(self.counts[0].sum())

    @property
    def node_depth(self) -> np.ndarray:
        """Depth of every node, shape (n_nodes,)."""
        sizes = np.diff(self.level_offsets)
        return np.repeat(np.arange(self.depth + 1), sizes)

    @property
    def nodes_per_level(self) -> tuple[int, ...]:
        return tuple(int(s) for s in np.diff(self.level_offsets))

    @property
    def leaves(self) -> slice:
        """Slice of the leaf nodes (all at the deepest level)."""
        return slice(int(self.level_offsets[-2]), int(self.level_offsets[-1]))

    def level(self, depth: int) -> TreeLevel:
        """Per-level view: parent indices local to the previous level."""
        if not 0 <= depth <= self.depth:
            raise ValueError(f"depth must be in [0, {self.depth}], got {depth}")
        lo, hi = int(self.level_offsets[depth]), int(self.level_offsets[depth + 1])
        parent = self.parent[lo:hi]
        if depth:
            parent = parent - self.level_offsets[depth - 1]
        return TreeLevel(depth, parent, self.branch_value[lo:hi], self.counts[lo:hi])

    def levels(self) -> Iterator[TreeLevel]:
        for d in range(self.depth + 1):
            yield self.level(d)

    def path(self, node: int) -> tuple[int, ...]:
        """Conditioning values on the path from the root to ``node``."""
        out = []
        while node > 0:
            out.append(int(self.branch_value[node]))
            node = int(self.parent[node])
        return tuple(reversed(out))

    def paths(self) -> np.ndarray:
        """Conditioning values of every node, shape (n_nodes, depth); -1 below the node's depth."""
        out = np.full((self.n_nodes, self.depth), -1, dtype=np.int64)
        for d in range(1, self.depth + 1):
            lo, hi = int(self.level_offsets[d]), int(self.level_offsets[d + 1])
            out[lo:hi, : d - 1] = out[self.parent[lo:hi], : d - 1]
            out[lo:hi, d - 1] = self.branch_value[lo:hi]
        return out

    # ------------------------------------------------------------------ queries
    def find(self, paths: np.ndarray) -> np.ndarray:
        """Deepest existing node along each path (back-off for unseen parent values).

        Parameters
        ----------
        paths : array of int, shape (m, depth) or (depth,)
            Conditioning values; a negative value (an unknown value) stops the descent there.

        Returns
        -------
        ndarray of int64, shape (m,)
        """
        paths = np.atleast_2d(np.asarray(paths, dtype=np.int64))
        if paths.shape[1] != self.depth:
            raise ValueError(f"paths must have {self.depth} columns, got {paths.shape[1]}")
        node = np.zeros(paths.shape[0], dtype=np.int64)
        active = np.ones(paths.shape[0], dtype=bool)
        for d in range(self.depth):
            v = paths[:, d]
            ok = active & (v >= 0) & (v < self.branch_cardinalities[d])
            nxt = np.full(paths.shape[0], -1, dtype=np.int64)
            nxt[ok] = self.child_lookup[self.lookup_offsets[node[ok]] + v[ok]]
            moved = ok & (nxt >= 0)
            node[moved] = nxt[moved]
            active = moved
        return node

    def __repr__(self) -> str:
        name = self.child_name or "X"
        cond = ", ".join(self.conditioning_names or [f"v{d}" for d in range(self.depth)])
        return (
            f"ContextTree(P({name} | {cond}), K={self.n_values}, "
            f"nodes per level={self.nodes_per_level}, rows={self.n_rows})"
        )


def tying_groups(tree: ContextTree, tying: str) -> np.ndarray:
    """Concentration group of every node under a tying strategy.

    The root's concentration (alpha_0) is fixed and never sampled, so the root gets ``-1``.
    Groups are numbered 0..G-1 in node order.

    ``none``: one concentration per node. ``same-parent``: siblings share one (one per internal
    node). ``level``: one per depth (the paper's default). ``single``: all non-root nodes share one.
    """
    n = tree.n_nodes
    groups = np.full(n, -1, dtype=np.int64)
    if n == 1:
        return groups
    if tying == "none":
        groups[1:] = np.arange(n - 1)
    elif tying == "same-parent":
        _, groups[1:] = np.unique(tree.parent[1:], return_inverse=True)
    elif tying == "level":
        groups[1:] = tree.node_depth[1:] - 1
    elif tying == "single":
        groups[1:] = 0
    else:
        raise ValueError(f"tying must be one of {TYING_STRATEGIES}, got {tying!r}")
    return groups
