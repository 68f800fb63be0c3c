"""Exact explanations: each factor's term of a Bayesian network classifier's log-posterior.

A Bayesian network classifier's log-posterior is a sum (paper, section 2.1)::

    log P(y | x) = log P(y) + sum_i log P(x_i | y, pa_i) - log Z(x),
    log Z(x) = log sum_y' P(y') prod_i P(x_i | y', pa_i).

Each attribute's term ``log P(x_i | y, pa_i)`` is its contribution to class ``y``'s
log-posterior, exactly: no sampling, no model-agnostic approximation. :func:`member_terms`
reads, for every row, class and attribute tree of one member, the number the prediction kernel
(:func:`fastpath.predict._inference._member_block`) adds for that tree -- the log-probability
of the attribute's value at the node the descent ``(y, pa_i)`` reaches, backing off at an
unseen path, a leaf or an unknown parent value -- and adds them to the class prior in the
kernel's order (the prior, then the trees in tree order), so its joint log-likelihoods equal
the kernel's bit for bit. An unknown attribute value (code ``-1``) is marginalised out: its
term is 0. The three layouts of the prediction kernel (tables resolved in advance, merged
class branches, a descent per class) copy the same numbers, so one plain descent per class
reads them all.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..utils._threads import threaded_kernel
from ._inference import PackedMembers


@njit(cache=True, nogil=True)
def _row_terms(codes_t, mine, pm, e, i, terms, joint, unknown, own, own_log_prob):
    """Row ``i``'s terms of member ``e`` (see :func:`_terms_kernel`)."""
    n_classes = pm.class_log_prior.shape[1]
    own_class = own[i] if own.size else -1
    links = pm.child_links
    for c in range(n_classes):
        joint[i, c] = pm.class_log_prior[e, c]
    for a in range(pm.tree_ptr[e], pm.tree_ptr[e + 1]):
        attribute = pm.child_col[a]
        x = codes_t[mine[attribute], i]
        if x < 0:  # an unknown value's factor is marginalised out: no term
            unknown[i, attribute] = True
            continue
        kv = pm.n_values[a]
        lo, hi = pm.cond_ptr[a], pm.cond_ptr[a + 1]
        nodes, slots_base, logp = pm.node_offset[a], pm.lookup_base[a], pm.logp_offset[a]
        for c in range(n_classes):
            node = 0
            slots = pm.lookup_offsets[nodes]
            for j in range(lo, hi):
                col = pm.cond_cols[j]
                v = c if col < 0 else codes_t[mine[col], i]
                # an unknown parent value, a leaf or a path never observed: back off
                if slots < 0 or v < 0:
                    break
                link = 2 * (slots_base + slots + v)
                child = links[link]
                if child < 0:
                    break
                node = child
                slots = links[link + 1]
            if c == own_class:
                term = own_log_prob[logp + node * kv + x]
            else:
                term = pm.log_prob[logp + node * kv + x]
            terms[i, attribute, c] = term
            joint[i, c] += term


@threaded_kernel(nogil=True)
def _terms_kernel(codes_t, columns, pm, e, terms, joint, unknown, own, own_log_prob):
    """Member ``e``'s term of every attribute tree (rows, attributes, classes; 0 where the
    member has no tree for the attribute or its value is unknown), its joint log-likelihood
    (rows, classes; the class prior plus the terms in tree order, as the prediction kernel
    adds them) and where an attribute's value is unknown (rows, attributes), rows in
    parallel; a row's terms for its class ``own[i]`` (none where ``own`` is empty) read
    ``own_log_prob`` at the node the descent reaches, the rest ``pm.log_prob``."""
    mine = columns[e]
    for i in prange(codes_t.shape[1]):
        _row_terms(codes_t, mine, pm, e, i, terms, joint, unknown, own, own_log_prob)


def member_terms(packed: PackedMembers, codes: np.ndarray, columns: np.ndarray, member: int,
                 own_classes: np.ndarray | None = None, own_log_prob: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Member ``member``'s exact terms of every row of the shared ``codes`` (rows x shared
    codes; member ``e``'s attribute ``j`` is ``codes[:, columns[e, j]]``).

    With ``own_classes`` (each row's class) and ``own_log_prob`` (a ``log_prob`` array laid
    out as ``packed.log_prob``: the same trees with other tables), a row's terms for its own
    class read ``own_log_prob`` at the node the same descent reaches (the discriminative
    layer's terms with the row left out, :func:`fastpath.pipeline._weights.member_loo_terms`,
    in one descent); ``joint`` then adds those.

    Returns
    -------
    terms : ndarray (n_rows, n_attributes, n_classes)
        ``log P(x_j | y, pa_j)`` as the prediction reads it; 0 for an attribute the member
        has no tree for (selective kDB's unselected attributes) or whose value is unknown.
    joint : ndarray (n_rows, n_classes)
        ``log P(y) + sum_j terms[:, j]`` added in the prediction kernel's order: equal, bit
        for bit, to the member's joint log-likelihood of
        :func:`~fastpath.predict._inference.packed_joint_log_likelihood`.
    unknown : ndarray of bool (n_rows, n_attributes)
        Where the member's code of an attribute it has a tree for is unknown (``-1``).
    """
    n_rows = codes.shape[0]
    n_attributes = columns.shape[1]
    n_classes = packed.class_log_prior.shape[1]
    terms = np.zeros((n_rows, n_attributes, n_classes))
    joint = np.empty((n_rows, n_classes))
    unknown = np.zeros((n_rows, n_attributes), dtype=np.bool_)
    if own_classes is None:
        own, own_log_prob = np.empty(0, np.int64), packed.log_prob
    else:
        own = np.ascontiguousarray(own_classes, dtype=np.int64)
        own_log_prob = np.ascontiguousarray(own_log_prob, dtype=packed.log_prob.dtype)
        if own.shape != (n_rows,) or own_log_prob.shape != packed.log_prob.shape:
            raise ValueError("own_classes needs a class per row and own_log_prob the layout "
                             "of packed.log_prob")
    if n_rows:
        _terms_kernel(np.ascontiguousarray(codes.T, dtype=np.int32),
                      np.ascontiguousarray(columns, dtype=np.int64), packed, int(member),
                      terms, joint, unknown, own, own_log_prob)
    return terms, joint, unknown
