"""m-estimates with back-off: the baseline the paper compares HDP estimates with.

The paper ("Experimental design and setting") estimates

$$
\\hat p(x_i \\mid \\Pi(i))
  = \\frac{\\mathrm{count}(x_i, \\Pi(i)) + m/|X_i|}{\\mathrm{count}(\\Pi(i)) + m}
$$

and, "if zero counts are found, we back off as many levels in the tree as necessary to find at
least one count. For instance, if count(x4, x0, x3) is equal to zero, then p(x4 | x0) is
considered instead of p(x4 | x0, x3)" (X_0 is the class in the paper's notation).

We read the count that triggers the back-off as the count of the *conditioning path*: a context
(class, parent values) never seen in training has no node in the context tree, and a query for it
is answered at the deepest existing node on its path (:meth:`ContextTree.find`), which always has
data. Within an existing node, every value gets its m-estimate, zero counts included. The other
reading — backing off each child value whose joint count is zero, ``backoff="value"`` below —
throws away the informative zeros that make these classifiers work on deterministic data: on
*car* (``hdpbn evaluate car --structure tan --m 1 --m-backoff value --folds 10 --repeats 1``) it
gives TAN 0.137 and kDB-2 0.162 0-1 loss, against 0.056 with path back-off (Weka's TAN: about
0.057). (An earlier figure here, 0.091 / 0.093, came from a variant that renormalised the rows.)

A value never counted anywhere in the tree (a declared category absent from the training data)
gets ``1/K`` at every node: its factor is then the same for every class and cancels in
P(y | x), as for an unknown value.

Two back-off rules (``backoff``):

``"path"`` (the default)
    The reading above: the count of the conditioning path triggers the back-off.
``"value"``
    The paper's sentence read literally: the *joint* count of the child's value with the node's
    path triggers it. At node ``i``, a value ``k`` with ``count(k, path(i)) > 0`` gets its
    m-estimate at ``i``; a value with ``count(k, path(i)) = 0`` gets the entry of the deepest
    ancestor ``a`` of ``i`` with ``count(k, path(a)) > 0``, and that entry is ``a``'s own
    m-estimate, used as is ("p(x4 | x0) is considered"). A node's row is not renormalised (the
    paper describes no renormalisation; the product of factors is normalised over the classes
    in P(y | x)), so with value back-off a row need not sum to 1. The root has no ancestor:
    a value whose count is zero at the root was never counted anywhere and keeps the ``1/K``
    rule above (in a tree of depth 0, its root m-estimate, as with ``"path"``). A query for an
    unseen path still ends at the deepest existing node first (:meth:`ContextTree.find`), as
    with ``"path"``. Counts only shrink down a path, so the deepest ancestor with a non-zero
    count is the one the parent's (already backed-off) entry came from: one vectorised step per
    level.

The value of ``m`` is chosen by leave-one-out RMSE from ``M_GRID_POSITIVE`` (``m="auto"``) or,
as in the paper, from ``M_GRID`` by RMSE on a holdout (``m="holdout"``); see
:class:`fastpath.BayesNetClassifier`.
"""

from __future__ import annotations

import numpy as np

from ..counts._context_tree import ContextTree
from ..utils._validation import check_float

#: the paper's candidate values of m (its holdout rule, ``m="holdout"``)
M_GRID: tuple[float, ...] = (0.0, 0.05, 0.2, 1.0, 5.0, 20.0)
#: the candidates of the default rule (``m="auto"``, leave-one-out): without 0, which makes
#: every value unseen in a context impossible there
M_GRID_POSITIVE: tuple[float, ...] = tuple(m for m in M_GRID if m > 0)
#: the back-off rules of :func:`m_estimate_table` (module docstring)
M_BACKOFFS: tuple[str, ...] = ("path", "value")


def m_estimate_table(tree: ContextTree, m: float, backoff: str = "path") -> np.ndarray:
    """m-estimate of P(child | path) at every node of a context tree.

    Parameters
    ----------
    tree : ContextTree
    m : float
        Non-negative pseudo-count mass, spread uniformly (``m / K`` per value).
    backoff : {"path", "value"}, default="path"
        ``"path"``: every value of an existing node gets that node's m-estimate (rows sum to 1).
        ``"value"``: the paper's literal rule; a value whose joint count with the node's path is
        zero takes the m-estimate of the deepest ancestor where its count is non-zero, without
        renormalising the row (module docstring).

    Returns
    -------
    ndarray of float64, shape (n_nodes, K)
        Row ``i`` is the estimate used for a query ending at node ``i`` (a path that was not
        observed ends at its deepest existing ancestor).
    """
    m = check_float("m", m, positive=False)
    if backoff not in M_BACKOFFS:
        raise ValueError(f"backoff must be one of {M_BACKOFFS}, got {backoff!r}")
    counts = tree.counts.astype(np.float64)
    k = tree.n_values
    totals = counts.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        table = (counts + m / k) / (totals + m)
    # only the root of an empty tree has no data; nothing can be said there
    table[totals[:, 0] == 0] = 1.0 / k
    never_seen = counts[0] == 0
    if tree.depth and never_seen.any():
        table[:, never_seen] = 1.0 / k
    if backoff == "value":
        # level by level from the top: a zero joint count takes the parent's resolved entry,
        # which is the m-estimate of the deepest ancestor whose count is non-zero
        zero = tree.counts == 0
        for d in range(1, tree.depth + 1):
            lo, hi = int(tree.level_offsets[d]), int(tree.level_offsets[d + 1])
            rows = table[lo:hi]
            z = zero[lo:hi]
            rows[z] = table[tree.parent[lo:hi]][z]
    return table
