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

Tying = Literal["none", "same-parent", "level", "single"]
TYING_STRATEGIES: tuple[str, ...] = ("none", "same-parent", "level", "single")


def _frozen(a: np.ndarray, dtype) -> np.ndarray:
    out = np.ascontiguousarray(a, dtype=dtype)
    if out is a:
        out = out.copy()
    out.flags.writeable = False
    return out


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
        paths = np.asarray(paths, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
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

        keep = counts.sum(axis=1) > 0
        paths, counts = paths[keep], counts[keep]

        # Sort leaves lexicographically by path (first column most significant) and merge
        # duplicates, so every prefix forms one contiguous run.
        if paths.shape[0]:
            order = np.lexsort(paths.T[::-1]) if depth else np.arange(paths.shape[0])
            paths, counts = paths[order], counts[order]
        n_leaf_rows = paths.shape[0]
        if depth and n_leaf_rows > 1:
            differs = paths[1:] != paths[:-1]
            # first column where consecutive rows differ; depth when identical
            first_diff = np.where(differs.any(axis=1), differs.argmax(axis=1), depth)
        else:
            first_diff = np.zeros(max(n_leaf_rows - 1, 0), dtype=np.int64)

        level_sizes = [1]
        parents = [np.array([-1], dtype=np.int64)]
        values = [np.array([-1], dtype=np.int64)]
        level_counts = [counts.sum(axis=0, keepdims=True)]
        prev_node_of_row = np.zeros(n_leaf_rows, dtype=np.int64)  # local index at previous level
        for d in range(1, depth + 1):
            # a new node of depth d starts at a row whose length-d prefix differs from the row above
            starts_new = np.empty(n_leaf_rows, dtype=bool)
            if n_leaf_rows:
                starts_new[0] = True
                starts_new[1:] = first_diff < d
            start_rows = np.flatnonzero(starts_new)
            node_of_row = np.cumsum(starts_new) - 1
            parents.append(prev_node_of_row[start_rows])
            values.append(paths[start_rows, d - 1] if n_leaf_rows else np.empty(0, np.int64))
            level_counts.append(
                np.add.reduceat(counts, start_rows, axis=0)
                if start_rows.size
                else np.empty((0, k), np.int64)
            )
            level_sizes.append(start_rows.size)
            prev_node_of_row = node_of_row

        level_offsets = np.concatenate([[0], np.cumsum(level_sizes)]).astype(np.int64)
        # parents were local to their level: shift to global indices
        parent = np.concatenate(
            [parents[0]] + [p + level_offsets[d - 1] for d, p in enumerate(parents) if d > 0]
        )
        branch_value = np.concatenate(values)
        all_counts = np.concatenate(level_counts, axis=0)
        n_nodes = int(level_offsets[-1])

        n_children = np.bincount(parent[1:], minlength=n_nodes) if n_nodes > 1 else np.zeros(
            n_nodes, np.int64
        )
        child_offsets = np.empty(n_nodes + 1, dtype=np.int64)
        child_offsets[0] = 1
        child_offsets[1:] = 1 + np.cumsum(n_children)

        node_depth = np.repeat(np.arange(depth + 1), level_sizes)
        internal = node_depth < depth
        slot_sizes = np.zeros(n_nodes, dtype=np.int64)
        if depth:
            slot_sizes[internal] = np.asarray(cards, dtype=np.int64)[node_depth[internal]]
        lookup_offsets = np.where(internal, np.cumsum(slot_sizes) - slot_sizes, -1)
        child_lookup = np.full(int(slot_sizes.sum()), -1, dtype=np.int64)
        if n_nodes > 1:
            nodes = np.arange(1, n_nodes)
            child_lookup[lookup_offsets[parent[nodes]] + branch_value[nodes]] = nodes

        return cls(
            n_values=k,
            branch_cardinalities=cards,
            level_offsets=_frozen(level_offsets, np.int64),
            parent=_frozen(parent, np.int64),
            branch_value=_frozen(branch_value, np.int64),
            counts=_frozen(all_counts, np.int64),
            child_offsets=_frozen(child_offsets, np.int64),
            lookup_offsets=_frozen(lookup_offsets, np.int64),
            child_lookup=_frozen(child_lookup, np.int64),
            child_name=child_name,
            conditioning_names=None if conditioning_names is None else tuple(conditioning_names),
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
