"""One posterior draw of the tables -> every row's joint log-likelihood under that draw.

The HDP sampler keeps draws of every node's probability vector (``HDPOptions.record_draws``:
``phi_root ~ Dir(n_root + alpha_0 / K)``, ``phi_j ~ Dir(n_j + alpha_j phi_parent)`` given a
state of the chain). A context tree holds only the paths its training rows took; a row whose
descent reaches a path the tree does not hold reads, in the posterior *mean*, the deepest node
it reached (the mean of an unobserved child of ``phi`` is ``phi``). A *draw* of that unseen
node is not ``phi``: under the model (paper, eq. 4) it is ``Dir(alpha phi)`` one level down,
and so on to the leaf's depth. Only the row's own value ``x`` matters, and a Dirichlet's
component is a Beta (aggregation), so the kernel draws, level by level below the node reached,

    p_{d+1} ~ Beta(alpha_{d+1} p_d, alpha_{d+1} (1 - p_d)),   p_d = phi_node[x],

(the sampler's own Beta variates, :func:`~fastpath.estimate.hdp._kernels.neg_log_beta_variate`,
in log space)

with ``alpha_{d+1}`` the concentration of that level in the same state of the chain (tying by
level, or one for every node), and adds ``log p`` at the leaf's depth. A row's draws are
independent of another row's: each row's marginal posterior is exact, not the joint of two
rows sharing an unseen path. An unknown parent value stops the descent as the prediction
does (the node reached), an unknown value is marginalised out.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from ..estimate.hdp._kernels import neg_log_beta_variate
from ._inference import PackedMembers


@njit(cache=True, nogil=True)
def _draw_joint(codes_t, mine, pm, e, log_prob, prior, level_alpha, alpha_ptr, state,
                term_weights, joint):
    n_classes = prior.shape[0]
    links = pm.child_links
    for i in range(codes_t.shape[1]):
        for c in range(n_classes):
            joint[i, c] = prior[c]
        for a in range(pm.tree_ptr[e], pm.tree_ptr[e + 1]):
            x = codes_t[mine[pm.child_col[a]], i]
            if x < 0:
                continue
            kv = pm.n_values[a]
            lo, hi = pm.cond_ptr[a], pm.cond_ptr[a + 1]
            nodes, slots_base, logp = pm.node_offset[a], pm.lookup_base[a], pm.logp_offset[a]
            for c in range(n_classes):
                node = 0
                depth = 0
                absent = False
                slots = pm.lookup_offsets[nodes]
                for j in range(lo, hi):
                    col = pm.cond_cols[j]
                    v = c if col < 0 else codes_t[mine[col], i]
                    if slots < 0 or v < 0:
                        break
                    link = 2 * (slots_base + slots + v)
                    child = links[link]
                    if child < 0:
                        absent = True  # a path the training rows never took
                        break
                    node = child
                    depth += 1
                    slots = links[link + 1]
                term = log_prob[logp + node * kv + x]
                if absent:
                    # in log space: a Beta of tiny parameters is often below 1e-308
                    for level in range(depth + 1, hi - lo + 1):
                        alpha = level_alpha[alpha_ptr[a] + level - 1]
                        p = math.exp(term)
                        term = -neg_log_beta_variate(alpha * p, alpha * (1.0 - p), state)
                joint[i, c] += term_weights[a, c] * term


def draw_joint_log_likelihood(packed: PackedMembers, codes_t: np.ndarray, columns: np.ndarray,
                              member: int, log_prob: np.ndarray, class_log_prior: np.ndarray,
                              level_alpha: np.ndarray, alpha_ptr: np.ndarray,
                              state: np.ndarray, term_weights: np.ndarray | None = None
                              ) -> np.ndarray:
    """Member ``member``'s ``log P(y, x)`` of every row under one draw of its tables.

    ``packed``: the members' packed trees (their layout; the tables are ``log_prob``, laid out
    as ``packed.log_prob``, and ``class_log_prior``); ``codes_t``: the shared codes column by
    column (int32, shared codes x rows); ``level_alpha[alpha_ptr[a] + d - 1]``: the
    concentration of depth ``d`` of packed tree ``a`` in this draw's state; ``state``: the
    xoshiro256** state (4 uint64, advanced in place) of the Beta draws, one stream read row by
    row in order (the same numbers for any number of threads); ``term_weights`` (packed trees,
    classes): the discriminative layer's weight of each tree's term for each class
    (:mod:`fastpath.pipeline._weights`; None: 1), the class prior given weighted."""
    n_classes = class_log_prior.shape[0]
    out = np.empty((codes_t.shape[1], n_classes))
    if term_weights is None:
        term_weights = np.ones((packed.child_col.size, n_classes))
    _draw_joint(codes_t, np.ascontiguousarray(columns[member], dtype=np.int64), packed,
                int(member), np.ascontiguousarray(log_prob, dtype=np.float64),
                np.ascontiguousarray(class_log_prior, dtype=np.float64),
                np.ascontiguousarray(level_alpha, dtype=np.float64),
                np.ascontiguousarray(alpha_ptr, dtype=np.int64), state,
                np.ascontiguousarray(term_weights, dtype=np.float64), out)
    return out
