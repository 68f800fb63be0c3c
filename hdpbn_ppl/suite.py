"""The validation suite: named, seeded context trees on which fastpath and the NumPyro model meet.

Two kinds of tree:

* ``model`` trees are drawn from the hierarchical Dirichlet model itself (paper, section 4.1) with
  known concentrations: conditioning paths are drawn top-down (each node's branch probabilities
  from a symmetric Dirichlet -- a small ``path_concentration`` gives skewed paths, hence sparse
  trees), then the node probabilities of every possible prefix from the HDP with the given
  concentration per depth, then the child values of each row.
* ``data`` trees are conditional probability tables of the bundled UCI datasets
  (:func:`fastpath.io.load_dataset`) under naive Bayes, TAN and kDB-2/3, taken from
  ``BayesNetClassifier(...).fit(X, y).trees_`` by child variable.

Each tree has a name, a seed (the one the validation runs use) and a tying strategy, and the
suite covers depth 1 to 5, K from 2 to 6, 10 to 10^5 rows, sparse (most leaves with 0-2 rows)
and dense trees and all four tying strategies. ``quick`` marks the small trees of the CI check.

The suite is defined here, beside the model it is drawn from, because both
``python -m hdpbn_ppl suite`` and the :mod:`validation` package run it (hdpbn_ppl never imports
validation). :func:`draw_from_prior` is the model's prior simulator in NumPy, which
simulation-based calibration (:mod:`validation.sbc`) uses as well.

Everything here is plain NumPy (no JAX), so the fast-path-only checks import it cheaply.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, lru_cache

import numpy as np

from fastpath.classifier import BayesNetClassifier
from fastpath.counts import ContextTree, tying_groups
from fastpath.io import load_dataset

__all__ = [
    "SUITE",
    "SuiteTree",
    "draw_from_prior",
    "get",
    "log_dirichlet",
    "model_tree",
    "names",
    "quick_names",
    "tree_summary",
]


# ---------------------------------------------------------------------------- model draws
def log_dirichlet(rng: np.random.Generator, conc: np.ndarray) -> np.ndarray:
    """log of Dirichlet(conc) rows, exact for tiny concentrations.

    Uses G = G1 * U^(1/a) with G1 ~ Gamma(a + 1) and U ~ Uniform(0, 1), which is Gamma(a)
    and keeps log G finite when a is tiny (deep sparse trees put never-observed categories at
    probabilities near 1e-40; plain Gamma(a) draws underflow to 0 there).
    """
    conc = np.maximum(np.asarray(conc, dtype=float), 1e-300)
    log_g = np.log(rng.gamma(conc + 1.0)) + np.log(rng.uniform(size=conc.shape)) / conc
    m = log_g.max(axis=-1, keepdims=True)
    return log_g - (m + np.log(np.exp(log_g - m).sum(axis=-1, keepdims=True)))


def draw_from_prior(
    skeleton: ContextTree,
    tying: str,
    rng: np.random.Generator,
    *,
    alpha: np.ndarray | None = None,
    alpha0: float = 2.0,
    shape: float = 2.0,
    rate: float = 1.0,
) -> tuple[ContextTree, np.ndarray, np.ndarray]:
    """Draw concentrations, node probabilities and leaf data from the model on a fixed skeleton.

    The skeleton fixes which leaves exist and how many rows each holds (the model conditions on
    the conditioning values); every leaf must hold at least one row so that the returned tree
    has the skeleton's nodes in the skeleton's order.

    Parameters
    ----------
    skeleton : ContextTree
    tying : str
        Tying strategy; one concentration per group of :func:`tying_groups`.
    rng : numpy Generator
    alpha : array, optional
        Concentrations per group; drawn from Gamma(shape, rate) when omitted.
    alpha0 : float
        Root concentration (base measure uniform 1/K).

    Returns
    -------
    tree : ContextTree
        Same nodes as ``skeleton``, with the simulated child values.
    alpha : ndarray (n_groups,)
    phi : ndarray (n_nodes, K)
        Probability vector of every node (theta at the leaves).
    """
    groups = tying_groups(skeleton, tying)
    n_groups = int(groups.max()) + 1 if skeleton.n_nodes > 1 else 0
    if alpha is None:
        alpha = rng.gamma(shape, 1.0 / rate, size=n_groups)
    alpha = np.asarray(alpha, dtype=float)
    if alpha.shape != (n_groups,):
        raise ValueError(f"alpha must have shape ({n_groups},), got {alpha.shape}")
    totals = skeleton.counts[skeleton.leaves].sum(axis=1)
    if (totals < 1).any():
        raise ValueError("every leaf of the skeleton must hold at least one row")
    k = skeleton.n_values
    log_phi = np.empty((skeleton.n_nodes, k))
    log_phi[0] = log_dirichlet(rng, np.full(k, alpha0 / k))
    # nodes are in breadth-first order: parents come first
    for d in range(1, skeleton.depth + 1):
        lo, hi = int(skeleton.level_offsets[d]), int(skeleton.level_offsets[d + 1])
        par = np.exp(log_phi[skeleton.parent[lo:hi]])
        log_phi[lo:hi] = log_dirichlet(rng, alpha[groups[lo:hi]][:, None] * par)
    phi = np.exp(log_phi)
    leaf_phi = phi[skeleton.leaves]
    counts = np.zeros((totals.size, k), dtype=np.int64)
    for i, n in enumerate(totals):
        counts[i] = rng.multinomial(int(n), leaf_phi[i] / leaf_phi[i].sum())
    paths = skeleton.paths()[skeleton.leaves]
    tree = ContextTree.from_leaf_counts(paths, counts, skeleton.branch_cardinalities, k)
    return tree, alpha, phi


def model_tree(
    cardinalities: Sequence[int],
    n_values: int,
    n_rows: int,
    *,
    seed: int,
    alpha: Sequence[float],
    path_concentration: float = 1.0,
    alpha0: float = 2.0,
) -> ContextTree:
    """A context tree drawn from the HDP with known concentrations, one per depth.

    Conditioning paths are drawn top-down: every possible prefix gets branch probabilities
    from a symmetric Dirichlet(``path_concentration``); rows are spread over the leaves by a
    multinomial, and the child values are drawn from the HDP (level concentrations ``alpha``).
    """
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in cardinalities]
    alpha = np.asarray(alpha, dtype=float)
    if alpha.shape != (len(cards),):
        raise ValueError(f"alpha must give one concentration per depth ({len(cards)})")
    log_path = np.zeros(1)
    for c in cards:
        branch = log_dirichlet(rng, np.full((log_path.size, c), path_concentration))
        log_path = (log_path[:, None] + branch).ravel()
    p = np.exp(log_path - log_path.max())
    rows = rng.multinomial(n_rows, p / p.sum())
    keep = np.flatnonzero(rows)
    paths = np.stack(np.unravel_index(keep, cards), axis=1).astype(np.int64)
    # the skeleton: observed leaves with their row totals (child values not drawn yet)
    placeholder = np.zeros((keep.size, n_values), dtype=np.int64)
    placeholder[:, 0] = rows[keep]
    skeleton = ContextTree.from_leaf_counts(paths, placeholder, cards, n_values)
    tree, _, _ = draw_from_prior(skeleton, "level", rng, alpha=alpha, alpha0=alpha0)
    return tree


# ---------------------------------------------------------------------------- data trees
@lru_cache(maxsize=32)
def _classifier_trees(dataset: str, structure: str, k: int) -> tuple[ContextTree, ...]:
    X, y = load_dataset(dataset)
    # m fixed: the m-estimate holdout is irrelevant to the trees and would cost a split
    clf = BayesNetClassifier(structure=structure, k=k, estimation="m", m=1.0, random_state=0)
    return tuple(clf.fit(X, y).trees_)


def _data_tree(dataset: str, structure: str, k: int, child: str) -> ContextTree:
    for tree in _classifier_trees(dataset, structure, k):
        if tree.child_name == child:
            return tree
    raise KeyError(f"{dataset} under {structure}-{k} has no table for {child!r}")


# ---------------------------------------------------------------------------- the suite
@dataclass(frozen=True)
class SuiteTree:
    """One named tree of the suite.

    Attributes
    ----------
    name : str
    source : {"model", "data"}
    tying : str
        Tying strategy used by both samplers on this tree.
    seed : int
        Seed of the tree's draw (model trees) and of the validation runs on it.
    quick : bool
        Part of the CI agreement check.
    spec : dict
        ``model``: cardinalities, n_values, n_rows, alpha, path_concentration.
        ``data``: dataset, structure, k, child.
    """

    name: str
    source: str
    tying: str
    seed: int
    spec: dict = field(hash=False, compare=False)
    quick: bool = False

    def build(self) -> ContextTree:
        """The tree (built once per process, then cached)."""
        return _build(self.name)

    @property
    def true_alpha(self) -> tuple[float, ...] | None:
        """The generating concentration of each depth (model trees), else None."""
        return tuple(self.spec["alpha"]) if self.source == "model" else None

    def describe(self) -> str:
        """One line for reports: how the tree was drawn, or which table it is."""
        s = self.spec
        if self.source == "model":
            return (f"HDP draw, cards {tuple(s['cardinalities'])}, alpha {tuple(s['alpha'])}, "
                    f"path conc. {s.get('path_concentration', 1.0)}")
        structure = f"kdb-{s['k']}" if s["structure"] == "kdb" else s["structure"]
        return f"{s['dataset']} {structure}: P({s['child']} | ...)"


def _m(name, cards, k, rows, alpha, tying, seed, path=1.0, quick=False) -> SuiteTree:
    spec = {"cardinalities": tuple(cards), "n_values": k, "n_rows": rows, "alpha": tuple(alpha),
            "path_concentration": path}
    return SuiteTree(name, "model", tying, seed, spec, quick)


def _d(name, dataset, structure, k, child, tying, seed, quick=False) -> SuiteTree:
    spec = {"dataset": dataset, "structure": structure, "k": k, "child": child}
    return SuiteTree(name, "data", tying, seed, spec, quick)


#: The suite, smallest first within each source.
SUITE: tuple[SuiteTree, ...] = (
    # ---- drawn from the model (known concentrations, one per depth)
    _m("m_d1_k2_n10", (3,), 2, 10, (1.5,), "level", 11, quick=True),
    _m("m_d1_k6_sparse", (5,), 6, 25, (3.0,), "single", 12, path=0.5),
    _m("m_d1_k2_dense", (3,), 2, 3000, (2.0,), "none", 13),
    _m("m_d2_k4_sparse", (3, 4), 4, 40, (2.0, 1.0), "none", 21, path=0.5),
    _m("m_d2_k3_dense", (3, 4), 3, 5000, (4.0, 1.5), "same-parent", 22),
    _m("m_d2_k3_n1e5", (3, 4), 3, 100_000, (3.0, 8.0), "level", 23),
    _m("m_d3_k2_sparse", (2, 3, 3), 2, 40, (2.0, 2.0, 1.0), "level", 31, path=0.5),
    _m("m_d3_k5_dense", (2, 3, 3), 5, 4000, (5.0, 2.0, 1.0), "same-parent", 32),
    _m("m_d3_k4_n1e5_mixed", (4, 4, 4), 4, 100_000, (2.0, 6.0, 3.0), "level", 33, path=0.3),
    _m("m_d4_k3_sparse", (2, 3, 2, 3), 3, 80, (3.0, 2.0, 1.0, 2.0), "single", 41, path=0.5),
    _m("m_d4_k6_sparse", (3, 2, 3, 2), 6, 150, (2.0, 4.0, 1.0, 1.0), "level", 42, path=0.5),
    _m("m_d5_k2_sparse", (2, 2, 3, 2, 3), 2, 100, (1.0, 2.0, 3.0, 2.0, 1.0), "level", 51,
       path=0.5),
    _m("m_d5_k4_sparse", (3, 3, 2, 3, 2), 4, 200, (2.0, 1.0, 2.0, 3.0, 1.5), "same-parent", 52,
       path=0.5),
    _m("m_d5_k6_mixed", (3, 2, 3, 2, 3), 6, 2000, (3.0, 2.0, 1.0, 4.0, 2.0), "level", 53,
       path=0.3),
    _m("m_d5_k3_dense", (2, 3, 3, 2, 3), 3, 20_000, (2.0, 3.0, 5.0, 2.0, 1.0), "level", 54),
    # ---- conditional tables of the bundled datasets
    _d("car_nb_safety", "car", "nb", 1, "safety", "level", 101, quick=True),
    _d("car_tan_maint", "car", "tan", 1, "maint", "same-parent", 102),
    _d("car_kdb2_lug_boot", "car", "kdb", 2, "lug_boot", "level", 103),
    _d("car_kdb3_doors", "car", "kdb", 3, "doors", "none", 104),
    _d("credit-a_tan_A4", "credit-a", "tan", 1, "A4", "level", 111),
    _d("credit-a_kdb2_A5", "credit-a", "kdb", 2, "A5", "single", 112),
    _d("credit-a_kdb3_A1", "credit-a", "kdb", 3, "A1", "level", 113),
    _d("kr-vs-kp_nb_katri", "kr-vs-kp", "nb", 1, "katri", "level", 121),
    _d("kr-vs-kp_kdb3_cntxt", "kr-vs-kp", "kdb", 3, "cntxt", "level", 122),
    _d("tic-tac-toe_tan_top-left", "tic-tac-toe", "tan", 1, "top-left-square", "same-parent",
       131, quick=True),
    _d("tic-tac-toe_kdb3_bottom-left", "tic-tac-toe", "kdb", 3, "bottom-left-square", "single",
       132),
)

_BY_NAME = {t.name: t for t in SUITE}


@cache
def _build(name: str) -> ContextTree:
    t = get(name)
    s = t.spec
    if t.source == "model":
        return model_tree(s["cardinalities"], s["n_values"], s["n_rows"], seed=t.seed,
                          alpha=s["alpha"], path_concentration=s["path_concentration"])
    return _data_tree(s["dataset"], s["structure"], s["k"], s["child"])


def get(name: str) -> SuiteTree:
    """The suite entry called ``name``."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no suite tree {name!r}; known: {names()}") from None


def names() -> list[str]:
    """Every tree's name, in suite order."""
    return [t.name for t in SUITE]


def quick_names() -> list[str]:
    """The names of the CI check's trees (``quick``), in suite order."""
    return [t.name for t in SUITE if t.quick]


def tree_summary(tree: ContextTree) -> dict:
    """Shape of a tree: depth, K, nodes, rows, leaves, share of leaves with <= 2 rows."""
    leaf_n = tree.counts[tree.leaves].sum(axis=1)
    return {
        "depth": tree.depth,
        "K": tree.n_values,
        "nodes": tree.n_nodes,
        "nodes_per_level": list(tree.nodes_per_level),
        "rows": tree.n_rows,
        "leaves": int(leaf_n.size),
        "sparse_share": float(np.mean(leaf_n <= 2)) if leaf_n.size else 0.0,
        "median_leaf_rows": float(np.median(leaf_n)) if leaf_n.size else 0.0,
    }
