"""Context trees drawn from the hierarchical Dirichlet model itself, with fixed seeds.

:func:`sample_tree` draws concentrations, every node's probability vector and the data of a
context tree from the model of :mod:`hdpbn_ppl.model` (level tying), and returns the observed
tree. :data:`SUITE` lists the trees on which the NUTS ground truth is accepted (depth 1-5, K 2-6,
sparse and dense, up to a few hundred nodes); :func:`suite_tree` builds one of them. Both are
plain NumPy (no JAX), so the validation code can reuse them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from fastpath.counts.context_tree import ContextTree

__all__ = ["SUITE", "SampledTree", "SuiteEntry", "sample_tree", "suite_tree"]


@dataclass(frozen=True, eq=False)
class SampledTree:
    """A tree drawn from the model, with the truth it was drawn from.

    Attributes
    ----------
    tree : ContextTree
        The observed tree (nodes on observed paths only).
    alpha : ndarray, shape (depth,)
        Concentration used at each depth 1..depth.
    leaf_paths : ndarray, shape (n_all_leaves, depth)
        Every possible leaf path (full product of the cardinalities), row-major.
    leaf_theta : ndarray, shape (n_all_leaves, K)
        True probability vector of each possible leaf.
    """

    tree: ContextTree
    alpha: np.ndarray
    leaf_paths: np.ndarray
    leaf_theta: np.ndarray


def _log_dirichlet_rows(rng: np.random.Generator, conc: np.ndarray) -> np.ndarray:
    """log of Dirichlet(conc) rows, exact for tiny concentrations (G = G1 * U^(1/a))."""
    conc = np.maximum(conc, 1e-300)
    log_g = np.log(rng.gamma(conc + 1.0)) + np.log(rng.uniform(size=conc.shape)) / conc
    m = log_g.max(axis=-1, keepdims=True)
    return log_g - (m + np.log(np.exp(log_g - m).sum(axis=-1, keepdims=True)))


def sample_tree(
    cardinalities: Sequence[int],
    n_values: int,
    n_rows: int,
    *,
    seed: int,
    alpha: float | Sequence[float] | None = None,
    alpha0: float = 2.0,
    prior_shape: float = 2.0,
    prior_rate: float = 1.0,
    path_concentration: float = 1.0,
) -> SampledTree:
    """Draw a context tree from the hierarchical Dirichlet model.

    Parameters
    ----------
    cardinalities : sequence of int
        Cardinality of each conditioning variable (class first); its length is the depth.
    n_values : int
        K, the number of values of the child.
    n_rows : int
        Number of data rows.
    seed : int
    alpha : float, sequence of float (one per depth) or None
        Concentrations (level tying); ``None`` draws them from Gamma(prior_shape, prior_rate).
    alpha0 : float
        Root concentration (base measure uniform).
    path_concentration : float
        The conditioning values are drawn top-down, each node's branch probabilities from a
        symmetric Dirichlet with this concentration: small values give skewed paths, hence
        sparse trees with many rarely visited leaves.
    """
    rng = np.random.default_rng(seed)
    cards = [int(c) for c in cardinalities]
    depth, k = len(cards), int(n_values)
    if depth < 1 or k < 2 or n_rows < 1:
        raise ValueError("need depth >= 1, n_values >= 2 and n_rows >= 1")
    if alpha is None:
        alphas = rng.gamma(prior_shape, 1.0 / prior_rate, size=depth)
    else:
        alphas = np.broadcast_to(np.asarray(alpha, dtype=float), (depth,)).copy()

    # node probability vectors of every possible prefix, level by level (row-major prefixes)
    log_phi = _log_dirichlet_rows(rng, np.full((1, k), alpha0 / k))
    log_path = np.zeros(1)  # log probability of reaching each prefix
    for d in range(depth):
        parent_phi = np.repeat(np.exp(log_phi), cards[d], axis=0)
        log_phi = _log_dirichlet_rows(rng, alphas[d] * parent_phi)
        branch = _log_dirichlet_rows(rng, np.full((log_path.size, cards[d]), path_concentration))
        log_path = (log_path[:, None] + branch).ravel()
    theta = np.exp(log_phi)

    path_p = np.exp(log_path - log_path.max())
    leaf_rows = rng.multinomial(n_rows, path_p / path_p.sum())
    counts = np.zeros((theta.shape[0], k), dtype=np.int64)
    for i in np.flatnonzero(leaf_rows):
        p = theta[i] / theta[i].sum()
        counts[i] = rng.multinomial(leaf_rows[i], p)
    paths = np.stack(np.unravel_index(np.arange(theta.shape[0]), cards), axis=1).astype(np.int64)
    tree = ContextTree.from_leaf_counts(paths, counts, cards, k)
    return SampledTree(tree, alphas, paths, theta)


@dataclass(frozen=True)
class SuiteEntry:
    """One tree of the acceptance suite (see :data:`SUITE`)."""

    name: str
    cardinalities: tuple[int, ...]
    n_values: int
    n_rows: int
    seed: int
    path_concentration: float = 1.0

    def sample(self) -> SampledTree:
        return sample_tree(
            self.cardinalities, self.n_values, self.n_rows, seed=self.seed,
            alpha0=float(self.n_values), path_concentration=self.path_concentration,
        )


#: acceptance suite: depth 1-5, K 2-6, sparse (few rows per leaf, skewed paths) and dense, up to a
#: few hundred nodes. The data are drawn with a flat root (alpha0 = K) so that several child values
#: occur; the model fitted to them keeps its own prior (alpha0 = 2).
SUITE: tuple[SuiteEntry, ...] = (
    SuiteEntry("d1_k2_dense", (3,), 2, 3000, seed=101),
    SuiteEntry("d1_k6_sparse", (5,), 6, 25, seed=102, path_concentration=0.5),
    SuiteEntry("d2_k3_dense", (3, 4), 3, 5000, seed=201),
    SuiteEntry("d2_k4_sparse", (3, 4), 4, 40, seed=202, path_concentration=0.5),
    SuiteEntry("d3_k2_sparse", (2, 3, 3), 2, 40, seed=301, path_concentration=0.5),
    SuiteEntry("d3_k5_dense", (2, 3, 3), 5, 4000, seed=302),
    SuiteEntry("d4_k3_sparse", (2, 3, 2, 3), 3, 80, seed=406, path_concentration=0.5),
    SuiteEntry("d4_k6_sparse", (3, 2, 3, 2), 6, 150, seed=402, path_concentration=0.5),
    SuiteEntry("d4_k4_wide", (4, 4, 3, 3), 4, 1500, seed=403),
    SuiteEntry("d5_k2_sparse", (2, 2, 3, 2, 3), 2, 100, seed=501, path_concentration=0.5),
    SuiteEntry("d5_k4_sparse", (3, 3, 2, 3, 2), 4, 200, seed=502, path_concentration=0.5),
    SuiteEntry("d5_k3_dense", (2, 3, 3, 2, 3), 3, 20000, seed=503),
    SuiteEntry("d5_k6_wide", (3, 3, 3, 3, 3), 6, 3000, seed=504),
)


def suite_tree(name: str) -> ContextTree:
    """The observed tree of the suite entry called ``name``."""
    for entry in SUITE:
        if entry.name == name:
            return entry.sample().tree
    raise KeyError(f"no suite tree called {name!r}; known: {[e.name for e in SUITE]}")
