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

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numba import prange

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
    return PackedModel(
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


@threaded_kernel
def _joint_kernel(
    codes, class_log_prior, child_col, cond_ptr, cond_cols, node_offset, lookup_offsets,
    lookup_base, child_lookup, n_values, logp_offset, log_prob, out,
):
    n_rows = codes.shape[0]
    n_classes = class_log_prior.shape[0]
    n_trees = child_col.shape[0]
    for r in prange(n_rows):
        for c in range(n_classes):
            s = class_log_prior[c]
            for a in range(n_trees):
                x = codes[r, child_col[a]]
                if x < 0:
                    continue  # unknown value: its factor is marginalised out
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
                s += log_prob[logp_offset[a] + node * n_values[a] + x]
            out[r, c] = s


def joint_log_likelihood(model: PackedModel, codes: np.ndarray) -> np.ndarray:
    """log P(y, x) for every row and class, shape (n_rows, n_classes)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    out = np.empty((codes.shape[0], model.n_classes), dtype=np.float64)
    if codes.shape[0]:
        _joint_kernel(
            codes, model.class_log_prior, model.child_col, model.cond_ptr, model.cond_cols,
            model.node_offset, model.lookup_offsets, model.lookup_base, model.child_lookup,
            model.n_values, model.logp_offset, model.log_prob, out,
        )
    return out


@dataclass(frozen=True)
class PackedMembers:
    """Every member's :class:`PackedModel` in one set of flat arrays (an ensemble's), so that
    one kernel computes every member's joint for every row. Member ``e``'s trees are
    ``tree_ptr[e]:tree_ptr[e + 1]`` of the concatenated trees; their column indices are the
    member's attributes, read through ``columns[e]`` in a shared code matrix
    (:func:`fastpath.encode._encoder.code_members`)."""

    n_classes: int
    class_log_prior: np.ndarray  # (M, C)
    tree_ptr: np.ndarray  # (M + 1,)
    tree_member: np.ndarray  # (T,) the member of every tree
    model: PackedModel  # the trees of every member, concatenated


def pack_members(models: Sequence[PackedModel]) -> PackedMembers:
    """Concatenate the members' packed models (offsets shifted to the concatenation)."""
    n_trees = [m.child_col.size for m in models]
    node_shift = np.cumsum([0] + [m.node_offset[-1] for m in models[:-1]])
    lookup_shift = np.cumsum([0] + [m.child_lookup.size for m in models[:-1]])
    logp_shift = np.cumsum([0] + [m.log_prob.size for m in models[:-1]])
    cond_shift = np.cumsum([0] + [m.cond_cols.size for m in models[:-1]])

    def cat(arrays, dtype=np.int64):
        return np.ascontiguousarray(np.concatenate(arrays), dtype=dtype)

    node_offset = cat([m.node_offset[:-1] + shift for m, shift in zip(models, node_shift,
                                                                      strict=True)]
                      + [np.array([sum(m.node_offset[-1] for m in models)])])
    cond_ptr = cat([m.cond_ptr[:-1] + shift for m, shift in zip(models, cond_shift, strict=True)]
                   + [np.array([sum(m.cond_cols.size for m in models)])])
    model = PackedModel(
        n_classes=models[0].n_classes,
        class_log_prior=models[0].class_log_prior,
        child_col=cat([m.child_col for m in models]),
        cond_ptr=cond_ptr,
        cond_cols=cat([m.cond_cols for m in models]),
        node_offset=node_offset,
        lookup_offsets=cat([m.lookup_offsets for m in models]),
        lookup_base=cat([m.lookup_base + shift for m, shift in zip(models, lookup_shift,
                                                                  strict=True)]),
        child_lookup=cat([m.child_lookup for m in models]),
        n_values=cat([m.n_values for m in models]),
        logp_offset=cat([m.logp_offset + shift for m, shift in zip(models, logp_shift,
                                                                  strict=True)]),
        log_prob=cat([m.log_prob for m in models], np.float64),
    )
    return PackedMembers(
        n_classes=models[0].n_classes,
        class_log_prior=np.ascontiguousarray(np.stack([m.class_log_prior for m in models])),
        tree_ptr=np.concatenate([[0], np.cumsum(n_trees)]).astype(np.int64),
        tree_member=np.repeat(np.arange(len(models)), n_trees).astype(np.int64),
        model=model,
    )


#: rows per block of the members' kernel: a block visits every tree once, so a tree's nodes stay
#: in cache while the block's rows descend it (a row at a time would sweep the whole model)
ROW_BLOCK = 256


@threaded_kernel
def _members_joint_kernel(
    codes, columns, tree_member, class_log_prior, child_col, cond_ptr, cond_cols, node_offset,
    lookup_offsets, lookup_base, child_lookup, n_values, logp_offset, log_prob, out,
):
    # _joint_kernel for every member (out[:, e] is member e's), the member's attribute j read
    # in column columns[e, j] of the shared codes. Tree by tree within a block of rows: each
    # (row, member, class) still adds its prior, then its trees' terms in the trees' order,
    # so the sums are _joint_kernel's to the last bit.
    n_rows = codes.shape[0]
    n_members = class_log_prior.shape[0]
    n_classes = class_log_prior.shape[1]
    n_trees = child_col.shape[0]
    n_blocks = (n_rows + ROW_BLOCK - 1) // ROW_BLOCK
    for b in prange(n_blocks):
        r0 = b * ROW_BLOCK
        r1 = min(n_rows, r0 + ROW_BLOCK)
        for r in range(r0, r1):
            for e in range(n_members):
                for c in range(n_classes):
                    out[r, e, c] = class_log_prior[e, c]
        for a in range(n_trees):
            e = tree_member[a]
            child = columns[e, child_col[a]]
            for r in range(r0, r1):
                x = codes[r, child]
                if x < 0:
                    continue  # unknown value: its factor is marginalised out
                for c in range(n_classes):
                    node = 0
                    for j in range(cond_ptr[a], cond_ptr[a + 1]):
                        col = cond_cols[j]
                        v = c if col < 0 else codes[r, columns[e, col]]
                        if v < 0:
                            break  # unknown parent value: back off to this node
                        slots = lookup_offsets[node_offset[a] + node]
                        if slots < 0:
                            break
                        nxt = child_lookup[lookup_base[a] + slots + v]
                        if nxt < 0:
                            break  # path never observed: back off
                        node = nxt
                    out[r, e, c] += log_prob[logp_offset[a] + node * n_values[a] + x]


def members_joint_log_likelihood(packed: PackedMembers, codes: np.ndarray,
                                 columns: np.ndarray) -> np.ndarray:
    """Every member's log P(y, x) for every row and class, shape (n_rows, n_members, n_classes)
    (a row's members side by side), from the shared codes and the members' columns in them
    (one kernel call)."""
    codes = np.ascontiguousarray(codes, dtype=np.int64)
    n_members = packed.tree_ptr.size - 1
    out = np.empty((codes.shape[0], n_members, packed.n_classes), dtype=np.float64)
    if codes.shape[0]:
        m = packed.model
        _members_joint_kernel(
            codes, np.ascontiguousarray(columns, dtype=np.int64), packed.tree_member,
            packed.class_log_prior, m.child_col, m.cond_ptr, m.cond_cols, m.node_offset,
            m.lookup_offsets, m.lookup_base, m.child_lookup, m.n_values, m.logp_offset,
            m.log_prob, out,
        )
    return out


def posterior_from_joint(joint: np.ndarray) -> np.ndarray:
    """Normalise joint log-likelihoods into P(y | x) (log-sum-exp, row by row)."""
    top = joint.max(axis=1, keepdims=True)
    # a row where every class has probability zero carries no information: uniform
    top = np.where(np.isfinite(top), top, 0.0)
    with np.errstate(invalid="ignore"):
        p = np.exp(joint - top)
    total = p.sum(axis=1, keepdims=True)
    bad = ~(total > 0) | ~np.isfinite(total)
    p = np.where(bad, 1.0 / joint.shape[1], p / np.where(bad, 1.0, total))
    return p
