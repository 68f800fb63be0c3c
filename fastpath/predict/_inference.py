"""Probability tables -> class posteriors: the last arrow of the pipeline.

A fitted classifier is a set of context trees, each with a probability table (one row per node).
For prediction they are packed into flat arrays (:class:`PackedModel`) that one numba kernel
walks: for every row and every class, each attribute's tree is descended from the root along
(class, parent values...) to the deepest existing node (back-off for unseen paths, and a stop at
an unknown value), and the log-probability of the attribute's value there is added
(paper, eq. for P(y | x) in section 2.1). An unknown attribute value (code ``-1``) contributes no
factor: it is marginalised out.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..counts._context_tree import ContextTree
from ..counts._counting import TreeSpec
from ..utils._threads import threaded_kernel


@dataclass(frozen=True)
class PackedModel:
    """Flat arrays of all attribute trees of a classifier (struct of arrays)."""

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


def pack_model(
    class_prior: np.ndarray,
    specs: Sequence[TreeSpec],
    trees: Sequence[ContextTree],
    tables: Sequence[np.ndarray],
) -> PackedModel:
    """Pack attribute trees (child column >= 0) and their probability tables for prediction."""
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
    packed = PackedModel(
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
    return _with_dense_tables(packed, specs)


#: a tree is resolved in advance when its table of every parent combination holds at most this
#: many entries, or at most :data:`DENSE_GROWTH` times its own table's: then a row reads its
#: log-probabilities for every class in one place instead of descending once per class
DENSE_MIN_ENTRIES = 4096
DENSE_GROWTH = 4


def _with_dense_tables(packed: PackedModel, specs: Sequence[TreeSpec]) -> PackedModel:
    """``packed`` with the tables of :func:`_dense_tables` for the trees small enough (a tree
    whose first branch is the class, as every classifier's attribute trees are)."""
    n_trees = packed.child_col.size
    dense_offset = np.full(n_trees, -1, np.int64)
    cond_cards = np.asarray([c for spec in specs for c in spec.cardinalities], np.int64)
    total = 0
    for a, spec in enumerate(specs):
        if not spec.conditioning or spec.conditioning[0] != -1 or -1 in spec.conditioning[1:]:
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
    block, the log-probability of value ``x`` at the node :func:`_joint_kernel`'s descent
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


@threaded_kernel
def _joint_kernel(
    codes, class_log_prior, child_col, cond_ptr, cond_cols, node_offset, lookup_offsets,
    lookup_base, child_lookup, n_values, logp_offset, log_prob, dense_offset, cond_cards,
    dense_log_prob, out,
):
    n_rows = codes.shape[0]
    n_classes = class_log_prior.shape[0]
    n_trees = child_col.shape[0]
    for r in prange(n_rows):
        # each class's sum (kept in its output cell: no scratch per row) gets the trees' terms
        # in tree order, whichever way a tree is read
        s = out[r]
        for c in range(n_classes):
            s[c] = class_log_prior[c]
        for a in range(n_trees):
            x = codes[r, child_col[a]]
            if x < 0:
                continue  # unknown value: its factor is marginalised out
            if dense_offset[a] >= 0:
                idx = 0
                for j in range(cond_ptr[a] + 1, cond_ptr[a + 1]):
                    v = codes[r, cond_cols[j]]
                    if v < 0:
                        idx = -1  # an unknown parent value backs off: descend instead
                        break
                    idx = idx * cond_cards[j] + v
                if idx >= 0:
                    base = dense_offset[a] + (idx * n_values[a] + x) * n_classes
                    for c in range(n_classes):
                        s[c] += dense_log_prob[base + c]
                    continue
            for c in range(n_classes):
                node = 0
                for j in range(cond_ptr[a], cond_ptr[a + 1]):
                    col = cond_cols[j]
                    v = c if col < 0 else codes[r, col]
                    if v < 0:
                        break  # unknown parent value: back off to this node
                    slots = lookup_offsets[node_offset[a] + node]
                    if slots < 0:
                        break
                    child = child_lookup[lookup_base[a] + slots + v]
                    if child < 0:
                        break  # path never observed: back off
                    node = child
                s[c] += log_prob[logp_offset[a] + node * n_values[a] + x]


def _or_empty(a: np.ndarray | None, dtype) -> np.ndarray:
    return np.empty(0, dtype) if a is None else a


def joint_log_likelihood(model: PackedModel, codes: np.ndarray) -> np.ndarray:
    """log P(y, x) for every row and class, shape (n_rows, n_classes)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    out = np.empty((codes.shape[0], model.n_classes), dtype=np.float64)
    if codes.shape[0]:
        dense_offset = model.dense_offset
        if dense_offset is None:  # no tree resolved in advance
            dense_offset = np.full(model.child_col.size, -1, np.int64)
        _joint_kernel(
            codes, model.class_log_prior, model.child_col, model.cond_ptr, model.cond_cols,
            model.node_offset, model.lookup_offsets, model.lookup_base, model.child_lookup,
            model.n_values, model.logp_offset, model.log_prob, dense_offset,
            _or_empty(model.cond_cards, np.int64), _or_empty(model.dense_log_prob, np.float64),
            out,
        )
    return out


class PackedMembers(NamedTuple):
    """Every member's :class:`PackedModel` end to end, for one kernel call over all members.

    Member ``e``'s trees are ``tree_ptr[e]:tree_ptr[e + 1]``; every offset is into the
    concatenated arrays (``cond_cols`` and ``child_col`` stay the member's attribute numbers;
    ``dense_offset`` -1 where a tree is descended). ``class_log_prior`` has one row per member.
    """

    tree_ptr: np.ndarray
    class_log_prior: np.ndarray
    child_col: np.ndarray
    cond_ptr: np.ndarray
    cond_cols: np.ndarray
    node_offset: np.ndarray
    lookup_offsets: np.ndarray
    lookup_base: np.ndarray
    child_lookup: np.ndarray
    n_values: np.ndarray
    logp_offset: np.ndarray
    log_prob: np.ndarray
    dense_offset: np.ndarray
    cond_cards: np.ndarray
    dense_log_prob: np.ndarray


def pack_members(models: Sequence[PackedModel]) -> PackedMembers:
    """:class:`PackedMembers` of the members' packed models (built once per fitted model)."""
    n_trees = [m.child_col.size for m in models]
    tree_ptr = np.zeros(len(models) + 1, np.int64)
    tree_ptr[1:] = np.cumsum(n_trees)

    def shifted(name: str, shift: list[int], drop_last: bool = False) -> np.ndarray:
        parts = [getattr(m, name)[:-1] if drop_last else getattr(m, name) for m in models]
        return np.concatenate([p + s for p, s in zip(parts, shift, strict=True)]
                              + ([np.asarray([getattr(models[-1], name)[-1] + shift[-1]])]
                                 if drop_last else [])).astype(np.int64)

    def starts(sizes: list[int]) -> list[int]:
        return [0, *np.cumsum(sizes)[:-1].tolist()] if sizes else []

    node_shift = starts([int(m.node_offset[-1]) for m in models])
    cond_shift = starts([m.cond_cols.size for m in models])
    lookup_shift = starts([m.child_lookup.size for m in models])
    logp_shift = starts([m.log_prob.size for m in models])
    dense_sizes = [0 if m.dense_log_prob is None else m.dense_log_prob.size for m in models]
    dense_shift = starts(dense_sizes)
    dense_offset = []
    cond_cards = []
    for m, shift in zip(models, dense_shift, strict=True):
        if m.dense_offset is None:
            dense_offset.append(np.full(m.child_col.size, -1, np.int64))
            cond_cards.append(np.zeros(m.cond_cols.size, np.int64))
        else:
            dense_offset.append(np.where(m.dense_offset >= 0, m.dense_offset + shift, -1))
            cond_cards.append(m.cond_cards)

    def cat(parts: list, dtype) -> np.ndarray:
        return np.concatenate(parts).astype(dtype) if parts else np.empty(0, dtype)

    return PackedMembers(
        tree_ptr=tree_ptr,
        class_log_prior=np.stack([m.class_log_prior for m in models]),
        child_col=cat([m.child_col for m in models], np.int64),
        cond_ptr=shifted("cond_ptr", cond_shift, drop_last=True),
        cond_cols=cat([m.cond_cols for m in models], np.int64),
        node_offset=shifted("node_offset", node_shift, drop_last=True),
        lookup_offsets=cat([m.lookup_offsets for m in models], np.int64),
        lookup_base=shifted("lookup_base", lookup_shift),
        child_lookup=cat([m.child_lookup for m in models], np.int64),
        n_values=cat([m.n_values for m in models], np.int64),
        logp_offset=shifted("logp_offset", logp_shift),
        log_prob=cat([m.log_prob for m in models], np.float64),
        dense_offset=cat(dense_offset, np.int64),
        cond_cards=cat(cond_cards, np.int64),
        dense_log_prob=cat([m.dense_log_prob for m in models if m.dense_log_prob is not None],
                           np.float64),
    )


@threaded_kernel
def _members_kernel(codes, columns, pm, out):
    """:func:`_joint_kernel` of every member in one call: member ``e``'s columns are gathered
    into a contiguous matrix first (its rows' codes then sit in one cache line), and each row's
    classes get the same terms in the same order, hence the same numbers."""
    n_rows = codes.shape[0]
    n_classes = pm.class_log_prior.shape[1]
    n_attributes = columns.shape[1]
    own = np.empty((n_rows, n_attributes), np.int64)
    for e in range(columns.shape[0]):
        for r in range(n_rows):
            for j in range(n_attributes):
                own[r, j] = codes[r, columns[e, j]]
        for r in prange(n_rows):
            s = out[e, r]
            for c in range(n_classes):
                s[c] = pm.class_log_prior[e, c]
            for a in range(pm.tree_ptr[e], pm.tree_ptr[e + 1]):
                x = own[r, pm.child_col[a]]
                if x < 0:
                    continue  # unknown value: its factor is marginalised out
                kv = pm.n_values[a]
                if pm.dense_offset[a] >= 0:
                    idx = 0
                    for j in range(pm.cond_ptr[a] + 1, pm.cond_ptr[a + 1]):
                        v = own[r, pm.cond_cols[j]]
                        if v < 0:
                            idx = -1  # an unknown parent value backs off: descend instead
                            break
                        idx = idx * pm.cond_cards[j] + v
                    if idx >= 0:
                        base = pm.dense_offset[a] + (idx * kv + x) * n_classes
                        for c in range(n_classes):
                            s[c] += pm.dense_log_prob[base + c]
                        continue
                for c in range(n_classes):
                    node = 0
                    for j in range(pm.cond_ptr[a], pm.cond_ptr[a + 1]):
                        col = pm.cond_cols[j]
                        v = c if col < 0 else own[r, col]
                        if v < 0:
                            break  # unknown parent value: back off to this node
                        slots = pm.lookup_offsets[pm.node_offset[a] + node]
                        if slots < 0:
                            break
                        child = pm.child_lookup[pm.lookup_base[a] + slots + v]
                        if child < 0:
                            break  # path never observed: back off
                        node = child
                    s[c] += pm.log_prob[pm.logp_offset[a] + node * kv + x]


def members_joint_log_likelihood(models: Sequence[PackedModel], codes: np.ndarray,
                                 columns: np.ndarray, packed: PackedMembers | None = None,
                                 ) -> np.ndarray:
    """Every member's log P(y, x) for every row and class, shape (n_members, n_rows, n_classes),
    from the shared codes and the members' columns in them (member ``e``'s attribute ``j`` is
    ``codes[:, columns[e, j]]``, :func:`fastpath.encode._encoder.code_members`): each member's
    :func:`joint_log_likelihood`, the same numbers, in one kernel call (``packed``:
    :func:`pack_members` of ``models``, when the caller keeps it).
    """
    out = np.empty((len(models), codes.shape[0], models[0].n_classes), dtype=np.float64)
    if codes.shape[0]:
        packed = pack_members(models) if packed is None else packed
        _members_kernel(np.ascontiguousarray(codes, dtype=np.int64),
                        np.ascontiguousarray(columns, dtype=np.int64), packed, out)
    return out


def posterior_from_joint(joint: np.ndarray) -> np.ndarray:
    """Normalise joint log-likelihoods into P(y | x) (log-sum-exp, row by row)."""
    joint = np.asarray(joint, dtype=np.float64)
    # the rows' maximum class by class (a reduction along a short axis is slow in numpy; the
    # maximum is exact, so the same numbers)
    top = joint[:, :1].copy()
    for c in range(1, joint.shape[1]):
        np.maximum(top, joint[:, c : c + 1], out=top)
    # a row where every class has probability zero carries no information: uniform
    top[~np.isfinite(top)] = 0.0
    p = np.subtract(joint, top)
    with np.errstate(invalid="ignore"):
        np.exp(p, out=p)
    if joint.shape[1] < 8:
        # class by class from the first: the order numpy's sum adds fewer than 8 numbers in,
        # without its slow reduction along a short axis
        total = p[:, :1].copy()
        for c in range(1, joint.shape[1]):
            total += p[:, c : c + 1]
    else:
        total = p.sum(axis=1, keepdims=True)
    bad = ~(total > 0) | ~np.isfinite(total)
    if bad.any():
        p = np.where(bad, 1.0 / joint.shape[1], p / np.where(bad, 1.0, total))
    else:
        p /= total
    return p
