"""Scores of structure learning: ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` from integer codes.

:func:`mutual_information` and :func:`conditional_mutual_information` are numba kernels over the
columns of ``X`` (one pass over the rows per attribute pair, pairs spread over threads). Both
return nats and are computed from the empirical counts ("plug-in" estimates). The per-cell term
(:func:`cmi_term`) and the dense summation (:func:`cmi_dense`) are shared with the out-of-core
pair tables of :mod:`fastpath.scale`, so both sum the same numbers in the same order.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence

import numba as nb
import numpy as np

from ..utils._threads import numba_threads, threaded_kernel

_TRANSPOSE_BLOCK = 1024


# ====================================================================== input checks
def _check_inputs(X, y, cardinalities, n_classes) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validate and convert; return (Xt, y, cards, n_classes) with Xt = X.T, contiguous.

    ``Xt`` uses the smallest unsigned dtype that holds every code (uint8 up to 256 values,
    uint16 up to 65,536, else int32): the kernels read attribute columns, and the narrow copy
    keeps them cache-friendly.
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2:
        raise ValueError(f"X must be a 2-D array (n_rows, n_attributes), got shape {X.shape}")
    if y.ndim != 1:
        raise ValueError(f"y must be a 1-D array (n_rows,), got shape {y.shape}")
    if X.shape[0] != y.shape[0]:
        raise ValueError(
            f"X and y have different numbers of rows: X has {X.shape[0]}, y has {y.shape[0]}"
        )
    for name, a in (("X", X), ("y", y)):
        if not (np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_):
            raise TypeError(f"{name} must hold integer codes, got dtype {a.dtype}")
    n_rows, n_attributes = X.shape

    cards_in = np.asarray(cardinalities)
    if cards_in.ndim != 1 or cards_in.shape[0] != n_attributes:
        raise ValueError(
            f"cardinalities must give one value per attribute ({n_attributes}), "
            f"got shape {cards_in.shape}"
        )
    if cards_in.size and not np.issubdtype(cards_in.dtype, np.integer):
        if not np.all(np.equal(np.mod(cards_in, 1), 0)):
            raise ValueError("cardinalities must be integers")
    cards = cards_in.astype(np.int64)
    bad = np.flatnonzero(cards < 1)
    if bad.size:
        raise ValueError(
            f"cardinalities must be >= 1; attribute {int(bad[0])} has {int(cards[bad[0]])}"
        )
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or int(n_classes) < 1:
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    n_classes = int(n_classes)

    if n_rows:
        col_min = X.min(axis=0)
        col_max = X.max(axis=0)
        bad = np.flatnonzero((col_min < 0) | (col_max >= cards))
        if bad.size:
            j = int(bad[0])
            raise ValueError(
                f"codes of attribute {j} must lie in [0, {int(cards[j])}), "
                f"got values in [{int(col_min[j])}, {int(col_max[j])}]"
            )
        if y.min() < 0 or y.max() >= n_classes:
            raise ValueError(
                f"class codes y must lie in [0, {n_classes}), got values in "
                f"[{int(y.min())}, {int(y.max())}]"
            )

    max_card = int(cards.max()) if n_attributes else 1
    if max_card <= 256:
        dtype = np.uint8
    elif max_card <= 65536:
        dtype = np.uint16
    else:
        dtype = np.int32
    # transpose in row blocks: a plain X.T copy is several times slower on large inputs
    Xt = np.empty((n_attributes, n_rows), dtype=dtype)
    for r0 in range(0, n_rows, _TRANSPOSE_BLOCK):
        Xt[:, r0 : r0 + _TRANSPOSE_BLOCK] = X[r0 : r0 + _TRANSPOSE_BLOCK].T
    return Xt, np.ascontiguousarray(y, dtype=np.int64), cards, n_classes


# ====================================================================== kernels
@nb.njit(cache=True)
def _class_counts(y, n_classes):
    out = np.zeros(n_classes, dtype=np.int64)
    for r in range(y.shape[0]):
        out[y[r]] += 1
    return out


@threaded_kernel
def _attribute_class_counts(Xt, y, cards, n_classes, offsets):
    """Joint counts n(x_j = a, y = c), attribute j's table at offsets[j], laid out [a, c]."""
    m, n = Xt.shape
    out = np.zeros(offsets[m], dtype=np.int64)
    for j in nb.prange(m):
        base = offsets[j]
        col = Xt[j]
        for r in range(n):
            out[base + np.int64(col[r]) * n_classes + y[r]] += 1
    return out


@threaded_kernel
def mi_from_counts(joint, cards, class_counts, offsets, n_rows):
    """Mutual information of every attribute with the class from the (attribute, class) counts:
    I(X_j; Y) = sum_{a,c} n_ac/N log(n_ac N / (n_a n_c)) from the joint tables."""
    m = cards.shape[0]
    n_classes = class_counts.shape[0]
    out = np.zeros(m)
    if n_rows == 0:
        return out
    total = float(n_rows)
    for j in nb.prange(m):
        base = offsets[j]
        s = 0.0
        for a in range(cards[j]):
            na = 0
            for c in range(n_classes):
                na += joint[base + a * n_classes + c]
            if na == 0:
                continue
            for c in range(n_classes):
                nac = joint[base + a * n_classes + c]
                if nac > 0:
                    # ratio of exact integers in float64: exactly 1.0 under exact independence
                    s += nac * math.log((nac * total) / (float(na) * float(class_counts[c])))
        out[j] = max(s / total, 0.0)
    return out


@nb.njit(cache=True, inline="always")
def cmi_term(n_acb, n_ac, n_bc, n_c):
    """``n_acb log(n_acb n_c / (n_ac n_bc))``: one cell's share of ``N I(X_i; X_j | Y)``.

    Each log argument is a ratio of exact integers in float64, so a pair that is exactly
    independent given the class in the data scores exactly 0.
    """
    return n_acb * math.log((n_acb * float(n_c)) / (float(n_ac) * float(n_bc)))


@nb.njit(cache=True)
def cmi_dense(table, ci, cj, n_classes, joint_i, joint_j, class_counts, clear):
    """``N I(X_i; X_j | Y)`` summed over the cells of ``table`` (laid out [a, c, b]) in index
    order; ``clear`` zeroes every visited cell (the in-memory kernel reuses its table)."""
    s = 0.0
    for a in range(ci):
        for c in range(n_classes):
            nac = joint_i[a * n_classes + c]
            if nac == 0:
                continue
            row = (a * n_classes + c) * cj
            for b in range(cj):
                nacb = table[row + b]
                if nacb > 0:
                    s += cmi_term(nacb, nac, joint_j[b * n_classes + c], class_counts[c])
                    if clear:
                        table[row + b] = 0
    return s


@nb.njit(cache=True)
def _pair_cmi(xi, xj, y, ci, cj, n_classes, joint_i, joint_j, class_counts, table):
    """I(X_i; X_j | Y) of one pair; ``table`` is zero on entry and left zero on exit.

    Table laid out [a, c, b] (a = x_i, c = y, b = x_j);
    CMI = sum n_acb/N log(n_acb n_c / (n_ac n_bc)) with the marginals n_ac, n_bc from the
    attribute-class tables (:func:`cmi_term`).
    """
    n = xi.shape[0]
    for r in range(n):
        table[(np.int64(xi[r]) * n_classes + y[r]) * cj + np.int64(xj[r])] += 1
    if ci * n_classes * cj <= n:
        s = cmi_dense(table, ci, cj, n_classes, joint_i, joint_j, class_counts, True)
    else:
        # sparse: visit the occupied cells in the order of their first row, clearing each on
        # its first visit (the out-of-core pass sorts its cells by first row to match)
        s = 0.0
        for r in range(n):
            a = np.int64(xi[r])
            c = y[r]
            b = np.int64(xj[r])
            idx = (a * n_classes + c) * cj + b
            nacb = table[idx]
            if nacb > 0:
                s += cmi_term(nacb, joint_i[a * n_classes + c], joint_j[b * n_classes + c],
                              class_counts[c])
                table[idx] = 0
    return max(s / n, 0.0)


@threaded_kernel
def _cmi_kernel(Xt, y, cards, n_classes, joint, offsets, pair_i, pair_j, chunk_starts):
    """I(X_i; X_j | Y) for every listed pair; pairs in chunks, one reused table per chunk."""
    n_pairs = pair_i.shape[0]
    n = Xt.shape[1]
    out = np.zeros(n_pairs)
    if n == 0:
        return out
    class_counts = np.zeros(n_classes, dtype=np.int64)
    for r in range(n):
        class_counts[y[r]] += 1
    n_chunks = chunk_starts.shape[0] - 1
    for h in nb.prange(n_chunks):
        lo = chunk_starts[h]
        hi = chunk_starts[h + 1]
        size = 0
        for p in range(lo, hi):
            size = max(size, cards[pair_i[p]] * n_classes * cards[pair_j[p]])
        table = np.zeros(size, dtype=np.int64)
        for p in range(lo, hi):
            i = pair_i[p]
            j = pair_j[p]
            out[p] = _pair_cmi(
                Xt[i],
                Xt[j],
                y,
                cards[i],
                cards[j],
                n_classes,
                joint[offsets[i] : offsets[i + 1]],
                joint[offsets[j] : offsets[j + 1]],
                class_counts,
                table,
            )
    return out


def _joint_tables(Xt, y, cards, n_classes):
    offsets = np.zeros(cards.shape[0] + 1, dtype=np.int64)
    np.cumsum(cards * n_classes, out=offsets[1:])
    joint = _attribute_class_counts(Xt, y, cards, n_classes, offsets)
    return joint, offsets


# ====================================================================== statistics
def mutual_information(X, y, cardinalities: Sequence[int], n_classes: int) -> np.ndarray:
    """Empirical mutual information ``I(X_j; Y)`` of every attribute with the class, in nats.

    Parameters
    ----------
    X : array of int, shape (n_rows, n_attributes)
        Attribute codes, ``0 <= X[:, j] < cardinalities[j]``.
    y : array of int, shape (n_rows,)
        Class codes in ``[0, n_classes)``.
    cardinalities : sequence of int, length n_attributes
    n_classes : int

    Returns
    -------
    ndarray of float64, shape (n_attributes,)
        Non-negative (tiny negative rounding is clipped to 0); 0 for every attribute when there
        are no rows.
    """
    Xt, y, cards, n_classes = _check_inputs(X, y, cardinalities, n_classes)
    joint, offsets = _joint_tables(Xt, y, cards, n_classes)
    return mi_from_counts(joint, cards, _class_counts(y, n_classes), offsets, Xt.shape[1])


def conditional_mutual_information(
    X, y, cardinalities: Sequence[int], n_classes: int
) -> np.ndarray:
    """Empirical conditional mutual information ``I(X_i; X_j | Y)`` of every attribute pair.

    One joint count table per pair (numba, pairs spread over threads): the cost is
    ``O(n_rows * n_attributes**2 / 2)`` counting steps plus ``O(c_i c_j n_classes)`` per pair.

    Returns
    -------
    ndarray of float64, shape (n_attributes, n_attributes)
        Symmetric (each pair is computed once and mirrored), zero diagonal, non-negative
        (tiny negative rounding is clipped to 0), in nats.
    """
    Xt, y, cards, n_classes = _check_inputs(X, y, cardinalities, n_classes)
    joint, offsets = _joint_tables(Xt, y, cards, n_classes)
    return _cmi_matrix(Xt, y, cards, n_classes, joint, offsets)


def _cmi_matrix(Xt, y, cards, n_classes, joint, offsets) -> np.ndarray:
    m = cards.shape[0]
    pair_i, pair_j = np.triu_indices(m, k=1)
    values = _cmi_values(Xt, y, cards, n_classes, joint, offsets, pair_i, pair_j)
    out = np.zeros((m, m))
    out[pair_i, pair_j] = values
    out[pair_j, pair_i] = values
    return out


def _cmi_values(Xt, y, cards, n_classes, joint, offsets, pair_i, pair_j) -> np.ndarray:
    """``I(X_i; X_j | Y)`` of the listed pairs (each computed alone, whatever the others)."""
    n_pairs = pair_i.shape[0]
    # about 32 chunks per thread keeps the threads balanced; each chunk reuses one table
    n_chunks = max(1, min(n_pairs, 32 * numba_threads()))
    chunk_starts = np.linspace(0, n_pairs, n_chunks + 1).round().astype(np.int64)
    return _cmi_kernel(Xt, y, cards, n_classes, joint, offsets, pair_i.astype(np.int64),
                       pair_j.astype(np.int64), chunk_starts)


def mutual_information_scores(
    X, y, cardinalities: Sequence[int], n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Both ``I(X_j; Y)`` and the ``I(X_i; X_j | Y)`` matrix, validating and counting once."""
    Xt, y, cards, n_classes = _check_inputs(X, y, cardinalities, n_classes)
    joint, offsets = _joint_tables(Xt, y, cards, n_classes)
    mi = mi_from_counts(joint, cards, _class_counts(y, n_classes), offsets, Xt.shape[1])
    cmi = _cmi_matrix(Xt, y, cards, n_classes, joint, offsets)
    return mi, cmi


class ScoreCache:
    """One fit's conditional mutual informations ``I(X_i; X_j | Y)``, kept by column key, so
    that members coding columns alike (an ensemble's nominal columns; every column under
    Weka's MDL) compute each pair once.

    A key names a column as coded (the caller's choice, e.g. ``(j, coding)``), or is ``None``
    for a column no other member codes alike (never kept). :meth:`scores` gives exactly
    :func:`mutual_information_scores`' numbers: the kernel computes each pair alone, so which
    pairs share a call does not change them. Threads may share a cache (each pair is kept once,
    under a lock; two threads may both compute it, to the same number).
    """

    def __init__(self) -> None:
        self._ids: dict = {}
        self._cmi = np.zeros((0, 0))  # by key id; NaN: not computed yet
        self._lock = threading.Lock()

    def scores(self, X, y, cardinalities: Sequence[int], n_classes: int,
               keys: Sequence) -> tuple[np.ndarray, np.ndarray]:
        """:func:`mutual_information_scores` of ``X``, whose column ``j`` has key
        ``keys[j]``."""
        Xt, y, cards, n_classes = _check_inputs(X, y, cardinalities, n_classes)
        m = cards.shape[0]
        if len(keys) != m:
            raise ValueError(f"keys has {len(keys)} entries for {m} attributes")
        joint, offsets = _joint_tables(Xt, y, cards, n_classes)
        mi = mi_from_counts(joint, cards, _class_counts(y, n_classes), offsets, Xt.shape[1])
        pair_i, pair_j = np.triu_indices(m, k=1)
        with self._lock:
            ids = np.asarray([-1 if key is None else self._ids.setdefault(key, len(self._ids))
                              for key in keys], dtype=np.int64)
            if len(self._ids) > self._cmi.shape[0]:
                grown = np.full((len(self._ids), len(self._ids)), np.nan)
                grown[: self._cmi.shape[0], : self._cmi.shape[0]] = self._cmi
                self._cmi = grown
            a, b = ids[pair_i], ids[pair_j]
            kept = (a >= 0) & (b >= 0)
            values = np.full(pair_i.shape[0], np.nan)
            values[kept] = self._cmi[a[kept], b[kept]]
        need = np.flatnonzero(np.isnan(values))
        if need.size:
            values[need] = _cmi_values(Xt, y, cards, n_classes, joint, offsets, pair_i[need],
                                       pair_j[need])
            new = need[kept[need]]
            with self._lock:
                self._cmi[a[new], b[new]] = values[new]
                self._cmi[b[new], a[new]] = values[new]
        cmi = np.zeros((m, m))
        cmi[pair_i, pair_j] = values
        cmi[pair_j, pair_i] = values
        return mi, cmi


def mi_order(mi: np.ndarray) -> tuple[int, ...]:
    """Attributes by decreasing MI with the class, ties by attribute index."""
    return tuple(int(j) for j in np.argsort(-mi, kind="stable"))
