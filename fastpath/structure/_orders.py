"""Attribute orders sampled in proportion to the mutual information with the class.

ESKDB (Zhang, Petitjean & Buntine, "Bayesian network classifiers using ensembles and
smoothing", Knowledge and Information Systems 62, 2020) builds an ensemble of selective kDBs
that differ in their attribute order: each member samples the order *without replacement with
probability proportional to* ``I(X_j; Y)``, then learns the usual kDB parents in that order
(:func:`fastpath.structure.kdb_from_scores` with ``order=``) and the SkDB selection over its
prefixes (:func:`fastpath.structure.select_skdb` with ``order=``). The authors' code keeps the
plain MI order (:func:`fastpath.structure._scores.mi_order`) for the first member; that choice
belongs to the ensemble, not to this module.

:func:`sample_order` draws one such order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numba import njit

from ..utils._validation import as_generator


def sample_order(mutual_information, random_state: Any = None) -> tuple[int, ...]:
    """An attribute order drawn by weighted sampling without replacement, weight ``I(X_j; Y)``.

    Sequential sampling (ESKDB, Zhang, Petitjean & Buntine, KAIS 2020): the first attribute is
    drawn with probability ``w_j / sum(w)``, the next from the remaining attributes with
    probability proportional to their weights, and so on. The probability of an order
    ``(j_1, ..., j_n)`` of attributes with positive weights is therefore
    ``prod_t w_{j_t} / (w_{j_t} + ... + w_{j_n})``.

    Zero weights. Attributes whose mutual information is exactly 0 come after every attribute
    with positive mutual information, in a uniformly random order (all-zero input: a uniformly
    random permutation). This is the limit of giving them a common weight ``eps -> 0``: the
    positive weights are then drawn first with probability -> 1, and equal weights make the
    remaining orders equally likely. A random rather than index order keeps the ensemble's
    members diverse in the tail too, where SkDB may still keep an attribute that is
    uninformative alone but useful with a parent (an XOR).

    Parameters
    ----------
    mutual_information : array-like of float, shape (n_attributes,)
        ``I(X_j; Y)`` (nats or any unit: only ratios matter), finite and non-negative, e.g.
        :func:`fastpath.structure.mutual_information` or ``Structure.mutual_information``.
    random_state : None, int, numpy Generator or RandomState, default=None
        Seed (:func:`fastpath.utils._validation.as_generator`); a given int gives the same
        order on every call. A Generator is advanced, so successive calls give an ensemble's
        successive orders.

    Returns
    -------
    tuple of int
        A permutation of ``range(n_attributes)``: the attributes in sampled order.

    Raises
    ------
    ValueError
        When ``mutual_information`` is not 1-D, not numeric, or holds a negative, NaN or
        infinite value; when ``random_state`` is not a valid seed.
    """
    try:
        w = np.array(mutual_information, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            f"mutual_information must be a 1-D array of numbers, got {mutual_information!r}"
        ) from None
    if w.ndim != 1:
        raise ValueError(f"mutual_information must be 1-D, got shape {w.shape}")
    if not np.all(np.isfinite(w)):
        raise ValueError("mutual_information must be finite (no NaN or infinity)")
    if np.any(w < 0):
        j = int(np.flatnonzero(w < 0)[0])
        raise ValueError(
            f"mutual_information must be non-negative, got {w[j]!r} for attribute {j}"
        )
    rng = as_generator(random_state, "random_state")

    # Scaling by the largest weight changes no probability but keeps the running sums away
    # from underflow when every mutual information is tiny.
    top = w.max() if w.size else 0.0
    positive = np.flatnonzero(w > 0)
    weights = w[positive] / top if positive.size else w[positive]
    # one uniform per draw, drawn up front: the same stream as one rng.random() per draw
    picks = _sequential_draws(weights, rng.random(positive.size))
    order = [int(j) for j in positive[picks]]
    zero = np.flatnonzero(w == 0)
    order.extend(int(j) for j in rng.permutation(zero))
    return tuple(order)


@njit(cache=True, nogil=True)
def _sequential_draws(weights, uniforms):
    """Positions (into ``weights``) in the order drawn, literally the definition: draw ``t``
    takes the first remaining position whose cumulative weight (a running sum in position
    order, as ``np.cumsum``) exceeds ``uniforms[t]`` times the remaining total, the clip
    guarding the rounding of that product up to the total."""
    n = weights.shape[0]
    remaining = np.arange(n)
    w = weights.copy()
    cumulative = np.empty(n)
    out = np.empty(n, dtype=np.int64)
    for t in range(n):
        size = n - t
        total = 0.0
        for i in range(size):
            total += w[i]
            cumulative[i] = total
        u = uniforms[t] * total
        pick = size - 1
        for i in range(size):  # searchsorted(side="right"): first cumulative > u
            if cumulative[i] > u:
                pick = i
                break
        out[t] = remaining[pick]
        for i in range(pick, size - 1):  # np.delete
            remaining[i] = remaining[i + 1]
            w[i] = w[i + 1]
    return out
