"""Bounded-memory statistics for discretising numeric columns that are never held in memory.

MDL discretisation (:mod:`._discretize`, Fayyad & Irani 1993 as Weka computes it) looks at
a numeric column only through its *sorted class counts*: the candidate cuts are the midpoints
between consecutive distinct values, and every quantity of the criterion (class entropies of
the two sides, the number of rows ``N`` of the subset, the classes present) is a function of the
cumulative class counts at those candidates. So a table

    distinct value -> number of rows of each class

is a sufficient statistic, and :func:`mdl_cut_points_from_counts` computes, from it, exactly the
cut points :func:`~fastpath.encode.mdl_cut_points` computes from the rows (same
floating-point operations in the same order, so bit for bit).
:func:`stochastic_mdl_cut_points_from_counts` does the same for ESKDB's stochastic MDL
(:func:`~fastpath.encode.stochastic_mdl_cut_points`): its draws are keyed by range index, so
on the exact table it gives the column's cut points for the same seed.

:class:`ClassHistogram` is that table with a memory bound: a sorted list of at most
``max_bins`` disjoint value ranges ``[lo, hi]`` with the class counts of the rows in each range.

* While the column has at most ``max_bins`` distinct values (integer-valued attributes,
  categories coded as numbers, rounded measurements) every range is a single value and the
  histogram is the exact table above: the cut points equal the in-memory MDL cut points.
* Beyond that the histogram *compresses*: first it merges neighbouring ranges whose class
  proportions are identical (a cut between two such ranges never has a lower class entropy
  than a cut at the ends of the run — Fayyad & Irani's boundary-point argument, generalised by
  Elomaa & Rousu 2004 — so this loses no useful candidate); then, if still too long, it merges
  neighbours into about ``max_bins / 2`` ranges of roughly equal row counts (equal-frequency
  fine bins). MDL then runs over the ranges: candidate cuts are restricted to range boundaries
  and a cut is the midpoint between the largest value of one range and the smallest of the
  next, i.e. again the midpoint of two consecutive *observed* values. Each candidate is then
  within one fine bin (about ``2 N / max_bins`` rows) of a candidate of the in-memory search,
  but MDL's recursive splitting is sensitive to small changes on noisy data, so individual cut
  points can move further and their number can change by a few; ``docs/scale.md`` measures
  the effect on cut points and accuracy.

A row adds to the range that contains its value, or starts a new single-value range between
two ranges. Two histograms merge the same way, range by range (:meth:`ClassHistogram.merge`):
a range of one joins the range of the other that it overlaps (whose bounds are kept, so
after merging compressed histograms a few rows can lie just outside their range's bounds:
one more approximation of the same size), or is inserted in a gap. Memory is
``O(max_bins x n_classes)`` per column whatever the number of rows. While every range is a
single value the result does not depend on how the rows were split into chunks or
partitions; afterwards it is deterministic for a given chunking.

Class labels are provisional column indices (their order of first appearance in a stream);
:meth:`ClassHistogram.cut_points` takes the permutation to the final class order, because the
entropies sum over classes in that order.
"""

from __future__ import annotations

import numpy as np

from ._discretize import (
    RANDOM_BINS,
    mdl_bins_kernel,
    random_cuts_kernel,
    stochastic_mdl_kernel,
    stochastic_seed,
)

#: default bound on the number of ranges of a :class:`ClassHistogram`
DEFAULT_MAX_BINS = 4096


# ====================================================================== MDL over counts
def _checked_ranges(
    lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, name: str | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``lo``, ``hi``, ``counts`` as contiguous float64/int64 arrays, or ``ValueError``."""
    label = f"column {name!r}" if name is not None else "histogram"
    lo = np.ascontiguousarray(lo, dtype=np.float64)
    hi = np.ascontiguousarray(hi, dtype=np.float64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    if lo.ndim != 1 or lo.shape != hi.shape or counts.ndim != 2 or counts.shape[0] != lo.size:
        raise ValueError(
            f"{label}: lo and hi must be (B,) and counts (B, n_classes), got {lo.shape}, "
            f"{hi.shape} and {counts.shape}"
        )
    if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(hi))):
        raise ValueError(f"{label}: range bounds must be finite")
    if np.any(lo > hi) or np.any(hi[:-1] >= lo[1:]):
        raise ValueError(f"{label}: ranges must be sorted and disjoint")
    if counts.size and counts.min() < 0:
        raise ValueError(f"{label}: counts must be non-negative")
    if counts.shape[1] < 1:
        raise ValueError(f"{label}: counts needs at least one class column")
    return lo, hi, counts


def mdl_cut_points_from_counts(
    lo: np.ndarray, hi: np.ndarray, counts: np.ndarray, *, name: str | None = None
) -> np.ndarray:
    """Fayyad & Irani MDL cut points from sorted value ranges and their class counts.

    Parameters
    ----------
    lo, hi : array of float, shape (B,)
        Smallest and largest value of each range; finite, ``lo <= hi`` and
        ``hi[i] < lo[i + 1]`` (sorted, disjoint).
    counts : array of int, shape (B, n_classes)
        Rows of each class in each range, classes in their final order.
    name : str, optional
        Column name, for error messages.

    Returns
    -------
    ndarray of float64
        Strictly increasing cut points, each the midpoint ``(hi[i] + lo[i + 1]) / 2`` of two
        neighbouring ranges. When every range is one distinct value (``lo == hi``) this is
        exactly :func:`fastpath.encode.mdl_cut_points` of the underlying rows.
    """
    lo, hi, counts = _checked_ranges(lo, hi, counts, name)
    if lo.size < 2:
        return np.empty(0, dtype=np.float64)
    return mdl_bins_kernel(lo, hi, counts)


def stochastic_mdl_cut_points_from_counts(
    lo: np.ndarray,
    hi: np.ndarray,
    counts: np.ndarray,
    random_state,
    *,
    name: str | None = None,
    forced_cut: bool = True,
) -> np.ndarray:
    """ESKDB's stochastic MDL cut points from sorted value ranges and their class counts.

    Zhang, Petitjean & Buntine (2020), Bayesian network classifiers using ensembles and
    smoothing, KAIS 62. At each subset every candidate cut (a range boundary) whose gain
    ``Ent(S) - E(A, T; S)`` is positive and exceeds its own MDL threshold
    ``(log2(N - 1) + delta(T)) / N`` is admissible; the cut is drawn among the admissible ones
    with probability proportional to gain minus threshold, and both halves recurse; with no
    admissible cut the subset is not split, except the whole column, which the authors' rule
    (``forced_cut``) gives one cut drawn in proportion to gain
    (:func:`fastpath.encode.stochastic_mdl_cut_points` states the criterion in full).

    Parameters
    ----------
    lo, hi, counts, name
        As in :func:`mdl_cut_points_from_counts` (same checks, same errors).
    random_state : None, int or numpy.random.Generator
        Source of randomness; one 64-bit integer is drawn from it per call.
    forced_cut : bool, default=True
        As in :func:`fastpath.encode.stochastic_mdl_cut_points`.

    Returns
    -------
    ndarray of float64
        Strictly increasing cut points. The draws are keyed by range index, so when every
        range is one distinct value this equals
        :func:`fastpath.encode.stochastic_mdl_cut_points` of the underlying rows for the same
        ``random_state`` (and, in that regime, does not depend on how the rows were chunked).
    """
    seed = stochastic_seed(random_state)  # drawn first: one draw per call, whatever the data
    lo, hi, counts = _checked_ranges(lo, hi, counts, name)
    if lo.size < 2:
        return np.empty(0, dtype=np.float64)
    return stochastic_mdl_kernel(lo, hi, counts, seed, bool(forced_cut))


# ====================================================================== the histogram
def _widen(counts, k):
    if counts.shape[1] >= k:
        return counts
    return np.concatenate([counts, np.zeros((counts.shape[0], k - counts.shape[1]), np.int64)], 1)


def _group(lo, hi, counts, starts):
    return lo[starts], np.maximum.reduceat(hi, starts), np.add.reduceat(counts, starts, axis=0)


class ClassHistogram:
    """Mergeable class counts of one numeric column over at most ``max_bins`` value ranges.

    Parameters
    ----------
    n_classes : int, default=0
        Initial number of class columns (grows with :meth:`update`).
    max_bins : int, default=DEFAULT_MAX_BINS
        Bound on the number of ranges kept between updates (at least 4).

    Attributes
    ----------
    lo, hi : ndarray of float64, shape (B,)
        Bounds of each range (sorted, disjoint).
    counts : ndarray of int64, shape (B, n_classes)
    n_rows : int
        Rows added (finite values only).
    """

    def __init__(self, n_classes: int = 0, max_bins: int = DEFAULT_MAX_BINS) -> None:
        if isinstance(max_bins, bool) or int(max_bins) != max_bins or max_bins < 4:
            raise ValueError(f"max_bins must be an integer >= 4, got {max_bins!r}")
        self.max_bins = int(max_bins)
        self.lo = np.empty(0, dtype=np.float64)
        self.hi = np.empty(0, dtype=np.float64)
        self.counts = np.zeros((0, int(n_classes)), dtype=np.int64)
        self.n_rows = 0

    @property
    def n_bins(self) -> int:
        return int(self.lo.size)

    @property
    def n_classes(self) -> int:
        return int(self.counts.shape[1])

    @property
    def exact(self) -> bool:
        """Whether every range is a single value (the histogram is then lossless)."""
        return bool(np.array_equal(self.lo, self.hi))

    def grow(self, n_classes: int) -> None:
        """Widen the histogram to ``n_classes`` provisional classes (new columns are zero)."""
        if n_classes > self.counts.shape[1]:
            extra = np.zeros((self.counts.shape[0], n_classes - self.counts.shape[1]), np.int64)
            self.counts = np.concatenate([self.counts, extra], axis=1)

    def update(self, x: np.ndarray, y: np.ndarray) -> ClassHistogram:
        """Add rows: finite values ``x`` with provisional class indices ``y`` (>= 0)."""
        x = np.asarray(x, dtype=np.float64).ravel()
        y = np.asarray(y, dtype=np.int64).ravel()
        if x.shape != y.shape:
            raise ValueError(f"x and y must have the same length, got {x.size} and {y.size}")
        if x.size == 0:
            return self
        if not np.all(np.isfinite(x)):
            raise ValueError("ClassHistogram.update takes finite values only")
        if y.min() < 0:
            raise ValueError("class indices must be non-negative")
        self.grow(int(y.max()) + 1)
        self.n_rows += int(x.size)
        k = self.n_classes
        if self.lo.size:
            # rows whose value lies in an existing range join it
            j = np.searchsorted(self.lo, x, side="right") - 1
            inside = j >= 0
            inside[inside] = x[inside] <= self.hi[j[inside]]
            if inside.any():
                self.counts += np.bincount(
                    j[inside] * k + y[inside], minlength=self.lo.size * k
                ).reshape(-1, k)
                x, y = x[~inside], y[~inside]
        if x.size:
            # the others start single-value ranges between the existing ones
            values, inverse = np.unique(x, return_inverse=True)
            new = np.bincount(inverse.ravel() * k + y, minlength=values.size * k).reshape(-1, k)
            lo = np.concatenate([self.lo, values])
            hi = np.concatenate([self.hi, values])
            counts = np.concatenate([self.counts, new])
            order = np.argsort(lo, kind="stable")
            self.lo, self.hi, self.counts = lo[order], hi[order], counts[order]
        if self.lo.size > self.max_bins:
            self._compress()
        return self

    def merge(self, other: ClassHistogram) -> ClassHistogram:
        """Add another histogram's rows (same class indices); returns self.

        The histogram with more ranges keeps its ranges; each range of the other joins the
        range that contains its smallest value, else the next range when it overlaps it,
        else it is inserted in the gap it lies in. Single-value ranges therefore merge
        exactly (equal values add up, distinct values stay apart), and compressed
        histograms whose ranges interleave do not collapse into one range.
        """
        k = max(self.n_classes, other.n_classes)
        self.grow(k)
        if other.n_bins > self.n_bins:
            base_lo, base_hi, base_counts = other.lo, other.hi, _widen(other.counts, k)
            lo, hi, counts = self.lo, self.hi, self.counts
        else:
            base_lo, base_hi, base_counts = self.lo, self.hi, self.counts
            lo, hi, counts = other.lo, other.hi, _widen(other.counts, k)
        base_counts = base_counts.copy()
        if base_lo.size and lo.size:
            j = np.searchsorted(base_lo, lo, side="right") - 1
            target = np.full(lo.size, -1, dtype=np.int64)
            inside = (j >= 0) & (lo <= base_hi[np.maximum(j, 0)])
            target[inside] = j[inside]
            nxt = j + 1
            overlaps_next = ~inside & (nxt < base_lo.size) & (
                hi >= base_lo[np.minimum(nxt, base_lo.size - 1)]
            )
            target[overlaps_next] = nxt[overlaps_next]
            joined = target >= 0
            np.add.at(base_counts, target[joined], counts[joined])
            lo, hi, counts = lo[~joined], hi[~joined], counts[~joined]
        all_lo = np.concatenate([base_lo, lo])
        order = np.argsort(all_lo, kind="stable")
        self.lo = all_lo[order]
        self.hi = np.concatenate([base_hi, hi])[order]
        self.counts = np.concatenate([base_counts, counts])[order]
        self.n_rows += other.n_rows
        if self.lo.size > self.max_bins:
            self._compress()
        return self

    def remap_classes(self, mapping: np.ndarray, n_classes: int) -> ClassHistogram:
        """Move class column ``c`` to ``mapping[c]`` in a table of ``n_classes`` columns."""
        mapping = np.asarray(mapping, dtype=np.int64)
        if mapping.size != self.n_classes:
            raise ValueError(
                f"mapping has {mapping.size} entries for {self.n_classes} class columns"
            )
        out = np.zeros((self.counts.shape[0], int(n_classes)), dtype=np.int64)
        out[:, mapping] = self.counts
        self.counts = out
        return self

    def _compress(self) -> None:
        lo, hi, counts = self.lo, self.hi, self.counts
        totals = counts.sum(axis=1)
        # 1. fuse neighbours with identical class proportions (no useful candidate is lost);
        #    the integer cross products are exact while counts stay below 3e9
        if totals.size > 1 and int(totals.max()) < 3_000_000_000:
            same = np.all(
                counts[:-1] * totals[1:, None] == counts[1:] * totals[:-1, None], axis=1
            )
            starts = np.flatnonzero(np.r_[True, ~same])
            if starts.size < lo.size:
                lo, hi, counts = _group(lo, hi, counts, starts)
                totals = counts.sum(axis=1)
        # 2. still too long: about max_bins / 2 ranges of equal row counts
        if lo.size > self.max_bins:
            target = self.max_bins // 2
            before = np.cumsum(totals) - totals
            group = (before * target) // max(int(totals.sum()), 1)
            starts = np.flatnonzero(np.r_[True, group[1:] != group[:-1]])
            lo, hi, counts = _group(lo, hi, counts, starts)
        self.lo, self.hi, self.counts = lo, hi, counts

    def cut_points(
        self, class_order: np.ndarray | None = None, *, name: str | None = None
    ) -> np.ndarray:
        """MDL cut points; ``class_order[j]`` is the class column of final class ``j``."""
        counts = self.counts if class_order is None else self.counts[:, np.asarray(class_order)]
        if counts.shape[1] == 0:
            return np.empty(0, dtype=np.float64)
        return mdl_cut_points_from_counts(self.lo, self.hi, counts, name=name)

    def stochastic_cut_points(
        self, random_state, class_order: np.ndarray | None = None, *, name: str | None = None
    ) -> np.ndarray:
        """ESKDB's stochastic MDL cut points (one draw from ``random_state``, even when the
        column has no class yet), classes ordered as in :meth:`cut_points`."""
        counts = self.counts if class_order is None else self.counts[:, np.asarray(class_order)]
        if counts.shape[1] == 0:
            stochastic_seed(random_state)  # the draw the in-memory encoder takes
            return np.empty(0, dtype=np.float64)
        return stochastic_mdl_cut_points_from_counts(self.lo, self.hi, counts, random_state,
                                                     name=name)

    def random_cut_points(self, random_state) -> np.ndarray:
        """Cut points at random resolution (:func:`~fastpath.encode._discretize.
        random_cuts_kernel`) of the ranges weighted by their rows: one draw from
        ``random_state``; the same cuts as the in-memory encoder's where the ranges are exact."""
        seed = stochastic_seed(random_state)  # the draw the in-memory encoder takes
        weights = self.counts.sum(axis=1).astype(np.float64)
        if weights.shape[0] < 2:
            return np.empty(0, dtype=np.float64)
        return random_cuts_kernel(self.lo, self.hi, weights, seed, RANDOM_BINS[0],
                                  RANDOM_BINS[1])
