"""Selective kDB (SkDB; Martinez, Webb, Chen & Zaidi, JMLR 2016).

Paper, section "Structure learning for BNCs": SkDB "selects values n* <= n and k* <= k such that
a kDB over the n* attributes with highest mutual information with the class and using k* in place
of k maximizes some user selected measure of performance (in the current work, RMSE) assessed
using incremental cross validation over the training data", in three passes over the data
(section "Efficiency of BNC learning"):

1. mutual information ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` -> the kDB-K structure
   (:func:`fastpath.structure.kdb`);
2. the counts of every attribute's context tree for kDB-K (class first, then the K parents in
   branching order);
3. leave-one-out cross-validation on those counts, *incrementally*: the held-out row's own
   counts are subtracted on the fly, nothing is refitted.

Pass 3 scores every candidate ``(n*, k*)`` at once, because both families are nested:

* kDB parent sets are nested in k (:func:`fastpath.structure.kdb`: the parents for ``k* < K``
  are the first ``k*`` of those for ``K``, which is also the branching order), so the context
  tree of kDB-k* is the top ``1 + k*`` levels of the kDB-K tree, and one descent along a row's
  path yields the estimate of every ``k*``;
* the models over the first ``n*`` attributes of the structure's order (MI order, or the order
  passed to :func:`select_skdb`, e.g. ESKDB's sampled one) are prefixes of one product, so the
  log-joint of every ``n*`` is a running sum over the attributes.

For each training row and each class the numba kernel :func:`_loo_kernel` therefore descends each
attribute's tree once (``O(depth)``), adds the log-estimate of each ``k*`` to a running log-joint,
and after each attribute turns the ``K + 1`` running log-joints into class posteriors and adds the
squared error ``(1 - P(y_r | x_r))^2`` to the score of ``(n*, k*)``: ``O(rows x classes x n x
(K + 1))`` in all, about the cost of predicting the training data once per ``k*``.

Scoring estimates. Martinez et al. use m-estimates for the cross-validation; we use the same
m-estimates with path back-off as the classifier (:mod:`fastpath.estimate._mestimate`) with a
*fixed* ``m`` (default ``m = 1``, Schurmann–Grassberger, the classifier's fallback): choosing ``m``
by holdout inside the leave-one-out loop would need one pass per candidate m. After subtracting the
held-out row, a node whose count drops to zero no longer exists (a refit would not create it), so
the descent backs off to its parent, and a value seen only in the held-out row gets ``1/K``
everywhere, exactly as :func:`fastpath.estimate.m_estimate_table` would on the refitted counts. The
selected structure is then estimated with m-estimates (holdout-chosen m) or HDP like any other.

Criterion: the RMSE of the true class, ``sqrt(mean over rows of (1 - P(true class | x))^2)``
(:func:`fastpath.evaluation.rmse_true_class`), as the authors' selective kDB code scores its
candidates; it equals the paper's RMSE (:func:`fastpath.evaluation.rmse`, the one reported by
evaluation) for two classes, not for more. Ties (exactly equal RMSE) go to the simpler model: fewer
attributes, then smaller ``k*``. ``n*`` ranges over ``1..n``, ``k*`` over ``0..K`` (``k* = 0`` is
naive Bayes on the selected attributes).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from numba import njit, prange

from ..counts import _records
from ..counts._counting import CountAccumulator, TreeSpec
from ..counts._records import TreeRecords, accumulated_records, find_child, tree_records
from ..utils._numba_cache import flush_stale_cache
from ..utils._rows import hash_threshold, row_hashes
from ..utils._threads import threaded_kernel
from ._graphs import Structure, kdb, kdb_from_scores
from ._specs import tree_specs

#: m of the leave-one-out m-estimates (Schurmann–Grassberger's law)
DEFAULT_LOO_M = 1.0
#: ``selection_rows="auto"`` (``ESKDBClassifier``'s default): an ensemble member scores its
#: candidates on a sample of ``max(SELECTION_ROWS_MIN, SELECTION_ROWS_PER_CLASS x classes)``
#: training rows when there are more (:func:`auto_selection_rows`): a few thousand rows'
#: predictions per member, and more with many classes, whose rare classes a small sample
#: barely holds (the stability of the choice: docs/performance.md, "Selection on a sample of
#: the rows").
SELECTION_ROWS_MIN = 5000
SELECTION_ROWS_PER_CLASS = 1000
ENSEMBLE_SELECTION_ROWS = "auto"


def auto_selection_rows(n_classes: int) -> int:
    """The rows ``selection_rows="auto"`` scores: ``max(5000, 1000 x n_classes)``."""
    return max(SELECTION_ROWS_MIN, SELECTION_ROWS_PER_CLASS * int(n_classes))


@dataclass(frozen=True, eq=False)
class SelectedStructure:
    """The outcome of selective kDB.

    Attributes
    ----------
    structure : Structure
        A kDB-``k_selected`` structure over all attributes (kind ``"kdb"``): the selected
        attributes keep their first ``k_selected`` kDB-K parents (branching order); the others
        have no attribute parents and are *dropped from the model*: only ``attributes`` get a
        context tree.
    attributes : tuple of int
        The selected attributes, in the order of ``full_structure.order`` (decreasing mutual
        information with the class unless an order was given): ``structure.order[:n_selected]``.
    n_selected : int
        ``n*``, the number of attributes kept (``1 <= n* <= n``).
    k_selected : int
        ``k*``, the number of attribute parents used (``0 <= k* <= max_k``).
    max_k : int
        The ``K`` searched (``k`` of :func:`select_skdb`).
    m : float
        m of the leave-one-out m-estimates.
    rmse : ndarray of shape (n_attributes, max_k + 1)
        Leave-one-out RMSE of every candidate: ``rmse[n* - 1, k*]`` (read-only).
    full_structure : Structure
        The kDB-K structure the candidates are taken from.
    """

    structure: Structure
    attributes: tuple[int, ...]
    n_selected: int
    k_selected: int
    max_k: int
    m: float
    rmse: np.ndarray
    full_structure: Structure

    def to_dict(self) -> dict:
        """JSON-serialisable form (used by model files); :meth:`from_dict` inverts it."""
        return {
            "structure": self.structure.to_dict(),
            "attributes": [int(a) for a in self.attributes],
            "n_selected": int(self.n_selected),
            "k_selected": int(self.k_selected),
            "max_k": int(self.max_k),
            "m": float(self.m),
            "rmse": np.asarray(self.rmse, dtype=float).tolist(),
            "full_structure": self.full_structure.to_dict(),
        }

    @classmethod
    def from_rmse(cls, full_structure: Structure, rmse: np.ndarray, m: float) -> SelectedStructure:
        """The selection with the lowest leave-one-out RMSE; ties to fewer attributes, then to
        a smaller k* (``rmse[n* - 1, k*]``, as :func:`loo_scores` returns it)."""
        rmse = np.array(rmse, dtype=np.float64)
        rmse.flags.writeable = False
        n_sel, k_sel = _best(rmse)
        return cls(
            structure=selective_structure(full_structure, n_sel, k_sel),
            attributes=tuple(full_structure.order[:n_sel]),
            n_selected=n_sel,
            k_selected=k_sel,
            max_k=full_structure.k,
            m=m,
            rmse=rmse,
            full_structure=full_structure,
        )

    @classmethod
    def from_dict(cls, data: dict) -> SelectedStructure:
        """Rebuild a selection written by :meth:`to_dict`."""
        rmse = np.array(data["rmse"], dtype=np.float64)
        rmse.flags.writeable = False
        return cls(
            structure=Structure.from_dict(data["structure"]),
            attributes=tuple(int(a) for a in data["attributes"]),
            n_selected=int(data["n_selected"]),
            k_selected=int(data["k_selected"]),
            max_k=int(data["max_k"]),
            m=float(data["m"]),
            rmse=rmse,
            full_structure=Structure.from_dict(data["full_structure"]),
        )

    def __repr__(self) -> str:
        best = float(self.rmse[self.n_selected - 1, self.k_selected])
        return (
            f"SelectedStructure(n*={self.n_selected} of {self.structure.n_attributes}, "
            f"k*={self.k_selected} of {self.max_k}, LOO RMSE={best:.4f})"
        )


# ====================================================================== records
# numba types a NamedTuple field by field, so the scalars of LooSettings must always be built
# with the same Python types (loo_settings converts): another type would compile (and cache)
# another specialisation of every kernel.
class LooModel(NamedTuple):
    """The kDB-K trees as the kernels read them (in structure order).

    Tree ``a`` conditions on the class then ``cond_cols[cond_ptr[a]:cond_ptr[a + 1]]`` (its
    kDB-K parents in branching order); its nodes are node records
    (:mod:`fastpath.counts._records`: a node's row count, its counts and its children side by
    side, 32-bit when they fit), its root's from ``records[root[a]]``, and its nodes of depth
    ``depth[a]`` are leaves. A descent reads one node's record per step: the kernels' cost is
    reading the trees, and separate arrays of 64-bit integers (totals, slot offsets, slots,
    counts) touched four cache lines per step.
    """

    child_col: np.ndarray
    cond_ptr: np.ndarray
    cond_cols: np.ndarray
    n_values: np.ndarray
    depth: np.ndarray
    root: np.ndarray
    records: np.ndarray
    class_counts: np.ndarray


class LooSettings(NamedTuple):
    """How the leave-one-out kernels score, as typed scalars (build with :func:`loo_settings`).

    Attributes
    ----------
    m : float
        m of the m-estimates.
    value_backoff : bool
        The m-estimates' ``backoff="value"`` rule (a value whose count at a node, without the
        held-out row, is zero takes its parent's entry), else ``"path"``
        (:func:`fastpath.estimate.m_estimate_table`).
    max_k : int
        ``K``: the errors are computed for ``k* = 0..max_k``.
    n_rows : float
        Rows the counts were taken from (the whole data's, out of core).
    """

    m: float
    value_backoff: bool
    max_k: int
    n_rows: float


def loo_settings(m: float, value_backoff: bool, max_k: int, n_rows: int) -> LooSettings:
    """:class:`LooSettings` with the field types the kernels are compiled for."""
    return LooSettings(float(m), bool(value_backoff), int(max_k), float(n_rows))


# ====================================================================== kernels
#: the leave-one-out kernels' class scores are products of probabilities; their sum is divided
#: out only once it falls below this (an error needs only the held-out row's share), far above
#: the smallest double
RESCALE_BELOW = 1e-100


@njit(cache=True, nogil=True)
def loo_row_scratch(n_classes, max_k):
    """The work arrays of :func:`loo_row_errors`: ``cum`` (max_k + 1, n_classes) float,
    ``prob`` (n_classes, max_k + 2) float, ``nodes`` (2, n_classes) int64."""
    return (np.empty((max_k + 1, n_classes)), np.empty((n_classes, max_k + 2)),
            np.empty((2, n_classes), dtype=np.int64))


@njit(cache=True, nogil=True)
def loo_row_errors(codes, y, r, model, settings, cum, prob, nodes, out):
    """Squared leave-one-out errors of row ``r``: out[a, k*] for n* = a + 1, every k*.

    ``model`` is a :class:`LooModel` (trees in the structure's order), ``settings`` a
    :class:`LooSettings`; ``cum``, ``prob`` and ``nodes`` are scratch
    (:func:`loo_row_scratch`). Shared by the in-memory kernel below and the streaming pass
    (:mod:`fastpath.scale._stats`), so both compute the same floating-point numbers.

    The class posteriors are kept as probabilities, not logarithms: each attribute multiplies
    them by its estimates, and the error of every (n*, k*) reads the held-out row's share of
    their sum after every attribute. No logarithm or exponential is taken (they were most of
    the kernel's time). The scores are divided by their sum only when it falls below
    :data:`RESCALE_BELOW` (dividing every class after every attribute cost as much as the
    descents), which keeps the largest class above ``1e-100 / n_classes``: nothing underflows
    that matters to an error.

    A tree is descended for every class level by level, all the classes' paths one step at a
    time (``nodes[0, c]`` where class ``c``'s path is, ``nodes[1, c]`` its depth so far): a
    step is a chain of dependent reads (the child's position, then its counts), and the
    classes' chains are independent, so the processor overlaps them, where one class after
    the other waited for each read in turn (docs/performance.md). Each class's arithmetic is
    what it was, so the errors are the same floats.
    """
    # the records' fields as locals, so that the loops index plain arrays
    child_col = model.child_col
    cond_ptr = model.cond_ptr
    cond_cols = model.cond_cols
    n_values = model.n_values
    depth = model.depth
    root = model.root
    records = model.records
    class_counts = model.class_counts
    m = settings.m
    value_backoff = settings.value_backoff
    n_rows = settings.n_rows
    max_k = settings.max_k
    n_classes = class_counts.shape[0]
    n_trees = child_col.shape[0]
    n_k = max_k + 1
    n_minus = n_rows - 1.0
    yr = y[r]
    node = nodes[0]
    deepest = nodes[1]
    for c in range(n_classes):
        nc = class_counts[c] - (1 if c == yr else 0)
        # class prior: m-estimate of the class tree's root without row r
        p = (nc + m / n_classes) / (n_minus + m)
        for k in range(n_k):
            cum[k, c] = p
    for a in range(n_trees):
        x = codes[r, child_col[a]]
        kv = n_values[a]
        top = root[a]
        # the steps below the class: a node of depth depth[a] is a leaf
        n_steps = min(cond_ptr[a + 1] - cond_ptr[a] + 1, depth[a])
        root_x = records[top + 1 + x] - 1
        root_total = records[top] - 1
        # empty tree, or x seen only in row r: 1/K at every node (mestimate), no descent
        empty = root_total <= 0 or root_x <= 0
        p0 = 1.0 / kv if empty else (root_x + m / kv) / (root_total + m)
        for c in range(n_classes):
            prob[c, 0] = p0
            deepest[c] = 0
            node[c] = top
        alive = 0 if empty else n_classes
        d = 1
        while alive > 0 and d <= n_steps:
            # the class first, then the parents in branching order
            v = -1 if d == 1 else codes[r, cond_cols[cond_ptr[a] + d - 2]]
            alive = 0
            for c in range(n_classes):
                at = node[c]
                if at < 0:
                    continue  # this class's path stopped above
                node[c] = -1
                child = find_child(records, at, kv, c if d == 1 else v)
                if child < 0:
                    continue  # path never observed: back off
                # row r lies on the path only when the path's class is its class
                on = 1 if c == yr else 0
                total = records[child] - on
                if total <= 0:
                    continue  # observed only in row r: absent from the refit
                cnt = records[child + 1 + x] - on
                if value_backoff and cnt <= 0:
                    prob[c, d] = prob[c, d - 1]
                else:
                    prob[c, d] = (cnt + m / kv) / (total + m)
                deepest[c] = d
                node[c] = child
                alive += 1
            d += 1
        for c in range(n_classes):
            reached = deepest[c]
            for k in range(n_k):
                cum[k, c] *= prob[c, min(k + 1, reached)]
        for k in range(n_k):
            s = 0.0
            for c in range(n_classes):
                s += cum[k, c]
            err = 1.0 - cum[k, yr] / s
            out[a, k] = err * err
            if s < RESCALE_BELOW:  # rescaled, not renormalised per attribute: no underflow
                for c in range(n_classes):
                    cum[k, c] /= s


@njit(cache=True, nogil=True)
def loo_row_model_error(codes, y, r, model, settings, cum, prob):
    """Squared leave-one-out error of row ``r`` under the whole model, every tree at its full
    depth: ``out[-1, max_k]`` of :func:`loo_row_errors` (``settings.max_k`` the most parents
    of any tree), the same floating-point number, without the other ``(n*, k*)``. ``cum``
    (n_classes) and ``prob`` (max_k + 2) are scratch.

    The descent is :func:`loo_row_errors`'s, written out again on purpose: shared as a numba
    function, even inlined (``inline="always"``), it made both kernels slower (docs/performance.md,
    "The leave-one-out kernels"). ``tests/test_selective.py`` holds the two to the same numbers.
    """
    # the records' fields as locals, so that the loops index plain arrays
    child_col = model.child_col
    cond_ptr = model.cond_ptr
    cond_cols = model.cond_cols
    n_values = model.n_values
    depth = model.depth
    root = model.root
    records = model.records
    class_counts = model.class_counts
    m = settings.m
    value_backoff = settings.value_backoff
    n_rows = settings.n_rows
    n_classes = class_counts.shape[0]
    n_minus = n_rows - 1.0
    yr = y[r]
    for c in range(n_classes):
        nc = class_counts[c] - (1 if c == yr else 0)
        cum[c] = (nc + m / n_classes) / (n_minus + m)
    s = 1.0
    for a in range(child_col.shape[0]):
        x = codes[r, child_col[a]]
        kv = n_values[a]
        top = root[a]
        n_steps = min(cond_ptr[a + 1] - cond_ptr[a] + 1, depth[a])
        root_x = records[top + 1 + x] - 1
        root_total = records[top] - 1
        for c in range(n_classes):
            deepest = 0
            if root_total <= 0 or root_x <= 0:
                prob[0] = 1.0 / kv
            else:
                prob[0] = (root_x + m / kv) / (root_total + m)
                on = 1 if c == yr else 0
                node = top
                for d in range(1, n_steps + 1):
                    v = c if d == 1 else codes[r, cond_cols[cond_ptr[a] + d - 2]]
                    child = find_child(records, node, kv, v)
                    if child < 0:
                        break
                    total = records[child] - on
                    if total <= 0:
                        break
                    cnt = records[child + 1 + x] - on
                    if value_backoff and cnt <= 0:
                        prob[d] = prob[d - 1]
                    else:
                        prob[d] = (cnt + m / kv) / (total + m)
                    deepest = d
                    node = child
            cum[c] *= prob[deepest]
        # summed, and rescaled when small, after every attribute, as loo_row_errors does, for
        # the same numbers
        s = 0.0
        for c in range(n_classes):
            s += cum[c]
        if s < RESCALE_BELOW:
            for c in range(n_classes):
                cum[c] /= s
            s = 1.0  # what they now sum to: cum[yr] / 1.0 is loo_row_errors' cum[yr] / s
    err = 1.0 - cum[yr] / s
    return err * err


@threaded_kernel
def _loo_kernel(codes, y, model, settings, chunk_starts, keep, sse):
    """Leave-one-out squared errors of every (n*, k*), chunk by chunk (sse[chunk, n* - 1, k*]),
    over the rows ``keep`` marks (:func:`loo_sample_mask`; empty: every row).

    Chunks run in parallel; within a chunk the rows' errors are added in row order, so the
    sums do not depend on the number of threads.
    """
    sampled = keep.shape[0] > 0
    n_classes = model.class_counts.shape[0]
    n_trees = model.child_col.shape[0]
    max_k = settings.max_k
    for h in prange(chunk_starts.shape[0] - 1):
        cum, prob, nodes = loo_row_scratch(n_classes, max_k)
        row = np.empty((n_trees, max_k + 1))
        for r in range(chunk_starts[h], chunk_starts[h + 1]):
            if sampled and keep[r] == 0:
                continue
            loo_row_errors(codes, y, r, model, settings, cum, prob, nodes, row)
            for a in range(n_trees):
                for k in range(max_k + 1):
                    sse[h, a, k] += row[a, k]


# ====================================================================== python API
def loo_model(specs: Sequence[TreeSpec], trees: Sequence, class_counts) -> LooModel:
    """The attribute trees (``specs`` without the class prior) as the kernels read them."""
    return _loo_model(specs, tree_records(trees), class_counts)


def accumulated_loo_model(specs: Sequence[TreeSpec], acc: CountAccumulator, class_counts,
                          indices: Sequence[int] | None = None) -> LooModel:
    """:func:`loo_model` of the trees of ``acc`` (an accumulator of ``specs``, or of more
    specs whose tables ``indices`` are ``specs``), built straight from its leaves: the same
    integers, without a :class:`~fastpath.counts.ContextTree` per tree or a lookup slot per
    value."""
    return _loo_model(specs, accumulated_records(acc, indices), class_counts)


def _loo_model(specs: Sequence[TreeSpec], trees: TreeRecords, class_counts) -> LooModel:
    cond_ptr = np.zeros(len(specs) + 1, np.int64)
    cond_ptr[1:] = np.cumsum([len(s.conditioning) - 1 for s in specs])
    return LooModel(
        child_col=np.asarray([s.child for s in specs], np.int64),
        cond_ptr=cond_ptr,
        cond_cols=np.asarray([c for s in specs for c in s.conditioning[1:]], np.int64),
        n_values=np.asarray([s.n_values for s in specs], np.int64),
        depth=trees.depth,
        root=trees.root,
        records=trees.records,
        class_counts=np.asarray(class_counts, np.int64),
    )


def loo_chunk_starts(n_rows: int) -> np.ndarray:
    """Row chunks whose errors are summed separately, then added in chunk order.

    A fixed chunking (not the thread count) keeps the summation order, hence the result,
    independent of the number of threads, in memory and out of core alike.
    """
    n_chunks = max(1, min(n_rows, 64))
    return np.linspace(0, n_rows, n_chunks + 1).round().astype(np.int64)


def loo_sample_threshold(n_rows: int, max_rows: int | None, key: int) -> np.uint64 | None:
    """The hash threshold of a sampled leave-one-out selection of ``max_rows`` of ``n_rows``
    rows (:func:`loo_sample_mask`), or None when every row is scored (``max_rows`` None or at
    least ``n_rows``)."""
    if max_rows is None or max_rows >= n_rows:
        return None
    return hash_threshold(n_rows, max_rows, key)


def loo_sample_mask(first_row: int, n: int, threshold: np.uint64 | None, key: int
                    ) -> np.ndarray:
    """Which of the rows ``first_row .. first_row + n - 1`` (positions in the whole data) a
    sampled leave-one-out selection scores: the rows of the data whose seeded hash of their
    position is at most ``threshold`` (:func:`loo_sample_threshold`: the ``max_rows`` smallest,
    :mod:`fastpath.utils._rows`).

    A function of the positions alone, so a fit in memory and one that reads the rows in chunks
    of any size score the same rows. Returns ``uint8`` flags (1: scored), or an empty array when
    every row is scored (``threshold`` None).
    """
    if threshold is None:
        return np.empty(0, np.uint8)
    return (row_hashes(first_row, first_row + n, key) <= threshold).astype(np.uint8)


def _check_m(m) -> float:
    if isinstance(m, bool) or not isinstance(m, numbers.Real):
        raise ValueError(f"m must be a positive number, got {m!r}")
    m = float(m)
    if not math.isfinite(m) or m <= 0:
        # m = 0 gives zero probabilities, hence -inf log-joints, for unseen combinations
        raise ValueError(f"m must be a positive finite number, got {m}")
    return m


def _check_codes(codes, y_codes, cardinalities, n_classes):
    codes = np.asarray(codes)
    y_codes = np.asarray(y_codes)
    if codes.ndim != 2:
        raise ValueError(f"codes must be 2-D (n_rows, n_attributes), got shape {codes.shape}")
    if y_codes.ndim != 1 or y_codes.shape[0] != codes.shape[0]:
        raise ValueError(
            f"y_codes must be 1-D with one entry per row ({codes.shape[0]}), "
            f"got shape {y_codes.shape}"
        )
    if codes.shape[0] < 2:
        raise ValueError(f"leave-one-out needs at least 2 rows, got {codes.shape[0]}")
    if codes.shape[1] < 1:
        raise ValueError("codes must have at least one attribute column")
    for name, a in (("codes", codes), ("y_codes", y_codes)):
        if not np.issubdtype(a.dtype, np.integer):
            raise TypeError(f"{name} must hold integer codes, got dtype {a.dtype}")
    if codes.min() < 0:
        raise ValueError("codes must be non-negative (unknown values cannot be counted)")
    cards = tuple(int(c) for c in cardinalities)
    if len(cards) != codes.shape[1]:
        raise ValueError(
            f"cardinalities must give one value per attribute ({codes.shape[1]}), got {len(cards)}"
        )
    if isinstance(n_classes, bool) or int(n_classes) != n_classes or int(n_classes) < 1:
        raise ValueError(f"n_classes must be an integer >= 1, got {n_classes!r}")
    return (
        np.ascontiguousarray(codes, dtype=np.int64),
        np.ascontiguousarray(y_codes, dtype=np.int64),
        cards,
        int(n_classes),
    )


def loo_scores(
    codes: np.ndarray,
    y_codes: np.ndarray,
    cardinalities: Sequence[int],
    n_classes: int,
    full_structure: Structure,
    *,
    m: float = DEFAULT_LOO_M,
    max_rows: int | None = None,
    sample_key: int = 0,
) -> np.ndarray:
    """Incremental leave-one-out RMSE of every (n*, k*) under a kDB-K structure.

    Parameters
    ----------
    codes : array of int, shape (n_rows, n_attributes)
    y_codes : array of int, shape (n_rows,)
    cardinalities : sequence of int
    n_classes : int
    full_structure : Structure
        A kDB-K structure (``kind == "kdb"``), e.g. from :func:`fastpath.structure.kdb`.
    m : float, default=1.0
        Mass of the m-estimates (positive).
    max_rows : int, optional
        Score this many rows instead of all (a sample drawn by :func:`loo_sample_mask` with
        ``sample_key``); the counts, hence the models scored, are still those of every row.
        None (default), or at least ``n_rows``: every row.
    sample_key : int
        The sample's key (the same key scores the same rows).

    Returns
    -------
    ndarray of shape (n_attributes, K + 1)
        ``out[n* - 1, k*]``: the RMSE, over the training rows (or the sampled ones), of the
        kDB-k* classifier on the first ``n*`` attributes of ``full_structure.order`` with
        m-estimates fitted on all rows but the one predicted.
    """
    codes, y_codes, cards, n_classes = _check_codes(codes, y_codes, cardinalities, n_classes)
    m = _check_m(m)
    _check_scored(codes, y_codes, cards, n_classes, full_structure)
    return _counted_loo_scores(codes, y_codes, cards, n_classes, full_structure, m, max_rows,
                               sample_key).rmse


def _check_scored(codes, y_codes, cards, n_classes, full_structure) -> None:
    """What :func:`loo_scores` checks beyond :func:`_check_codes`: a kDB structure of the
    codes' attributes, codes within the cardinalities and classes."""
    if not isinstance(full_structure, Structure) or full_structure.kind != "kdb":
        raise ValueError("full_structure must be a kDB Structure (fastpath.structure.kdb)")
    if full_structure.n_attributes != codes.shape[1]:
        raise ValueError(
            f"full_structure has {full_structure.n_attributes} attributes, codes has "
            f"{codes.shape[1]}"
        )
    if y_codes.max() >= n_classes:
        raise ValueError(f"class codes must lie in [0, {n_classes}), got {int(y_codes.max())}")
    bad = np.flatnonzero(codes.max(axis=0) >= np.asarray(cards))
    if bad.size:
        j = int(bad[0])
        raise ValueError(f"codes of attribute {j} must lie in [0, {cards[j]})")


class CountedScores(NamedTuple):
    """:func:`loo_scores`' RMSE, and the counts it scored from: every row counted into the
    class prior's tree and every attribute's kDB-K tree (``specs``, in ``full_structure``'s
    order), from which the selected model's trees are read off
    (:class:`~fastpath.counts._counting.ProjectedCounts`) instead of counted again."""

    rmse: np.ndarray
    counts: CountAccumulator
    specs: list[TreeSpec]


def _counted_loo_scores(codes, y_codes, cards, n_classes, full_structure, m, max_rows,
                        sample_key) -> CountedScores:
    """:func:`loo_scores` on checked inputs, with the counts it scored from."""
    max_k = full_structure.k
    counted = tree_specs(full_structure, cards, n_classes, full_structure.order)
    acc = CountAccumulator(counted, n_rows=codes.shape[0]).update(codes, y_codes)
    specs = counted[1:]  # the attributes' trees; the class prior is read from class_counts
    model = accumulated_loo_model(specs, acc, np.bincount(y_codes, minlength=n_classes),
                                  range(1, len(counted)))

    n_rows = codes.shape[0]
    # a fixed chunking (not the thread count) keeps the summation order, hence the result,
    # independent of the number of threads
    chunk_starts = loo_chunk_starts(n_rows)
    sse = np.zeros((chunk_starts.size - 1, len(specs), max_k + 1))
    keep = loo_sample_mask(0, n_rows, loo_sample_threshold(n_rows, max_rows, sample_key),
                           sample_key)
    _loo_kernel(codes, y_codes, model, loo_settings(m, False, max_k, n_rows), chunk_starts,
                keep, sse)
    return CountedScores(np.sqrt(sse.sum(axis=0) / min(n_rows, max_rows or n_rows)), acc,
                         counted)


def full_depth(specs: Sequence[TreeSpec]) -> int:
    """The most parents any attribute tree of ``specs`` has (its k index at full depth)."""
    return max((len(s.conditioning) - 1 for s in specs), default=0)


def full_model_rmse(sse: np.ndarray, n_rows: int) -> float:
    """RMSE of the whole model from summed leave-one-out errors ``sse[tree, k*]``: every tree
    (the last cumulative row) with all its parents (the last k*)."""
    return float(np.sqrt(sse[-1, -1] / n_rows))


def _best(rmse: np.ndarray) -> tuple[int, int]:
    """(n*, k*) with the lowest RMSE; ties to fewer attributes, then smaller k*."""
    flat = int(np.argmin(rmse))  # row-major: the first minimum has the smallest (n*, k*)
    i, k = np.unravel_index(flat, rmse.shape)
    return int(i) + 1, int(k)


def selective_structure(full_structure: Structure, n_selected: int, k_selected: int) -> Structure:
    """The kDB-k* structure on the first n* attributes of ``full_structure.order``.

    Selected attributes keep their first ``k_selected`` parents (nested kDB parent sets);
    the other attributes get none (they are dropped from the model by its user).
    """
    if full_structure.kind != "kdb":
        raise ValueError("full_structure must be a kDB structure")
    n = full_structure.n_attributes
    if not 1 <= n_selected <= n:
        raise ValueError(f"n_selected must lie in [1, {n}], got {n_selected}")
    if not 0 <= k_selected <= full_structure.k:
        raise ValueError(f"k_selected must lie in [0, {full_structure.k}], got {k_selected}")
    keep = set(full_structure.order[:n_selected])
    parents = tuple(
        tuple(full_structure.parents[i][:k_selected]) if i in keep else () for i in range(n)
    )
    if (full_structure.mutual_information is None
            or full_structure.conditional_mutual_information is None):
        return Structure(
            kind="kdb", parents=parents, order=full_structure.order, k=k_selected,
            mutual_information=full_structure.mutual_information,
            conditional_mutual_information=full_structure.conditional_mutual_information)
    # a sub-structure of a valid kDB (prefixes of its parent sets): valid by construction,
    # and its scores are the full structure's read-only arrays
    return Structure._learned(
        "kdb", parents, full_structure.order, k_selected, full_structure.mutual_information,
        full_structure.conditional_mutual_information)


def select_skdb(
    codes: np.ndarray,
    y_codes: np.ndarray,
    cardinalities: Sequence[int],
    n_classes: int,
    k: int,
    *,
    m: float = DEFAULT_LOO_M,
    order: Sequence[int] | None = None,
    max_rows: int | None = None,
    sample_key: int = 0,
    scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> SelectedStructure:
    """Selective kDB: kDB-k structure, then (n*, k*) by incremental leave-one-out RMSE.

    Parameters
    ----------
    codes : array of int, shape (n_rows, n_attributes)
        Attribute codes (no unknown values), e.g. ``TableEncoder.transform`` of training data.
    y_codes : array of int, shape (n_rows,)
        Class codes in ``[0, n_classes)``.
    cardinalities : sequence of int
    n_classes : int
    k : int
        ``K``, the largest number of attribute parents considered.
    m : float, default=1.0
        m of the m-estimates used for the leave-one-out scores (fixed, positive).
    order : sequence of int, optional
        A permutation of the attributes, passed to :func:`fastpath.structure.kdb`: the kDB-k
        parents come earlier in it and the candidates are its prefixes. Default: decreasing
        ``I(X_j; Y)`` (Martinez et al. 2016). ESKDB (Zhang, Petitjean & Buntine, KAIS 2020)
        gives each ensemble member an order from
        :func:`~fastpath.structure._orders.sample_order`.
    max_rows, sample_key :
        Score (n*, k*) on a sample of ``max_rows`` rows (:func:`loo_scores`).
    scores : (mutual information, conditional mutual information), optional
        The scores of ``codes`` when the caller has them (e.g. from a
        :class:`~fastpath.structure._scores.ScoreCache`), as
        :func:`~fastpath.structure._scores.mutual_information_scores` gives them.

    Returns
    -------
    SelectedStructure
    """
    return counted_select_skdb(codes, y_codes, cardinalities, n_classes, k, m=m, order=order,
                               max_rows=max_rows, sample_key=sample_key, scores=scores)[0]


def counted_select_skdb(
    codes: np.ndarray,
    y_codes: np.ndarray,
    cardinalities: Sequence[int],
    n_classes: int,
    k: int,
    *,
    m: float = DEFAULT_LOO_M,
    order: Sequence[int] | None = None,
    max_rows: int | None = None,
    sample_key: int = 0,
    scores: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[SelectedStructure, CountedScores]:
    """:func:`select_skdb`, with the scores and the counts they came from
    (:class:`CountedScores`): the fit reads the selected model's trees off them."""
    codes, y_codes, cards, n_classes = _check_codes(codes, y_codes, cardinalities, n_classes)
    m = _check_m(m)
    full = (kdb(codes, y_codes, cards, n_classes, k, order) if scores is None
            else kdb_from_scores(*scores, k, order))
    _check_scored(codes, y_codes, cards, n_classes, full)
    counted = _counted_loo_scores(codes, y_codes, cards, n_classes, full, m, max_rows,
                                  sample_key)
    return SelectedStructure.from_rmse(full, counted.rmse, m), counted


# the kernels compile fastpath.counts._records' find_child into their own cache entries
flush_stale_cache(globals(), [_records])
