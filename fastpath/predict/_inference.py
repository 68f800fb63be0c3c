"""Probability tables -> class posteriors: the last arrow of the pipeline.

A fitted classifier is a set of context trees, each with a probability table (one row per node).
For prediction they are packed into flat arrays that one numba kernel walks: for every row and
every class, each attribute's tree is descended from the root along (class, parent values...) to
the deepest existing node (back-off for unseen paths, and a stop at an unknown value), and the
log-probability of the attribute's value there is added (paper, eq. for P(y | x) in section
2.1). An unknown attribute value (code ``-1``) contributes no factor: it is marginalised out.

One layout, :class:`PackedMembers`, holds the trees of any number of members end to end (a single
classifier's is a model of one member); :func:`pack_members` is its one packer, and
:func:`pack_model` packs one member.

A tree's descents are the same for every class below its first branch (the class), so two
forms of a tree read it once per row instead of once per class, copying the numbers the descents
reach (the sums are the same floats): a small tree is resolved in advance into a table over every
combination of its parents' values (:func:`_dense_tables`); a larger one has its class branches
merged into one tree over the parents' values whose nodes hold every class's node
(:func:`_merged_branches`), unless that would grow its memory more than :data:`MERGED_GROWTH`
times. The kernel walks the rows in blocks of :data:`ROW_BLOCK`, tree by tree within a block,
so that a tree stays in the cache while it serves a block's rows; each row's classes still get
the trees' terms in tree order.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..counts._context_tree import ContextTree
from ..counts._counting import TreeSpec
from ..utils import _exp, _sums
from ..utils._exp import exp_in_place
from ..utils._numba_cache import flush_stale_cache
from ..utils._sums import pairwise_sum
from ..utils._threads import numba_threads, threaded_kernel


@dataclass(frozen=True)
class _PackedTrees:
    """The attribute trees' flat arrays (struct of arrays) as :func:`pack_members` builds them:
    the children still as a lookup (``child_lookup``, not yet the links of
    :class:`PackedMembers`), the tables of every parent combination and merged branches
    ``None`` until they are added."""

    n_classes: int
    class_log_prior: np.ndarray  # (C,)
    child_col: np.ndarray  # (T,)
    cond_ptr: np.ndarray  # (T + 1,)
    cond_cols: np.ndarray  # conditioning columns, -1 = class
    node_offset: np.ndarray  # (T + 1,) first node of each tree in the flat node arrays
    lookup_offsets: np.ndarray  # per node, into the tree's block of child_lookup; -1 at leaves
    lookup_base: np.ndarray  # (T,) start of each tree's block in child_lookup
    child_lookup: np.ndarray
    n_values: np.ndarray  # (T,)
    logp_offset: np.ndarray  # (T,) start of each tree's (n_nodes x K) block in log_prob
    log_prob: np.ndarray  # flat log-probabilities
    # a small tree's leaves resolved in advance (:func:`_dense_tables`): for every combination
    # of its parents' values, the log-probabilities its descent reads, class innermost; -1
    # where a tree is read by descending it
    dense_offset: np.ndarray | None = None  # (T,) start of each tree's block in dense_log_prob
    cond_cards: np.ndarray | None = None  # cardinality of each entry of cond_cols
    dense_log_prob: np.ndarray | None = None
    # a larger tree's class branches merged (:func:`_merged_branches`): its nodes' slots into
    # merged_child_lookup (-1 at leaves), their children (numbered within the tree, -1 where no
    # class has the path) and, per node and class, the row of log_prob (node x K) the class's
    # descent reaches, relative to the tree's block; merged_node_offset -1 where not merged
    merged_node_offset: np.ndarray | None = None  # (T,) first merged node of each tree
    merged_lookup_base: np.ndarray | None = None  # (T,) start of each tree's block of slots
    merged_lookup_offsets: np.ndarray | None = None
    merged_child_lookup: np.ndarray | None = None
    merged_rows: np.ndarray | None = None  # (merged nodes x C)


def _pack_trees(class_prior: np.ndarray, specs: Sequence[TreeSpec],
                trees: Sequence[ContextTree], tables: Sequence[np.ndarray]) -> _PackedTrees:
    """The flat arrays of attribute trees (child column >= 0) and their probability tables,
    with the tables of every parent combination and the merged branches of the trees that
    get them."""
    child_col, cond_ptr, cond_cols = [], [0], []
    node_offset, lookup_offsets, lookup_base, child_lookup = [0], [], [], []
    n_values, logp_offset, log_prob = [], [], []
    lookup_total = logp_total = 0
    for spec, tree, table in zip(specs, trees, tables, strict=True):
        child_col.append(spec.child)
        cond_cols.extend(spec.conditioning)
        cond_ptr.append(len(cond_cols))
        node_offset.append(node_offset[-1] + tree.n_nodes)
        lookup_offsets.append(tree.lookup_offsets)
        lookup_base.append(lookup_total)
        child_lookup.append(tree.child_lookup)
        lookup_total += tree.child_lookup.size
        n_values.append(tree.n_values)
        logp_offset.append(logp_total)
        with np.errstate(divide="ignore"):
            log_prob.append(np.log(np.asarray(table, dtype=np.float64)).ravel())
        logp_total += table.size

    def cat(parts, dtype):
        return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)

    with np.errstate(divide="ignore"):
        prior = np.log(np.asarray(class_prior, dtype=np.float64))
    packed = _PackedTrees(
        n_classes=int(prior.size),
        class_log_prior=prior,
        child_col=np.asarray(child_col, np.int64),
        cond_ptr=np.asarray(cond_ptr, np.int64),
        cond_cols=np.asarray(cond_cols, np.int64),
        node_offset=np.asarray(node_offset, np.int64),
        lookup_offsets=cat(lookup_offsets, np.int64),
        lookup_base=np.asarray(lookup_base, np.int64),
        child_lookup=cat(child_lookup, np.int64),
        n_values=np.asarray(n_values, np.int64),
        logp_offset=np.asarray(logp_offset, np.int64),
        log_prob=cat(log_prob, np.float64),
    )
    return _with_merged_branches(_with_dense_tables(packed, specs), specs)


#: a tree is resolved in advance when its table of every parent combination holds at most this
#: many entries, or at most :data:`DENSE_GROWTH` times its own table's: then a row reads its
#: log-probabilities for every class in one place instead of descending once per class
DENSE_MIN_ENTRIES = 4096
DENSE_GROWTH = 4


def _class_first(spec: TreeSpec) -> bool:
    """Whether a tree's first branch is the class and no other is (every classifier's
    attribute trees): what both layouts that read a tree once for every class need."""
    cond = spec.conditioning
    return bool(cond) and cond[0] == -1 and -1 not in cond[1:]


def _with_dense_tables(packed: _PackedTrees, specs: Sequence[TreeSpec]) -> _PackedTrees:
    """``packed`` with the tables of :func:`_dense_tables` for the trees small enough (a tree
    whose first branch is the class, as every classifier's attribute trees are)."""
    n_trees = packed.child_col.size
    dense_offset = np.full(n_trees, -1, np.int64)
    cond_cards = np.asarray([c for spec in specs for c in spec.cardinalities], np.int64)
    total = 0
    for a, spec in enumerate(specs):
        if not _class_first(spec):
            continue
        entries = math.prod(spec.cardinalities) * spec.n_values
        own = (packed.node_offset[a + 1] - packed.node_offset[a]) * spec.n_values
        if entries <= max(DENSE_MIN_ENTRIES, DENSE_GROWTH * own):
            dense_offset[a] = total
            total += entries
    if total == 0:
        return packed
    dense = np.empty(total, np.float64)
    _dense_tables(packed.cond_ptr, packed.cond_cols, cond_cards, packed.node_offset,
                  packed.lookup_offsets, packed.lookup_base, packed.child_lookup,
                  packed.n_values, packed.logp_offset, packed.log_prob, dense_offset, dense)
    return dataclasses.replace(packed, dense_offset=dense_offset, cond_cards=cond_cards,
                               dense_log_prob=dense)


@njit(cache=True, nogil=True)
def _dense_tables(cond_ptr, cond_cols, cond_cards, node_offset, lookup_offsets, lookup_base,
                  child_lookup, n_values, logp_offset, log_prob, dense_offset, out):
    """For every tree with ``dense_offset[a] >= 0``: at ``((idx * K + x) * C + c)`` of its
    block, the log-probability of value ``x`` at the node :func:`_member_block`'s descent
    reaches for class ``c`` and parent values numbered ``idx`` (mixed radix, first parent
    most significant) -- the same number it reads there, copied."""
    for a in range(dense_offset.shape[0]):
        if dense_offset[a] < 0:
            continue
        lo, hi = cond_ptr[a], cond_ptr[a + 1]
        n_classes = cond_cards[lo]
        kv = n_values[a]
        n_combos = 1
        for j in range(lo + 1, hi):
            n_combos *= cond_cards[j]
        values = np.zeros(hi - lo, np.int64)
        for idx in range(n_combos):
            rest = idx
            for j in range(hi - 1, lo, -1):  # the last parent varies fastest
                values[j - lo] = rest % cond_cards[j]
                rest //= cond_cards[j]
            for c in range(n_classes):
                values[0] = c
                node = 0
                for j in range(lo, hi):
                    slots = lookup_offsets[node_offset[a] + node]
                    if slots < 0:
                        break
                    child = child_lookup[lookup_base[a] + slots + values[j - lo]]
                    if child < 0:
                        break
                    node = child
                base = dense_offset[a] + idx * kv * n_classes
                for x in range(kv):
                    out[base + x * n_classes + c] = log_prob[logp_offset[a] + node * kv + x]


#: a tree read by descending it has its class branches merged when the merged nodes' rows (one
#: per class) number at most this many times its table's entries (most trees: the classes share
#: most of their paths; where they share none, as on KDD Cup's rare classes, the merged tree
#: holds a row per class for every path, and a descent per class is what it saves: 16 merges
#: every tree of the 41 datasets, the memory bound docs/performance.md weighs)
MERGED_GROWTH = 16


def _with_merged_branches(packed: _PackedTrees, specs: Sequence[TreeSpec]) -> _PackedTrees:
    """``packed`` with the merged class branches of :func:`_merged_branches` for every tree
    that is descended (not resolved in advance), whose first branch is the class and that has
    a parent besides it, when they grow its memory at most :data:`MERGED_GROWTH` times."""
    n_trees = packed.child_col.size
    n_classes = packed.n_classes
    node_offset = np.full(n_trees, -1, np.int64)
    lookup_base = np.zeros(n_trees, np.int64)
    lookups, children, rows = [], [], []
    n_nodes = n_slots = 0
    for a, spec in enumerate(specs):
        if (n_classes < 2 or len(spec.conditioning) < 2 or not _class_first(spec)
                or (packed.dense_offset is not None and packed.dense_offset[a] >= 0)):
            continue
        lo, hi = packed.node_offset[a], packed.node_offset[a + 1]
        tree_lookup = packed.lookup_offsets[lo:hi]
        slots_end = (packed.lookup_base[a + 1] if a + 1 < n_trees
                     else packed.child_lookup.size)
        tree_children = packed.child_lookup[packed.lookup_base[a]:slots_end]
        lookup, child, row = _merged_branches(
            np.asarray(spec.cardinalities, np.int64), tree_lookup, tree_children,
            int(spec.n_values))
        if row.size > MERGED_GROWTH * (hi - lo) * spec.n_values:
            continue
        node_offset[a] = n_nodes
        lookup_base[a] = n_slots
        lookups.append(lookup)
        children.append(child)
        rows.append(row)
        n_nodes += lookup.size
        n_slots += child.size
    if n_nodes == 0:
        return packed
    return dataclasses.replace(
        packed, merged_node_offset=node_offset, merged_lookup_base=lookup_base,
        merged_lookup_offsets=np.concatenate(lookups), merged_child_lookup=np.concatenate(children),
        merged_rows=np.concatenate(rows))


@njit(cache=True, nogil=True)
def _merged_branches(cards, tree_lookup, tree_children, n_values):
    """One tree's class branches merged into a tree over its parents' values.

    ``cards``: the cardinalities of the tree's conditioning (the class first); ``tree_lookup``
    and ``tree_children``: its nodes' slots and its block of child lookups (numbered within the
    tree). Merged node ``t`` stands for a path of parent values ``v_1 .. v_d``; for class ``c``
    it holds the node the descent ``(c, v_1 .. v_d)`` of :func:`_members_kernel` stops at (the
    first missing child or leaf stops it, as there), and it has a child for value ``v`` where
    some class's descent goes on. Returns the merged nodes' slots (-1: a leaf), their children
    (-1: no class has the path) and ``rows[t * C + c]`` = that node's first entry
    (``node * n_values``). Every merged node but the root is some class's node on its path,
    and every merged block of slots one of such a node's, so the tree's own sizes bound the
    merged ones.
    """
    n_classes = cards[0]
    max_depth = cards.shape[0] - 1
    capacity = tree_lookup.shape[0]
    node = np.empty((capacity, n_classes), np.int64)
    going = np.empty((capacity, n_classes), np.bool_)
    depth = np.empty(capacity, np.int64)
    lookup = np.full(capacity, -1, np.int64)
    child = np.full(tree_children.shape[0], -1, np.int64)
    root_slots = tree_lookup[0]
    for c in range(n_classes):
        reached = tree_children[root_slots + c] if root_slots >= 0 else -1
        node[0, c] = reached if reached >= 0 else 0
        going[0, c] = reached >= 0
    depth[0] = 0
    n_nodes = 1
    n_slots = 0
    t = 0
    while t < n_nodes:
        d = depth[t]
        inner = False
        if d < max_depth:
            for c in range(n_classes):
                if going[t, c] and tree_lookup[node[t, c]] >= 0:
                    inner = True
                    break
        if inner:
            card = cards[d + 1]
            lookup[t] = n_slots
            base = n_slots
            n_slots += card
            for v in range(card):
                moves = False
                for c in range(n_classes):
                    if going[t, c]:
                        slots = tree_lookup[node[t, c]]
                        if slots >= 0 and tree_children[slots + v] >= 0:
                            moves = True
                            break
                if not moves:
                    continue
                for c in range(n_classes):
                    slots = tree_lookup[node[t, c]] if going[t, c] else -1
                    reached = tree_children[slots + v] if slots >= 0 else -1
                    node[n_nodes, c] = reached if reached >= 0 else node[t, c]
                    going[n_nodes, c] = reached >= 0
                depth[n_nodes] = d + 1
                child[base + v] = n_nodes
                n_nodes += 1
        t += 1
    rows = np.empty(n_nodes * n_classes, np.int64)
    for t in range(n_nodes):
        for c in range(n_classes):
            rows[t * n_classes + c] = node[t, c] * n_values
    return lookup[:n_nodes].copy(), child[:n_slots].copy(), rows


def joint_log_likelihood(model: PackedMembers, codes: np.ndarray) -> np.ndarray:
    """log P(y, x) for every row and class, shape (n_rows, n_classes), of a packed model of
    one member (:func:`pack_model`) and its codes."""
    if model.tree_ptr.size != 2:
        raise ValueError(f"model: expected a packed model of one member, got "
                         f"{model.tree_ptr.size - 1} (use packed_joint_log_likelihood)")
    codes = np.asarray(codes)
    columns = np.arange(codes.shape[1], dtype=np.int64)[None, :]
    return packed_joint_log_likelihood(model, codes, columns)[0]


class PackedMembers(NamedTuple):
    """The packed trees of a model's members end to end, for one kernel call over all of them
    (the one prediction layout: a single classifier's is a model of one member).

    Member ``e``'s trees are ``tree_ptr[e]:tree_ptr[e + 1]``; every offset is into the
    concatenated arrays (``cond_cols`` and ``child_col`` stay the member's attribute numbers;
    ``dense_offset`` and ``merged_node_offset`` -1 where a tree is not read that way).
    ``class_log_prior`` has one row per member.

    The children are held as links (:func:`_child_links`): slot ``s`` of a tree's block is the
    pair ``child_links[2 s]`` (the child, numbered within the tree; -1: none) and
    ``child_links[2 s + 1]`` (the child's own slots, ``lookup_offsets`` of it; -1: a leaf), and
    likewise ``merged_child_links``. A descent's next step then waits for one memory read, the
    slot's pair, where a child and then its slots were two reads one after the other; as int32
    pairs they take the bytes the int64 children took.
    """

    tree_ptr: np.ndarray
    class_log_prior: np.ndarray
    child_col: np.ndarray
    cond_ptr: np.ndarray
    cond_cols: np.ndarray
    node_offset: np.ndarray
    lookup_offsets: np.ndarray
    lookup_base: np.ndarray
    child_links: np.ndarray
    n_values: np.ndarray
    logp_offset: np.ndarray
    log_prob: np.ndarray
    dense_offset: np.ndarray
    cond_cards: np.ndarray
    dense_log_prob: np.ndarray
    merged_node_offset: np.ndarray
    merged_lookup_base: np.ndarray
    merged_lookup_offsets: np.ndarray
    merged_child_links: np.ndarray
    merged_rows: np.ndarray


def pack_model(class_prior: np.ndarray, specs: Sequence[TreeSpec],
               trees: Sequence[ContextTree], tables: Sequence[np.ndarray]) -> PackedMembers:
    """Pack one classifier's attribute trees (child column >= 0) and their probability tables
    for prediction: :func:`pack_members` of one member."""
    return pack_members([class_prior], [specs], [trees], [tables])


def pack_members(class_priors: Sequence[np.ndarray], specs: Sequence[Sequence[TreeSpec]],
                 trees: Sequence[Sequence[ContextTree]],
                 tables: Sequence[Sequence[np.ndarray]]) -> PackedMembers:
    """:class:`PackedMembers` of every member's class prior and attribute trees (``specs[e]``,
    ``trees[e]``, ``tables[e]``): the members' trees packed as one model's, each array written
    once, then split by member (``tree_ptr``). Each tree is packed as it would be alone (its
    table of every parent combination or merged branches are its own), so member ``e``'s part
    is the arrays of :func:`pack_model` of that member, shifted into the concatenation."""
    whole = _pack_trees(class_priors[0], [s for part in specs for s in part],
                        [t for part in trees for t in part],
                        [t for part in tables for t in part])
    tree_ptr = np.zeros(len(specs) + 1, np.int64)
    tree_ptr[1:] = np.cumsum([len(part) for part in specs])
    n_trees = whole.child_col.size
    with np.errstate(divide="ignore"):
        priors = np.stack([np.log(np.asarray(p, dtype=np.float64)) for p in class_priors])

    def or_none(values: np.ndarray | None, none: np.ndarray) -> np.ndarray:
        return none if values is None else values

    empty_int, empty_float = np.empty(0, np.int64), np.empty(0, np.float64)
    return _linked(
        tree_ptr=tree_ptr, class_log_prior=priors, child_col=whole.child_col,
        cond_ptr=whole.cond_ptr, cond_cols=whole.cond_cols, node_offset=whole.node_offset,
        lookup_offsets=whole.lookup_offsets, lookup_base=whole.lookup_base,
        child_lookup=whole.child_lookup, n_values=whole.n_values,
        logp_offset=whole.logp_offset, log_prob=whole.log_prob,
        dense_offset=or_none(whole.dense_offset, np.full(n_trees, -1, np.int64)),
        cond_cards=or_none(whole.cond_cards, np.zeros(whole.cond_cols.size, np.int64)),
        dense_log_prob=or_none(whole.dense_log_prob, empty_float),
        merged_node_offset=or_none(whole.merged_node_offset, np.full(n_trees, -1, np.int64)),
        merged_lookup_base=or_none(whole.merged_lookup_base, np.zeros(n_trees, np.int64)),
        merged_lookup_offsets=or_none(whole.merged_lookup_offsets, empty_int),
        merged_child_lookup=or_none(whole.merged_child_lookup, empty_int),
        merged_rows=or_none(whole.merged_rows, empty_int),
    )


def _linked(*, child_lookup: np.ndarray, merged_child_lookup: np.ndarray,
            **fields: np.ndarray) -> PackedMembers:
    """:class:`PackedMembers` of the packed arrays, the children (``child_lookup``,
    ``merged_child_lookup``) turned into links (:func:`_child_links`)."""
    n_trees = fields["child_col"].size
    starts = fields["lookup_base"]
    links = _child_links(child_lookup, fields["lookup_offsets"], starts,
                         fields["node_offset"][:n_trees])
    merged = np.flatnonzero(fields["merged_node_offset"] >= 0)
    merged = merged[np.argsort(fields["merged_lookup_base"][merged], kind="stable")]
    merged_links = _child_links(merged_child_lookup, fields["merged_lookup_offsets"],
                                fields["merged_lookup_base"][merged],
                                fields["merged_node_offset"][merged])
    return PackedMembers(child_links=links, merged_child_links=merged_links, **fields)


def _child_links(children: np.ndarray, lookup_offsets: np.ndarray, slot_starts: np.ndarray,
                 node_starts: np.ndarray) -> np.ndarray:
    """The int32 links (child, child's slots) of every slot of ``children``, whose trees'
    blocks of slots start at ``slot_starts`` (increasing, the last running to the end) and
    whose children are numbered from ``node_starts`` in ``lookup_offsets``."""
    if children.size and (children.max() >= 2**31 or lookup_offsets.max() >= 2**31):
        raise ValueError("a context tree of 2^31 nodes or slots or more cannot be packed for "
                         "prediction")
    links = np.empty(2 * children.size, np.int32)
    _fill_links(children, lookup_offsets, np.asarray(slot_starts, np.int64),
                np.asarray(node_starts, np.int64), links)
    return links


@njit(cache=True, nogil=True)
def _fill_links(children, lookup_offsets, slot_starts, node_starts, links):
    n = children.shape[0]
    for a in range(slot_starts.shape[0]):
        end = slot_starts[a + 1] if a + 1 < slot_starts.shape[0] else n
        for s in range(slot_starts[a], end):
            child = children[s]
            links[2 * s] = child
            links[2 * s + 1] = lookup_offsets[node_starts[a] + child] if child >= 0 else -1


#: rows a kernel reads every tree for before it moves on to the next rows: a block's codes
#: and the tree at hand stay in the caches
ROW_BLOCK = 256


@njit(cache=True, nogil=True)
def _member_block(codes_t, columns, pm, e, first, last, out, out_first):
    """Member ``e``'s log P(y, x) of rows ``first:last`` into ``out[e]`` from its row
    ``out_first`` on: the class prior, then
    each tree's log-probability of the row's value (none for an unknown value) tree by tree,
    read from its table of every parent combination, its merged branches or a descent per
    class -- the same number each way.

    ``codes_t`` holds the codes column by column (shared codes x rows), so that a tree reads
    each of its columns over the block as one contiguous run (member ``e``'s attribute ``j`` is
    row ``columns[e, j]``): a table's index is built for the whole block, a parent at a time,
    in a loop the compiler vectorises, and a tree without attribute parents (the commonest:
    most members select k* = 0 or 1) adds its entries without an index at all. The block's
    sums are kept in a small matrix (block rows x classes) and written to ``out`` once.

    A tree is descended a level at a time for every row of the block, not a row at a time:
    each row's next node depends on its last, but the rows' steps do not depend on each other,
    so the processor has many of them in flight instead of waiting for one memory read after
    another. A tree with merged class branches is descended once for all classes; a tree
    without a table, and the rows a table cannot serve (an unknown parent value), once per
    class, after the tree's other rows. The class loops index with unsigned integers: with a
    signed index numba's wrap-around of negative indices made the compiler gather the
    contiguous entries one by one. Every row still gets the trees' terms in tree order, so the
    sums are the same floats. (The two level-by-level descents, merged and per class, are
    written out alike on purpose: one numba function for a level's steps, called by both, made
    predictions slower; docs/performance.md, "Prediction at real size".)"""
    n_classes = pm.class_log_prior.shape[1]
    n = last - first
    mine = columns[e]
    acc = np.empty((n, n_classes))
    index = np.empty(n, np.int64)
    descended = np.empty(n, np.int64)
    node_of = np.empty(n, np.int64)
    slots_of = np.empty(n, np.int64)
    cond_cols = pm.cond_cols
    cond_cards = pm.cond_cards
    dense_log_prob = pm.dense_log_prob
    log_prob = pm.log_prob
    links = pm.child_links
    merged_links = pm.merged_child_links
    for i in range(n):
        for c in range(n_classes):
            acc[i, c] = pm.class_log_prior[e, c]
    for a in range(pm.tree_ptr[e], pm.tree_ptr[e + 1]):
        kv = pm.n_values[a]
        lo, hi = pm.cond_ptr[a], pm.cond_ptr[a + 1]
        dense = pm.dense_offset[a]
        xs = codes_t[mine[pm.child_col[a]], first:last]
        if dense >= 0 and hi - lo == 1:
            # no attribute parent: the table of the value given the class
            for i in range(n):
                x = xs[i]
                if x >= 0:  # an unknown value's factor is marginalised out
                    base = np.uint64(dense + x * n_classes)
                    for c in range(n_classes):
                        acc[i, c] += dense_log_prob[base + np.uint64(c)]
            continue
        if dense < 0 and pm.merged_node_offset[a] >= 0:
            # merged class branches (never a tree with a table): one descent per row serves
            # every class; node_of: the merged node reached, slots_of: its children's slots
            # (-1 once the descent has stopped)
            merged, merged_slots = pm.merged_node_offset[a], pm.merged_lookup_base[a]
            root_slots = pm.merged_lookup_offsets[merged]
            for i in range(n):
                node_of[i] = 0
                slots_of[i] = root_slots
            for j in range(lo + 1, hi):
                vs = codes_t[mine[cond_cols[j]], first:last]
                for i in range(n):
                    slots = slots_of[i]
                    v = vs[i]
                    # an unknown parent value, a leaf, or a path no class has: every class
                    # backs off to the node reached
                    if slots >= 0 and v >= 0:
                        link = np.uint64(2 * (merged_slots + slots + v))
                        child = merged_links[link]
                        if child >= 0:
                            node_of[i] = child
                            slots_of[i] = merged_links[link + np.uint64(1)]
                        else:
                            slots_of[i] = -1
                    else:
                        slots_of[i] = -1
            logp = pm.logp_offset[a]
            for i in range(n):
                x = xs[i]
                if x < 0:
                    continue
                base = np.uint64((merged + node_of[i]) * n_classes)
                for c in range(n_classes):
                    acc[i, c] += log_prob[logp + pm.merged_rows[base + np.uint64(c)] + x]
            continue
        # the rows descended once per class: a tree without a table, or the rows whose
        # parent value its table does not hold (unknown)
        n_descended = 0
        if dense >= 0:
            # the table's row of every row of the block, -1 where a parent value is unknown
            for i in range(n):
                index[i] = 0
            for j in range(lo + 1, hi):
                vs = codes_t[mine[cond_cols[j]], first:last]
                card = cond_cards[j]
                for i in range(n):
                    v = vs[i]
                    w = index[i] * card + v
                    index[i] = w if (v >= 0 and index[i] >= 0) else -1
            for i in range(n):
                x = xs[i]
                if x < 0:
                    continue
                idx = index[i]
                if idx >= 0:
                    base = np.uint64(dense + (idx * kv + x) * n_classes)
                    for c in range(n_classes):
                        acc[i, c] += dense_log_prob[base + np.uint64(c)]
                else:  # an unknown parent value backs off: descend instead
                    descended[n_descended] = i
                    n_descended += 1
        else:
            for i in range(n):
                if xs[i] >= 0:
                    descended[n_descended] = i
                    n_descended += 1
        if n_descended == 0:
            continue
        nodes, slots_base, logp = pm.node_offset[a], pm.lookup_base[a], pm.logp_offset[a]
        root_slots = pm.lookup_offsets[nodes]
        for c in range(n_classes):
            for d in range(n_descended):
                node_of[d] = 0
                slots_of[d] = root_slots
            for j in range(lo, hi):
                col = cond_cols[j]
                row = mine[col] if col >= 0 else 0
                for d in range(n_descended):
                    slots = slots_of[d]
                    v = c if col < 0 else codes_t[row, first + descended[d]]
                    # an unknown parent value, a leaf or a path never observed: back off
                    if slots >= 0 and v >= 0:
                        link = np.uint64(2 * (slots_base + slots + v))
                        child = links[link]
                        if child >= 0:
                            node_of[d] = child
                            slots_of[d] = links[link + np.uint64(1)]
                        else:
                            slots_of[d] = -1
                    else:
                        slots_of[d] = -1
            for d in range(n_descended):
                i = descended[d]
                acc[i, c] += log_prob[logp + node_of[d] * kv + xs[i]]
    for i in range(n):
        for c in range(n_classes):
            out[e, out_first + i, c] = acc[i, c]


@threaded_kernel
def _members_kernel(codes_t, columns, pm, out):
    """Every member's log P(y, x) in one call: member by member, its rows in blocks of
    :data:`ROW_BLOCK` (:func:`_member_block`), the blocks in parallel. ``codes_t``: the shared
    codes column by column (shared codes x rows)."""
    n_rows = codes_t.shape[1]
    n_blocks = (n_rows + ROW_BLOCK - 1) // ROW_BLOCK
    for e in range(columns.shape[0]):
        for b in prange(n_blocks):
            first = b * ROW_BLOCK
            _member_block(codes_t, columns, pm, e, first, min(n_rows, first + ROW_BLOCK), out,
                          first)


def packed_joint_log_likelihood(packed: PackedMembers, codes: np.ndarray, columns: np.ndarray
                                ) -> np.ndarray:
    """Every member's log P(y, x) for every row and class, shape (n_members, n_rows,
    n_classes), from the shared codes and the members' columns in them (member ``e``'s
    attribute ``j`` is ``codes[:, columns[e, j]]``, :func:`fastpath.encode._encoder.
    code_members`), in one kernel call over the packed members. The kernel reads the codes
    column by column, as 32-bit integers: codes stored so (int32 in Fortran order, as
    :func:`~fastpath.encode._encoder.code_members` returns them) are read in place, others
    copied once."""
    n_members = packed.tree_ptr.size - 1
    out = np.empty((n_members, codes.shape[0], packed.class_log_prior.shape[1]))
    if codes.shape[0]:
        _members_kernel(np.ascontiguousarray(codes.T, dtype=np.int32),
                        np.ascontiguousarray(columns, dtype=np.int64), packed, out)
    return out


def posterior_from_joint(joint: np.ndarray) -> np.ndarray:
    """Normalise joint log-likelihoods into P(y | x) (log-sum-exp, row by row)."""
    joint = np.ascontiguousarray(joint, dtype=np.float64)
    p = np.empty(joint.shape)
    _shifted_by_row_max(joint, p)
    with np.errstate(invalid="ignore"):
        np.exp(p, out=p)  # numpy's exp, as before (the kernels' would round differently)
    _normalised_rows(p)
    return p


@njit(cache=True, nogil=True)
def _shifted_by_row_max(joint, out):
    """``joint`` minus each row's largest value (0 where that is not finite: a row where
    every class has probability zero carries no information, and comes out uniform), as
    ``np.maximum`` column by column finds it (a NaN wins)."""
    rows, K = joint.shape
    for r in range(rows):
        top = joint[r, 0]
        for c in range(1, K):
            x = joint[r, c]
            if np.isnan(top) or np.isnan(x):
                top = np.nan
            elif x > top:
                top = x
        if not np.isfinite(top):
            top = 0.0
        for c in range(K):
            out[r, c] = joint[r, c] - top


@njit(cache=True, nogil=True)
def _normalised_rows(p):
    """Each row of ``p`` divided by its sum in numpy's order (``p.sum(axis=1)``); a row whose
    sum is not positive and finite becomes uniform."""
    rows, K = p.shape
    for r in range(rows):
        if K < 8:  # numpy's order below 8 values: one by one from -0.0
            total = -0.0
            for c in range(K):
                total += p[r, c]
        else:
            total = pairwise_sum(p[r])
        if not (total > 0) or not np.isfinite(total):
            for c in range(K):
                p[r, c] = 1.0 / K
        else:
            for c in range(K):
                p[r, c] = p[r, c] / total


def members_posterior_mean(joint: np.ndarray) -> np.ndarray:
    """The mean of the members' posteriors from their joint log-likelihoods (members, rows,
    classes): each member's row normalised as :func:`posterior_from_joint` does it, the
    members' rows added in their order and divided by their number, as the mean always
    added them -- in one compiled pass over blocks of rows, without the (members x rows x
    classes) posteriors in memory.

    The exponentials are :func:`fastpath.utils._exp.exp_in_place`'s (vectorised; within one
    unit in the last place, as the C library's), not numpy's: a member's posterior may differ
    from :func:`posterior_from_joint`'s in the last bits. Each row's result does not depend on
    the blocks or the threads."""
    joint = np.ascontiguousarray(joint, dtype=np.float64)
    out = np.empty(joint.shape[1:])
    if joint.shape[1]:
        _members_posterior_mean(joint, out)
    return out


#: rows of a block of :func:`_members_posterior_mean`: a member's shifted values of a block
#: (rows x classes) are exponentiated by one vectorised call
POSTERIOR_BLOCK_ROWS = 128


@njit(cache=True, nogil=True)
def _posterior_mean_rows(joint, j0, out, r0, r1, shifted, bits, p):
    """Rows ``r0:r1`` of ``out`` (rows, classes): the mean of the members' posteriors of
    ``joint``'s rows ``j0:j0 + r1 - r0`` (members, rows, classes). Per member, each row is
    shifted by its largest value, the rows' values exponentiated by one vectorised call, then
    each row divided by its sum and added to the members' sum. ``shifted`` and ``bits``
    (at least ``(r1 - r0) x classes``) and ``p`` (classes) are scratch."""
    n_members = joint.shape[0]
    n_classes = joint.shape[2]
    width = (r1 - r0) * n_classes
    uniform = 1.0 / n_classes
    for r in range(r0, r1):
        for c in range(n_classes):
            out[r, c] = 0.0  # 0 + p is p: the first member's rows as they are
    for e in range(n_members):
        i = 0
        for r in range(r0, r1):
            jr = j0 + r - r0
            top = joint[e, jr, 0]
            nan = top != top
            for c in range(1, n_classes):
                x = joint[e, jr, c]
                nan |= x != x
                if x > top:
                    top = x
            if nan:  # np.maximum's: a NaN wins, wherever it is
                top = np.nan
            if not np.isfinite(top):
                top = 0.0  # a row without information comes out uniform
            for c in range(n_classes):
                shifted[i + c] = joint[e, jr, c] - top
            i += n_classes
        exp_in_place(shifted, width, bits)
        i = 0
        for r in range(r0, r1):
            if n_classes < 8:  # numpy's order below 8 values: one by one from -0.0
                total = -0.0
                for c in range(n_classes):
                    total += shifted[i + c]
            else:
                for c in range(n_classes):
                    p[c] = shifted[i + c]
                total = pairwise_sum(p)
            if not (total > 0) or not np.isfinite(total):
                for c in range(n_classes):
                    out[r, c] += uniform
            else:
                for c in range(n_classes):
                    out[r, c] += shifted[i + c] / total
            i += n_classes
    for r in range(r0, r1):
        for c in range(n_classes):
            out[r, c] /= n_members


@threaded_kernel(nogil=True)
def _members_posterior_mean(joint, out):
    """:func:`members_posterior_mean` into ``out`` (rows, classes), blocks of
    :data:`POSTERIOR_BLOCK_ROWS` rows in parallel (:func:`_posterior_mean_rows`)."""
    n_rows, n_classes = out.shape
    n_blocks = (n_rows + POSTERIOR_BLOCK_ROWS - 1) // POSTERIOR_BLOCK_ROWS
    for b in prange(n_blocks):
        r0 = b * POSTERIOR_BLOCK_ROWS
        r1 = min(r0 + POSTERIOR_BLOCK_ROWS, n_rows)
        shifted = np.empty(POSTERIOR_BLOCK_ROWS * n_classes)
        bits = np.empty(POSTERIOR_BLOCK_ROWS * n_classes, dtype=np.int64)
        p = np.empty(n_classes)
        _posterior_mean_rows(joint, r0, out, r0, r1, shifted, bits, p)


#: the most bytes of joint log-likelihoods (members x rows x classes) one block of
#: :func:`members_proba_of_codes` holds: a block's rows are read member by member, so each
#: member's tables serve many rows from the caches before the next member's are read
FUSED_BLOCK_BYTES = 32 << 20


def fused_block_rows(n_rows: int, n_members: int, n_classes: int, n_threads: int) -> int:
    """Rows of a block of :func:`members_proba_of_codes`: as many as
    :data:`FUSED_BLOCK_BYTES` allow, a multiple of :data:`ROW_BLOCK`, and no more than a
    thread's share of the rows (each thread takes whole blocks)."""
    most = FUSED_BLOCK_BYTES // (8 * n_members * n_classes) // ROW_BLOCK * ROW_BLOCK
    share = -(-n_rows // max(1, n_threads))
    return max(ROW_BLOCK, min(most, -(-share // ROW_BLOCK) * ROW_BLOCK))


def members_proba_of_codes(packed: PackedMembers, codes: np.ndarray, columns: np.ndarray,
                           class_shift: np.ndarray | None = None) -> np.ndarray:
    """:func:`members_posterior_mean` of :func:`packed_joint_log_likelihood` (plus
    ``class_shift``, ``log w`` of each class, when given) -- the same numbers, bit for bit --
    without the (members x rows x classes) joint log-likelihoods in memory: each block of
    :func:`fused_block_rows` rows gets its members' joint log-likelihoods, then their mean
    posterior, in one compiled pass (the blocks in parallel), so that a prediction holds its
    result and a block's scratch (at most :data:`FUSED_BLOCK_BYTES` a thread), whatever the
    number of rows."""
    n_members, n_classes = packed.class_log_prior.shape
    out = np.empty((codes.shape[0], n_classes))
    if codes.shape[0]:
        shift = (np.zeros(0) if class_shift is None
                 else np.ascontiguousarray(class_shift, dtype=np.float64).reshape(n_classes))
        threads = numba_threads()
        rows = fused_block_rows(codes.shape[0], n_members, n_classes, threads)
        n_blocks = -(-codes.shape[0] // rows)
        args = (np.ascontiguousarray(codes.T, dtype=np.int32),
                np.ascontiguousarray(columns, dtype=np.int64), packed, shift, rows)
        if threads == 1 or n_blocks == 1:
            _members_proba_blocks(*args, 0, n_blocks, out)
        else:
            # the blocks on a pool of the kernel's serial compilation (it releases the GIL),
            # not a parallel=True kernel: the same numbers, and one compilation on first use
            # instead of a parfor and its gufunc (docs/performance.md, "First use")
            with ThreadPoolExecutor(min(threads, n_blocks)) as pool:
                for _ in pool.map(lambda b: _members_proba_blocks(*args, b, b + 1, out),
                                  range(n_blocks)):
                    pass
    return out


@njit(cache=True, nogil=True)
def _members_proba_blocks(codes_t, columns, pm, shift, block_rows, first_block, last_block,
                          out):
    """:func:`members_proba_of_codes` into ``out`` (rows, classes), blocks ``first_block <= b
    < last_block`` of ``block_rows`` rows: per block, every member's :func:`_member_block`
    over the block's runs of :data:`ROW_BLOCK` rows into the block's joint log-likelihoods
    (members x block rows x classes), ``shift`` added when it is not empty, then
    :func:`_posterior_mean_rows` over the block in runs of :data:`POSTERIOR_BLOCK_ROWS` (each
    row's numbers do not depend on the blocks or the runs, nor on the thread that runs a
    block)."""
    n_rows, n_classes = out.shape
    n_members = columns.shape[0]
    for b in range(first_block, last_block):
        first = b * block_rows
        last = min(n_rows, first + block_rows)
        joint = np.empty((n_members, last - first, n_classes))
        for e in range(n_members):
            for run in range(first, last, ROW_BLOCK):
                _member_block(codes_t, columns, pm, e, run, min(last, run + ROW_BLOCK), joint,
                              run - first)
        if shift.shape[0] > 0:
            for e in range(n_members):
                for i in range(last - first):
                    for c in range(n_classes):
                        joint[e, i, c] = joint[e, i, c] + shift[c]
        shifted = np.empty(POSTERIOR_BLOCK_ROWS * n_classes)
        bits = np.empty(POSTERIOR_BLOCK_ROWS * n_classes, dtype=np.int64)
        p = np.empty(n_classes)
        for r0 in range(first, last, POSTERIOR_BLOCK_ROWS):
            r1 = min(r0 + POSTERIOR_BLOCK_ROWS, last)
            _posterior_mean_rows(joint, r0 - first, out, r0, r1, shifted, bits, p)


# the kernels compile fastpath.utils._sums' pairwise_sum into their own cache entries
flush_stale_cache(globals(), [_sums, _exp])
