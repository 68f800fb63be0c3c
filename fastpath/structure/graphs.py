"""Structure learning for Bayesian network classifiers (BNCs) on integer-coded data.

Paper, section "Structure learning for BNCs": every structure here makes the class ``Y`` a parent
of every attribute (the usual BNC choice), and adds attribute-to-attribute edges:

* naive Bayes (:func:`naive_bayes`): no attribute parents;
* TAN (:func:`tan`, Friedman, Geiger & Goldszmidt 1997): the Chow-Liu maximum spanning tree of
  the complete attribute graph weighted by ``I(X_i; X_j | Y)``, rooted at the attribute with the
  highest mutual information with the class; every other attribute gets exactly one attribute
  parent;
* kDB (:func:`kdb`, Sahami 1996): attributes ranked by ``I(X_j; Y)``; each attribute takes the
  ``k`` earlier attributes with the highest ``I(X_i; X_j | Y)`` as parents (all earlier ones
  when fewer than ``k`` exist).

The statistics come from :func:`mutual_information` and
:func:`conditional_mutual_information`, numba kernels over the columns of ``X`` (one pass over
the rows per attribute pair, pairs spread over threads). Both return nats and are computed from
the empirical counts ("plug-in" estimates).

Branching order (paper, "Intuition -- general framework"): the context tree of attribute ``i``
branches on the class first, then on its attribute parents by decreasing ``I(X_i; X_p | Y)``,
ties by attribute index (:meth:`Structure.branching_order`). The factories store each parent
tuple in that order already.

Tie-breaking is deterministic everywhere: the MI ranking breaks ties by attribute index; kDB
breaks CMI ties by attribute index; TAN uses the maximum spanning tree under the strict order
"higher CMI first, then the lexicographically smaller pair (min(i, j), max(i, j))", which is
unique. Zero-weight edges are kept, so TAN is always a spanning *tree* (never a forest): when
some attributes are conditionally independent of all others, they still get a parent (the
index-smallest one the tie rule picks); the edge carries no information but makes the structure
a proper TAN.

Selective kDB (Martinez et al. 2016) is not built here. What it needs is in place:
:func:`kdb_from_scores` builds a kDB from precomputed scores without another pass over the
data, and kDB parent sets are nested in ``k`` (the parents for ``k - 1`` are the first ``k - 1``
of those for ``k``), so a selective search can take prefixes of ``order`` and of each parent
tuple.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numba as nb
import numpy as np

from ..utils.validation import check_int

__all__ = [
    "STRUCTURE_KINDS",
    "Structure",
    "cmi_dense",
    "cmi_term",
    "conditional_mutual_information",
    "kdb",
    "kdb_from_scores",
    "mi_from_counts",
    "mutual_information",
    "mutual_information_scores",
    "naive_bayes",
    "tan",
    "tan_from_scores",
]

StructureKind = Literal["nb", "tan", "kdb"]
STRUCTURE_KINDS: tuple[str, ...] = ("nb", "tan", "kdb")

_DICT_FORMAT = "hdpbn.structure"
_DICT_VERSION = 1
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


@nb.njit(cache=True, parallel=True)
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


@nb.njit(cache=True, parallel=True)
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


@nb.njit(cache=True, parallel=True)
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
    n_pairs = pair_i.shape[0]
    # about 32 chunks per thread keeps the threads balanced; each chunk reuses one table
    n_chunks = max(1, min(n_pairs, 32 * nb.get_num_threads()))
    chunk_starts = np.linspace(0, n_pairs, n_chunks + 1).round().astype(np.int64)
    values = _cmi_kernel(
        Xt,
        y,
        cards,
        n_classes,
        joint,
        offsets,
        pair_i.astype(np.int64),
        pair_j.astype(np.int64),
        chunk_starts,
    )
    out = np.zeros((m, m))
    out[pair_i, pair_j] = values
    out[pair_j, pair_i] = values
    return out


def mutual_information_scores(
    X, y, cardinalities: Sequence[int], n_classes: int
) -> tuple[np.ndarray, np.ndarray]:
    """Both ``I(X_j; Y)`` and the ``I(X_i; X_j | Y)`` matrix, validating and counting once."""
    Xt, y, cards, n_classes = _check_inputs(X, y, cardinalities, n_classes)
    joint, offsets = _joint_tables(Xt, y, cards, n_classes)
    mi = mi_from_counts(joint, cards, _class_counts(y, n_classes), offsets, Xt.shape[1])
    cmi = _cmi_matrix(Xt, y, cards, n_classes, joint, offsets)
    return mi, cmi


def _mi_order(mi: np.ndarray) -> tuple[int, ...]:
    """Attributes by decreasing MI with the class, ties by attribute index."""
    return tuple(int(j) for j in np.argsort(-mi, kind="stable"))


# ====================================================================== the structure
def _frozen_float(a, shape: tuple[int, ...], name: str) -> np.ndarray:
    out = np.array(a, dtype=np.float64)  # always a copy
    if out.size == 0 and math.prod(shape) == 0:
        out = out.reshape(shape)  # JSON writes an empty (0, 0) matrix as []
    if out.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {out.shape}")
    if not np.all(np.isfinite(out)):
        raise ValueError(f"{name} must be finite")
    out.flags.writeable = False
    return out




@dataclass(frozen=True, eq=False)
class Structure:
    """A BNC structure: the class is a parent of every attribute, plus attribute parents.

    Build one with :func:`naive_bayes`, :func:`tan`, :func:`kdb` (or the ``*_from_scores``
    variants, or :meth:`from_dict`). Immutable; the score arrays are read-only.

    Attributes
    ----------
    kind : {"nb", "tan", "kdb"}
    parents : tuple of tuple of int
        ``parents[i]``: attribute parents of attribute ``i``, the class excluded (it is a parent
        of every attribute), in branching order.
    order : tuple of int
        Attributes by decreasing mutual information with the class (ties by index); the
        identity for a naive Bayes built without data.
    k : int
        Maximum number of attribute parents: 0 for naive Bayes, 1 for TAN, ``k`` for kDB.
    mutual_information : ndarray (n_attributes,) or None
        ``I(X_j; Y)`` in nats, when computed.
    conditional_mutual_information : ndarray (n_attributes, n_attributes) or None
        ``I(X_i; X_j | Y)`` in nats, when computed.
    root : int or None
        TAN only: the root of the attribute tree (the attribute with the highest MI).
    """

    kind: StructureKind
    parents: tuple[tuple[int, ...], ...]
    order: tuple[int, ...]
    k: int
    mutual_information: np.ndarray | None = None
    conditional_mutual_information: np.ndarray | None = None
    root: int | None = None

    # ------------------------------------------------------------------ validation
    def __post_init__(self) -> None:
        setattr_ = object.__setattr__
        if self.kind not in STRUCTURE_KINDS:
            raise ValueError(f"kind must be one of {STRUCTURE_KINDS}, got {self.kind!r}")
        setattr_(self, "k", check_int("k", self.k, 0))
        try:
            parents = tuple(tuple(int(p) for p in ps) for ps in self.parents)
            order = tuple(int(j) for j in self.order)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"parents and order must hold attribute indices: {exc}") from None
        setattr_(self, "parents", parents)
        setattr_(self, "order", order)
        n = len(parents)
        if sorted(order) != list(range(n)):
            raise ValueError(f"order must be a permutation of range({n}), got {order}")
        for i, ps in enumerate(parents):
            for p in ps:
                if not 0 <= p < n:
                    raise ValueError(f"parent {p} of attribute {i} is out of range [0, {n})")
                if p == i:
                    raise ValueError(f"attribute {i} cannot be its own parent")
            if len(set(ps)) != len(ps):
                raise ValueError(f"attribute {i} has repeated parents {ps}")
            if len(ps) > self.k:
                raise ValueError(
                    f"attribute {i} has {len(ps)} parents, more than k={self.k} ({self.kind})"
                )
        _check_acyclic(parents)
        if self.mutual_information is not None:
            setattr_(
                self,
                "mutual_information",
                _frozen_float(self.mutual_information, (n,), "mutual_information"),
            )
        if self.conditional_mutual_information is not None:
            cmi = _frozen_float(
                self.conditional_mutual_information, (n, n), "conditional_mutual_information"
            )
            if not np.array_equal(cmi, cmi.T):
                raise ValueError("conditional_mutual_information must be symmetric")
            setattr_(self, "conditional_mutual_information", cmi)

        if self.kind == "nb":
            if self.k != 0:
                raise ValueError(f"a naive Bayes structure has k=0, got k={self.k}")
        elif self.kind == "tan":
            if self.k != 1:
                raise ValueError(f"a TAN structure has k=1, got k={self.k}")
            if n and (self.root is None or not 0 <= int(self.root) < n):
                raise ValueError(f"a TAN structure needs a root in [0, {n}), got {self.root!r}")
            if n:
                setattr_(self, "root", int(self.root))
                for i, ps in enumerate(parents):
                    want = 0 if i == self.root else 1
                    if len(ps) != want:
                        raise ValueError(
                            f"in a TAN, attribute {i} must have {want} attribute parent(s), "
                            f"got {ps}"
                        )
        elif self.kind == "kdb":
            rank = {j: r for r, j in enumerate(order)}
            for i, ps in enumerate(parents):
                for p in ps:
                    if rank[p] >= rank[i]:
                        raise ValueError(
                            f"in a kDB, parents come earlier in the order: parent {p} of "
                            f"attribute {i} does not"
                        )
        if self.kind != "tan" and self.root is not None:
            raise ValueError(f"root is only meaningful for TAN, got root={self.root!r}")

    # ------------------------------------------------------------------ queries
    @property
    def n_attributes(self) -> int:
        return len(self.parents)

    @property
    def cmi(self) -> np.ndarray | None:
        """Alias of :attr:`conditional_mutual_information`."""
        return self.conditional_mutual_information

    def edges(self) -> list[tuple[int, int]]:
        """Attribute-to-attribute edges ``(parent, child)``, by child then branching order."""
        return [(p, i) for i, ps in enumerate(self.parents) for p in ps]

    def branching_order(self, i: int) -> tuple[int, ...]:
        """Order in which attribute ``i``'s context tree branches after the class.

        Its attribute parents by decreasing ``I(X_i; X_p | Y)``, ties by attribute index (paper,
        "Intuition -- general framework"; for TAN the single parent). Without a CMI matrix the
        stored order of ``parents[i]`` (which the factories write in this order) is returned.
        """
        if isinstance(i, bool) or not isinstance(i, int | np.integer):
            raise TypeError(f"attribute index must be an integer, got {i!r}")
        if not 0 <= i < self.n_attributes:
            raise IndexError(f"attribute {i} out of range [0, {self.n_attributes})")
        ps = self.parents[i]
        if self.conditional_mutual_information is None or len(ps) < 2:
            return ps
        row = self.conditional_mutual_information[i]
        return tuple(sorted(ps, key=lambda p: (-row[p], p)))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Structure):
            return NotImplemented
        return (
            self.kind == other.kind
            and self.k == other.k
            and self.parents == other.parents
            and self.order == other.order
            and self.root == other.root
            and _same_array(self.mutual_information, other.mutual_information)
            and _same_array(
                self.conditional_mutual_information, other.conditional_mutual_information
            )
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.k, self.parents, self.order, self.root))

    def __repr__(self) -> str:
        name = {"nb": "naive Bayes", "tan": "TAN", "kdb": f"kDB-{self.k}"}[self.kind]
        return (
            f"Structure({name}, n_attributes={self.n_attributes}, "
            f"attribute edges={len(self.edges())})"
        )

    # ------------------------------------------------------------------ export
    def _names(self, feature_names, class_name) -> tuple[list[str], str]:
        n = self.n_attributes
        names = [f"x{i}" for i in range(n)] if feature_names is None else list(feature_names)
        if len(names) != n:
            raise ValueError(f"feature_names must name {n} attributes, got {len(names)}")
        names = [str(s) for s in names]
        class_name = str(class_name)
        if len(set(names)) != n:
            raise ValueError("feature_names must be distinct")
        if class_name in names:
            raise ValueError(f"class_name {class_name!r} is also a feature name")
        return names, class_name

    def to_dot(self, feature_names: Sequence[str] | None = None, class_name: str = "class") -> str:
        """Graphviz DOT text: the class with an edge to every attribute, plus attribute edges.

        Node identifiers are the (quoted) names; attributes default to ``x0, x1, ...``.
        Attribute edges are listed per child in branching order.
        """
        names, class_name = self._names(feature_names, class_name)
        q = _dot_quote
        lines = [
            "digraph BNC {",
            "  rankdir=TB;",
            f"  {q(class_name)} [shape=doublecircle];",
        ]
        lines += [f"  {q(name)} [shape=ellipse];" for name in names]
        lines += [f"  {q(class_name)} -> {q(name)} [color=gray50];" for name in names]
        for i in range(self.n_attributes):
            for p in self.branching_order(i):
                lines.append(f"  {q(names[p])} -> {q(names[i])};")
        lines.append("}")
        return "\n".join(lines) + "\n"

    def to_networkx(self, feature_names: Sequence[str] | None = None, class_name: str = "class"):
        """The structure as a ``networkx.DiGraph`` (networkx is imported here, on demand).

        Nodes are the names (attributes default to ``x0, x1, ...``), with attributes ``role``
        ("class" or "attribute"), ``index`` (attribute index, None for the class) and, when
        known, ``mutual_information``. Edges carry ``role`` ("class" or "attribute"); attribute
        edges also ``rank`` (1 = first after the class in the child's branching order) and,
        when known, ``weight`` = ``I(X_child; X_parent | Y)``.
        """
        try:
            import networkx as nx
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError(
                "Structure.to_networkx needs networkx, which is not a core dependency: "
                "pip install networkx (or install the 'dev' extra)"
            ) from exc
        names, class_name = self._names(feature_names, class_name)
        g = nx.DiGraph()
        g.add_node(class_name, role="class", index=None)
        mi = self.mutual_information
        cmi = self.conditional_mutual_information
        for i, name in enumerate(names):
            data: dict[str, Any] = {"role": "attribute", "index": i}
            if mi is not None:
                data["mutual_information"] = float(mi[i])
            g.add_node(name, **data)
        for name in names:
            g.add_edge(class_name, name, role="class")
        for i in range(self.n_attributes):
            for rank, p in enumerate(self.branching_order(i), start=1):
                data = {"role": "attribute", "rank": rank}
                if cmi is not None:
                    data["weight"] = float(cmi[i, p])
                g.add_edge(names[p], names[i], **data)
        return g

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable description (floats round-trip exactly through ``json``)."""

        def arr(a):
            return None if a is None else a.tolist()

        return {
            "format": _DICT_FORMAT,
            "version": _DICT_VERSION,
            "kind": self.kind,
            "k": self.k,
            "n_attributes": self.n_attributes,
            "parents": [list(ps) for ps in self.parents],
            "order": list(self.order),
            "root": self.root,
            "mutual_information": arr(self.mutual_information),
            "conditional_mutual_information": arr(self.conditional_mutual_information),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Structure:
        """Inverse of :meth:`to_dict`; validates the content."""
        if not isinstance(data, dict):
            raise ValueError(f"expected a dict, got {type(data).__name__}")
        if data.get("format") != _DICT_FORMAT:
            raise ValueError(f"not a structure description (format={data.get('format')!r})")
        if data.get("version") != _DICT_VERSION:
            raise ValueError(f"unsupported structure format version {data.get('version')!r}")
        missing = [key for key in ("kind", "k", "parents", "order") if key not in data]
        if missing:
            raise ValueError(f"structure description lacks {missing}")
        out = cls(
            kind=data["kind"],
            parents=data["parents"],
            order=data["order"],
            k=data["k"],
            mutual_information=data.get("mutual_information"),
            conditional_mutual_information=data.get("conditional_mutual_information"),
            root=data.get("root"),
        )
        if "n_attributes" in data and data["n_attributes"] != out.n_attributes:
            raise ValueError(
                f"n_attributes={data['n_attributes']} but {out.n_attributes} parent lists"
            )
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_json(cls, text: str) -> Structure:
        return cls.from_dict(json.loads(text))


def _same_array(a, b) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.shape == b.shape and bool(np.array_equal(a, b))


def _dot_quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _check_acyclic(parents: tuple[tuple[int, ...], ...]) -> None:
    """Raise ValueError when the attribute parent graph has a directed cycle (Kahn)."""
    n = len(parents)
    children: list[list[int]] = [[] for _ in range(n)]
    indeg = [len(ps) for ps in parents]
    for i, ps in enumerate(parents):
        for p in ps:
            children[p].append(i)
    stack = [i for i in range(n) if indeg[i] == 0]
    seen = 0
    while stack:
        v = stack.pop()
        seen += 1
        for c in children[v]:
            indeg[c] -= 1
            if indeg[c] == 0:
                stack.append(c)
    if seen != n:
        raise ValueError("the attribute parent graph has a directed cycle")


# ====================================================================== structures
def naive_bayes(n_attributes: int) -> Structure:
    """Naive Bayes: the class is the only parent of every attribute (order = identity)."""
    if isinstance(n_attributes, bool) or not isinstance(n_attributes, int | np.integer):
        raise ValueError(f"n_attributes must be a non-negative integer, got {n_attributes!r}")
    if n_attributes < 0:
        raise ValueError(f"n_attributes must be a non-negative integer, got {n_attributes}")
    n = int(n_attributes)
    return Structure(kind="nb", parents=((),) * n, order=tuple(range(n)), k=0)


def _check_scores(mutual_information, conditional_mutual_information):
    mi = np.asarray(mutual_information, dtype=np.float64)
    if mi.ndim != 1:
        raise ValueError(f"mutual_information must be 1-D, got shape {mi.shape}")
    n = mi.shape[0]
    cmi = np.asarray(conditional_mutual_information, dtype=np.float64)
    if cmi.shape != (n, n):
        raise ValueError(
            f"conditional_mutual_information must have shape ({n}, {n}), got {cmi.shape}"
        )
    if not (np.all(np.isfinite(mi)) and np.all(np.isfinite(cmi))):
        raise ValueError("scores must be finite")
    if not np.array_equal(cmi, cmi.T):
        raise ValueError("conditional_mutual_information must be symmetric")
    return mi, cmi


def tan_from_scores(mutual_information, conditional_mutual_information) -> Structure:
    """TAN from precomputed ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` (see :func:`tan`)."""
    mi, cmi = _check_scores(mutual_information, conditional_mutual_information)
    n = mi.shape[0]
    order = _mi_order(mi)
    if n == 0:
        return Structure(
            kind="tan",
            parents=(),
            order=(),
            k=1,
            mutual_information=mi,
            conditional_mutual_information=cmi,
            root=None,
        )
    # Kruskal under the strict edge order (higher weight, then smaller (i, j)): the maximum
    # spanning tree under a strict total order is unique, so this is the tie-breaking rule.
    iu, ju = np.triu_indices(n, k=1)
    w = cmi[iu, ju]
    edge_order = np.lexsort((ju, iu, -w))
    uf = list(range(n))

    def find(a: int) -> int:
        while uf[a] != a:
            uf[a] = uf[uf[a]]
            a = uf[a]
        return a

    adjacency: list[list[int]] = [[] for _ in range(n)]
    n_edges = 0
    for e in edge_order:
        if n_edges == n - 1:
            break
        a, b = int(iu[e]), int(ju[e])
        ra, rb = find(a), find(b)
        if ra != rb:
            uf[ra] = rb
            adjacency[a].append(b)
            adjacency[b].append(a)
            n_edges += 1
    # Root at the attribute with the highest MI (ties by index) and orient away from it.
    root = order[0]
    parents: list[tuple[int, ...]] = [()] * n
    visited = [False] * n
    visited[root] = True
    stack = [root]
    while stack:
        v = stack.pop()
        for u in adjacency[v]:
            if not visited[u]:
                visited[u] = True
                parents[u] = (v,)
                stack.append(u)
    return Structure(
        kind="tan",
        parents=tuple(parents),
        order=order,
        k=1,
        mutual_information=mi,
        conditional_mutual_information=cmi,
        root=root,
    )


def tan(X, y, cardinalities: Sequence[int], n_classes: int) -> Structure:
    """Tree-augmented naive Bayes (Friedman, Geiger & Goldszmidt 1997).

    Chow-Liu: the maximum spanning tree of the complete attribute graph weighted by
    ``I(X_i; X_j | Y)``, rooted at the attribute with the highest ``I(X_j; Y)`` (ties by
    index) and directed away from the root. Ties between equal weights go to the
    lexicographically smaller pair ``(min(i, j), max(i, j))``. Zero weights are kept, so the
    result is always a spanning tree: every attribute but the root has exactly one attribute
    parent.
    """
    mi, cmi = mutual_information_scores(X, y, cardinalities, n_classes)
    return tan_from_scores(mi, cmi)


def kdb_from_scores(mutual_information, conditional_mutual_information, k: int) -> Structure:
    """kDB from precomputed ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` (see :func:`kdb`)."""
    k = check_int("k", k, 0)
    mi, cmi = _check_scores(mutual_information, conditional_mutual_information)
    order = _mi_order(mi)
    parents: list[tuple[int, ...]] = [()] * len(order)
    for pos, i in enumerate(order):
        if pos == 0 or k == 0:
            continue
        candidates = np.asarray(order[:pos], dtype=np.int64)
        # decreasing CMI with attribute i, ties by attribute index
        ranked = candidates[np.lexsort((candidates, -cmi[i, candidates]))]
        parents[i] = tuple(int(p) for p in ranked[:k])
    return Structure(
        kind="kdb",
        parents=tuple(parents),
        order=order,
        k=k,
        mutual_information=mi,
        conditional_mutual_information=cmi,
    )


def kdb(X, y, cardinalities: Sequence[int], n_classes: int, k: int) -> Structure:
    """k-dependence Bayesian classifier (Sahami 1996).

    Attributes are ranked by ``I(X_j; Y)`` (descending, ties by index). Each attribute takes as
    parents the ``min(k, position)`` attributes ranked before it with the highest
    ``I(X_i; X_j | Y)`` (ties by attribute index), stored in that order, which is also the
    branching order. Parents are added even when their CMI is 0 (no threshold). ``k = 0`` gives
    the naive Bayes graph (kind stays "kdb"). Parent sets are nested: those for ``k - 1`` are
    the first ``k - 1`` of those for ``k``.
    """
    k = check_int("k", k, 0)
    mi, cmi = mutual_information_scores(X, y, cardinalities, n_classes)
    return kdb_from_scores(mi, cmi, k)
