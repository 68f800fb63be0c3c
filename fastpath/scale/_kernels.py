"""numba kernels of the out-of-core passes: pair tables (pass 2) and leave-one-out errors (pass 4).

Each reproduces the summation order of its in-memory counterpart in :mod:`fastpath.structure`,
so a fit out of core gives the same floating-point numbers as one in memory.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..structure import _scores as scores
from ..structure import _selective as selective
from ..structure._scores import cmi_dense, cmi_term
from ..structure._selective import loo_row_errors, loo_row_model_error, loo_row_scratch
from ..utils._numba_cache import flush_stale_cache


@njit(cache=True, nogil=True)
def pair_update(Xt, y, n_classes, pair_i, pair_j, cards, table_off, tables, first_off, first,
                 row0, p_lo, p_hi):
    """Add rows to the (x_i, class, x_j) tables of pairs p_lo..p_hi-1 (layout of structure)."""
    n = Xt.shape[1]
    for p in range(p_lo, p_hi):
        i = pair_i[p]
        j = pair_j[p]
        cj = cards[j]
        base = table_off[p]
        fb = first_off[p]
        xi = Xt[i]
        xj = Xt[j]
        if fb < 0:
            for r in range(n):
                tables[base + (np.int64(xi[r]) * n_classes + y[r]) * cj + np.int64(xj[r])] += 1
        else:
            # the first row of every cell, for the summation order of structure's sparse scan
            for r in range(n):
                idx = (np.int64(xi[r]) * n_classes + y[r]) * cj + np.int64(xj[r])
                if tables[base + idx] == 0:
                    first[fb + idx] = row0 + r
                tables[base + idx] += 1


@njit(cache=True, nogil=True)
def pair_cmi_from_table(table, first, ci, cj, n_classes, joint_i, joint_j, class_counts, n,
                        sparse):
    """``I(X_i; X_j | Y)`` from the pair's counts, summed in the in-memory kernel's order."""
    if not sparse:
        s = cmi_dense(table, ci, cj, n_classes, joint_i, joint_j, class_counts, False)
    else:
        # the in-memory kernel visits the occupied cells in the order of their first row
        s = 0.0
        occupied = np.flatnonzero(table)
        order = np.argsort(first[occupied])
        for t in range(order.shape[0]):
            idx = occupied[order[t]]
            b = idx % cj
            c = (idx // cj) % n_classes
            a = idx // (cj * n_classes)
            s += cmi_term(table[idx], joint_i[a * n_classes + c], joint_j[b * n_classes + c],
                          class_counts[c])
    return max(s / n, 0.0)


def narrow_transpose(codes: np.ndarray, max_card: int) -> np.ndarray:
    dtype = np.uint8 if max_card <= 256 else np.uint16 if max_card <= 65536 else np.int32
    out = np.empty((codes.shape[1], codes.shape[0]), dtype=dtype)
    for r0 in range(0, codes.shape[0], 1024):
        out[:, r0 : r0 + 1024] = codes[r0 : r0 + 1024].T
    return out


@njit(cache=True, nogil=True)
def loo_errors(codes, y, model, settings, r_lo, r_hi, keep, out):
    """Squared leave-one-out errors of rows r_lo..r_hi-1: out[r - r_lo, tree, k*]; zeros for
    a row that ``keep[r]`` leaves out of a sampled selection (``keep`` empty: every row).

    Each row is :func:`fastpath.structure._selective.loo_row_errors` (``model`` a
    :class:`~fastpath.structure._selective.LooModel`, ``settings`` a
    :class:`~fastpath.structure._selective.LooSettings` with the number of rows of the whole
    data); the errors are stored, not added: :func:`add_errors` then adds them to their global
    chunk's sums in row order, as the in-memory kernel does, so the sums are the same
    floating-point numbers while the rows can be computed by several threads (a zero left by
    an unscored row adds exactly nothing).
    """
    cum, prob, nodes = loo_row_scratch(model.class_counts.shape[0], settings.max_k)
    sampled = keep.shape[0] > 0
    for r in range(r_lo, r_hi):
        if sampled and keep[r] == 0:
            out[r - r_lo] = 0.0
            continue
        loo_row_errors(codes, y, r, model, settings, cum, prob, nodes, out[r - r_lo])


@njit(cache=True, nogil=True)
def loo_model_errors(codes, y, model, settings, r_lo, r_hi, out):
    """:func:`loo_errors` for the whole model only (the m choice): out[r - r_lo, -1, max_k] is
    :func:`fastpath.structure._selective.loo_row_model_error`, the number :func:`loo_errors`
    puts there; the rest of ``out`` is left as it was (zeros, by its caller)."""
    cum = np.empty(model.class_counts.shape[0])
    prob = np.empty(settings.max_k + 2)
    last = model.child_col.shape[0] - 1
    if last < 0:
        return
    max_k = settings.max_k
    for r in range(r_lo, r_hi):
        out[r - r_lo, last, max_k] = loo_row_model_error(codes, y, r, model, settings, cum,
                                                         prob)


@njit(cache=True, nogil=True)
def add_errors(errors, r0, seg_lo, seg_hi, seg_id, sse):
    """sse[seg_id[s]] += errors of rows seg_lo[s]..seg_hi[s]-1, row after row."""
    for s_ in range(seg_lo.shape[0]):
        h = seg_id[s_]
        for r in range(seg_lo[s_], seg_hi[s_]):
            for a in range(errors.shape[1]):
                for k in range(errors.shape[2]):
                    sse[h, a, k] += errors[r - r0, a, k]


# The kernels above compile the CMI term and the leave-one-out row kernel of
# fastpath.structure into themselves: a change there must not leave them on numba's cache.
flush_stale_cache(globals(), [scores, selective])
