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
  when fewer than ``k`` exist). :func:`kdb_from_scores` also takes the order as a parameter:
  ESKDB (Zhang, Petitjean & Buntine, KAIS 2020) learns each ensemble member's kDB in an order
  sampled in proportion to ``I(X_j; Y)`` (:func:`fastpath.structure._orders.sample_order`).

The statistics come from :mod:`fastpath.structure._scores` (``I(X_j; Y)`` and
``I(X_i; X_j | Y)`` in nats, plug-in estimates from the empirical counts).

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

import numpy as np

from ..utils._validation import check_int
from ._scores import mi_order, mutual_information_scores

StructureKind = Literal["nb", "tan", "kdb"]
STRUCTURE_KINDS: tuple[str, ...] = ("nb", "tan", "kdb")

_DICT_FORMAT = "hdpbn.structure"
_DICT_VERSION = 1


# ====================================================================== the structure
def _frozen_copy(a: np.ndarray) -> np.ndarray:
    out = np.array(a, dtype=np.float64)  # always a copy
    out.flags.writeable = False
    return out


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
        identity for a naive Bayes built without data. A kDB built with an explicit ``order``
        (:func:`kdb_from_scores`; ESKDB's sampled orders) records that order instead: kDB
        parents come earlier in it, and selective kDB selects prefixes of it.
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
    @classmethod
    def _learned(cls, kind: StructureKind, parents: tuple[tuple[int, ...], ...],
                 order: tuple[int, ...], k: int, mutual_information: np.ndarray,
                 conditional_mutual_information: np.ndarray) -> Structure:
        """A structure a learner of this package built, valid by construction: the fields set
        as given, without :meth:`__post_init__`'s checks (they cost more than the learning on
        small data, and an ensemble learns two structures per member). ``parents`` and
        ``order`` hold Python ints; the scores are read-only float64 arrays of the right
        shapes (checked once by the learner)."""
        out = object.__new__(cls)
        for name, value in (("kind", kind), ("parents", parents), ("order", order),
                            ("k", int(k)), ("mutual_information", mutual_information),
                            ("conditional_mutual_information", conditional_mutual_information),
                            ("root", None)):
            object.__setattr__(out, name, value)
        return out

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
    order = mi_order(mi)
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


def _check_order(order, n: int) -> tuple[int, ...]:
    """``order`` as a tuple of ints after checking it is a permutation of ``range(n)``."""
    a = np.asarray(order)
    if a.ndim != 1:
        raise ValueError(f"order must be a 1-D sequence of attribute indices, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        # bool is rejected too: True/False are not attribute indices
        raise ValueError(f"order must hold integer attribute indices, got dtype {a.dtype}")
    if a.size != n:
        raise ValueError(f"order must list all {n} attributes once, got {a.size} entries")
    out = tuple(int(j) for j in a)
    bad = [j for j in out if not 0 <= j < n]
    if bad:
        raise ValueError(f"order holds attribute {bad[0]}, out of range [0, {n})")
    if len(set(out)) != n:
        repeated = sorted({j for j in out if out.count(j) > 1})
        raise ValueError(f"order must be a permutation of range({n}): repeats {repeated}")
    return out


def kdb_from_scores(
    mutual_information,
    conditional_mutual_information,
    k: int,
    order: Sequence[int] | None = None,
) -> Structure:
    """kDB from precomputed ``I(X_j; Y)`` and ``I(X_i; X_j | Y)`` (see :func:`kdb`).

    Parameters
    ----------
    mutual_information : array-like of float, shape (n_attributes,)
    conditional_mutual_information : array-like of float, shape (n_attributes, n_attributes)
        Symmetric.
    k : int
        Maximum number of attribute parents (>= 0).
    order : sequence of int, optional
        The order in which attributes may take parents: a permutation of
        ``range(n_attributes)``. Default: decreasing ``I(X_j; Y)``, ties by index
        (:func:`~fastpath.structure._scores.mi_order`; Sahami 1996). ESKDB (Zhang, Petitjean &
        Buntine, KAIS 2020) passes an order drawn by
        :func:`~fastpath.structure._orders.sample_order` instead. Each attribute's parents are
        the ``k`` attributes *earlier in this order* with the highest CMI (ties by index), and
        the structure records it as :attr:`Structure.order`, so selective kDB's prefixes
        follow it too.

    Returns
    -------
    Structure
        kind ``"kdb"``.
    """
    k = check_int("k", k, 0)
    mi, cmi = _check_scores(mutual_information, conditional_mutual_information)
    order = mi_order(mi) if order is None else _check_order(order, mi.shape[0])
    parents: list[tuple[int, ...]] = [()] * len(order)
    for pos, i in enumerate(order):
        if pos == 0 or k == 0:
            continue
        candidates = np.asarray(order[:pos], dtype=np.int64)
        # decreasing CMI with attribute i, ties by attribute index
        ranked = candidates[np.lexsort((candidates, -cmi[i, candidates]))]
        parents[i] = tuple(ranked[:k].tolist())
    # parents earlier in the order, at most k each, distinct: valid by construction
    return Structure._learned("kdb", tuple(parents), order, k, _frozen_copy(mi),
                              _frozen_copy(cmi))


def kdb(
    X,
    y,
    cardinalities: Sequence[int],
    n_classes: int,
    k: int,
    order: Sequence[int] | None = None,
) -> Structure:
    """k-dependence Bayesian classifier (Sahami 1996).

    Attributes are ranked by ``I(X_j; Y)`` (descending, ties by index). Each attribute takes as
    parents the ``min(k, position)`` attributes ranked before it with the highest
    ``I(X_i; X_j | Y)`` (ties by attribute index), stored in that order, which is also the
    branching order. Parents are added even when their CMI is 0 (no threshold). ``k = 0`` gives
    the naive Bayes graph (kind stays "kdb"). Parent sets are nested: those for ``k - 1`` are
    the first ``k - 1`` of those for ``k``.

    ``order`` (a permutation of the attributes) replaces the MI ranking, e.g. an order drawn by
    :func:`~fastpath.structure._orders.sample_order` (ESKDB; see :func:`kdb_from_scores`).
    """
    k = check_int("k", k, 0)
    mi, cmi = mutual_information_scores(X, y, cardinalities, n_classes)
    return kdb_from_scores(mi, cmi, k, order)
