"""Simulation-based calibration of the fast sampler (Talts, Betancourt, Simpson, Vehtari & Gelman
2018, "Validating Bayesian inference algorithms with simulation-based calibration").

For a fixed tree skeleton (which leaves exist and how many rows each holds -- the model
conditions on the conditioning values), each replication

1. draws the concentrations from their Gamma(2, 1) prior, every node's probability vector from
   the HDP (root Dirichlet(alpha_0 / K), alpha_0 = 2) and the leaf counts from the multinomial
   (:func:`hdpbn_ppl.suite.draw_from_prior`);
2. runs fastpath on the simulated tree (one chain) keeping ``L`` thinned posterior draws of the
   concentrations and of the node probability vectors (``HDPOptions.record_draws``);
3. records, for each checked quantity, the rank of the true value among its ``L`` draws.

If the sampler draws from the exact posterior, every rank is uniform on {0, ..., L}. The ranks
are binned and tested with a chi-square test; a case passes when every p-value exceeds
0.01 / (number of tests) (Bonferroni). Checked quantities: every concentration, the root's and
some inner nodes' probabilities, and some leaf probabilities.

Draws are thinned so that they are nearly independent (correlated draws make the histograms U-shaped
even for an exact sampler); the report gives the median ESS / L of the concentration draws to show
it. All replications are sampled in one :func:`fastpath.estimate.hdp.estimate_trees` call (trees in
parallel threads, each with its own random stream).
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy import stats

from fastpath.counts import ContextTree
from fastpath.estimate import effective_sample_size
from fastpath.estimate.hdp import HDPOptions, estimate_trees
from fastpath.utils import save_figure
from hdpbn_ppl.suite import draw_from_prior

__all__ = [
    "ALL_CASES",
    "FULL_CASES",
    "QUICK_CASES",
    "SBCCase",
    "SBCResult",
    "plot_ranks",
    "report_markdown",
    "run_sbc",
    "skeleton",
]


@dataclass(frozen=True)
class SBCCase:
    """One calibration run.

    Attributes
    ----------
    name : str
    cardinalities : tuple of int
        Cardinality of each conditioning variable (class first).
    n_values : int
    leaf_rows : tuple of int
        Rows of every leaf, in row-major order of the full product of ``cardinalities``;
        all >= 1, so every simulated tree has the same nodes.
    tying, update, root : str
        Sampler settings (the data are always simulated from the exact model).
    replications, n_draws, thin, burn_in, bins, seed : int
        ``n_draws`` = L posterior draws per replication, kept every ``thin`` iterations after
        ``burn_in``; ranks in {0..L} are grouped in ``bins`` bins.
    prior_shape, prior_rate : float
        Gamma prior of the concentrations, for the simulation and the fit alike.
    fit_options : dict
        Extra :class:`~fastpath.estimate.hdp.HDPOptions` for the fit only -- used by negative
        controls (e.g. a wrong concentration prior) that must fail.
    expect_fail : bool
        A negative control: the test is expected to reject uniformity.
    leaf_checks : int
        Number of leaves whose first probability is checked (spread over the leaves).
    """

    name: str
    cardinalities: tuple[int, ...]
    n_values: int
    leaf_rows: tuple[int, ...]
    tying: str = "level"
    update: str = "exact"
    root: str = "exact"
    replications: int = 1000
    n_draws: int = 99
    thin: int = 50
    burn_in: int = 1000
    bins: int = 20
    seed: int = 0
    prior_shape: float = 2.0
    prior_rate: float = 1.0
    fit_options: dict = field(default_factory=dict, hash=False, compare=False)
    expect_fail: bool = False
    leaf_checks: int = 4

    def replace(self, **changes) -> SBCCase:
        return dataclasses.replace(self, **changes)

    def describe(self) -> str:
        rows = self.leaf_rows
        span = f"{min(rows)}-{max(rows)}" if min(rows) != max(rows) else f"{rows[0]}"
        extra = f", fit {self.fit_options}" if self.fit_options else ""
        if (self.prior_shape, self.prior_rate) != (2.0, 1.0):
            extra = f", alpha ~ Gamma({self.prior_shape:g}, {self.prior_rate:g})" + extra
        return (f"cards {self.cardinalities}, K={self.n_values}, {len(rows)} leaves x {span} rows, "
                f"tying {self.tying}, update {self.update}, root {self.root}{extra}")


def skeleton(case: SBCCase) -> ContextTree:
    """The tree shape of a case: every leaf path, with its row total in the first column."""
    cards = tuple(case.cardinalities)
    n_leaves = int(np.prod(cards))
    if len(case.leaf_rows) != n_leaves:
        raise ValueError(f"{case.name}: leaf_rows needs {n_leaves} values")
    if min(case.leaf_rows) < 1:
        raise ValueError(f"{case.name}: every leaf needs at least one row")
    paths = np.stack(np.unravel_index(np.arange(n_leaves), cards), axis=1).astype(np.int64)
    counts = np.zeros((n_leaves, case.n_values), dtype=np.int64)
    counts[:, 0] = case.leaf_rows
    return ContextTree.from_leaf_counts(paths, counts, cards, case.n_values)


def _checked_nodes(tree: ContextTree, n_leaf_checks: int) -> list[tuple[str, int, int]]:
    """(label, node, value) of the probabilities to check: root, first inner node per level, and
    ``n_leaf_checks`` leaves spread evenly (value 0; the root also value K-1)."""
    out = [("phi_root[0]", 0, 0), (f"phi_root[{tree.n_values - 1}]", 0, tree.n_values - 1)]
    for d in range(1, tree.depth):
        node = int(tree.level_offsets[d])
        out.append((f"phi_depth{d}[0]", node, 0))
    leaves = np.arange(tree.n_nodes)[tree.leaves]
    pick = np.unique(np.linspace(0, leaves.size - 1, min(n_leaf_checks, leaves.size)).round())
    for i in pick.astype(int):
        out.append((f"theta_leaf{i}[0]", int(leaves[i]), 0))
    return out


@dataclass
class SBCResult:
    """Ranks, uniformity tests and timing of one case."""

    case: SBCCase
    ranks: dict[str, np.ndarray]
    pvalues: dict[str, float]
    ess_ratio: float
    seconds: float
    tie_share: float = 0.0

    @property
    def n_tests(self) -> int:
        return len(self.pvalues)

    @property
    def threshold(self) -> float:
        return 0.01 / max(self.n_tests, 1)

    @property
    def min_p(self) -> float:
        return min(self.pvalues.values()) if self.pvalues else math.nan

    @property
    def passed(self) -> bool:
        return self.min_p > self.threshold

    def summary_line(self) -> str:
        worst = min(self.pvalues, key=self.pvalues.get)
        verdict = "uniform" if self.passed else "NOT uniform"
        return (f"{verdict}: min p = {self.min_p:.3g} ({worst}) vs {self.threshold:.2g} "
                f"(0.01 / {self.n_tests} tests), {self.case.replications} replications, "
                f"median ESS/L of alpha {self.ess_ratio:.2f}")

    def to_json(self) -> dict:
        c = dataclasses.asdict(self.case)
        return {"case": c, "ranks": {k: v.tolist() for k, v in self.ranks.items()},
                "pvalues": self.pvalues, "n_tests": self.n_tests, "threshold": self.threshold,
                "min_p": self.min_p, "passed": self.passed, "ess_ratio": self.ess_ratio,
                "seconds": self.seconds, "tie_share": self.tie_share}


def rank_pvalue(ranks: np.ndarray, n_draws: int, bins: int) -> float:
    """Chi-square test of uniformity of ranks in {0..n_draws}, grouped into ``bins`` bins."""
    if (n_draws + 1) % bins:
        raise ValueError(f"bins ({bins}) must divide the {n_draws + 1} possible ranks")
    counts = np.bincount(np.asarray(ranks) * bins // (n_draws + 1), minlength=bins)
    return float(stats.chisquare(counts).pvalue)


def run_sbc(case: SBCCase, *, n_threads: int | None = None) -> SBCResult:
    """Simulate, fit and rank every replication of ``case``."""
    sk = skeleton(case)
    rng = np.random.default_rng(case.seed)
    trees, alphas, phis = [], [], []
    for _ in range(case.replications):
        tree, alpha, phi = draw_from_prior(sk, case.tying, rng, shape=case.prior_shape,
                                           rate=case.prior_rate)
        trees.append(tree)
        alphas.append(alpha)
        phis.append(phi)
    checks = _checked_nodes(sk, case.leaf_checks)
    nodes = tuple(sorted({n for _, n, _ in checks}))
    opts = HDPOptions.preset(
        "paper", n_iter=case.burn_in + case.n_draws * case.thin, burn_in=case.burn_in,
        thin=case.thin, tying=case.tying, update=case.update, root=case.root, n_chains=1,
        record_draws=nodes,
        concentration_shape=case.prior_shape, concentration_rate=case.prior_rate,
    ).replace(**case.fit_options)
    if case.burn_in % case.thin:
        raise ValueError("burn_in must be a multiple of thin")
    t0 = time.perf_counter()
    results = estimate_trees(trees, opts, seed=case.seed, n_threads=n_threads)
    seconds = time.perf_counter() - t0

    n_groups = alphas[0].size
    tie_rng = np.random.default_rng([case.seed, 1])
    n_ties = [0]

    def rank(draws: np.ndarray, truth: float) -> int:
        # ties (probabilities that underflowed to 0 on both sides) are broken at random, which
        # keeps the rank uniform: given that both fall below double precision, their order is
        # exchangeable
        below = int(np.sum(draws < truth))
        ties = int(np.sum(draws == truth))
        n_ties[0] += ties > 0
        return below + int(tie_rng.integers(0, ties + 1)) if ties else below

    ranks: dict[str, list[int]] = {f"alpha[{g}]": [] for g in range(n_groups)}
    ranks.update({label: [] for label, _, _ in checks})
    ess = []
    for res, alpha, phi in zip(results, alphas, phis, strict=True):
        kept = res.trace.kept
        conc = res.trace.concentrations[0, kept]  # (L, G)
        if conc.shape[0] != case.n_draws or res.draws.shape[1] != case.n_draws:
            raise RuntimeError("unexpected number of posterior draws")
        for g in range(n_groups):
            ranks[f"alpha[{g}]"].append(rank(conc[:, g], alpha[g]))
        pos = {int(n): i for i, n in enumerate(res.draw_node_ids)}
        for label, node, k in checks:
            ranks[label].append(rank(res.draws[0, :, pos[node], k], phi[node, k]))
        if n_groups:
            ess.append(effective_sample_size(conc[None, :, 0]) / case.n_draws)
    rank_arrays = {k: np.asarray(v, dtype=np.int64) for k, v in ranks.items()}
    pvalues = {k: rank_pvalue(v, case.n_draws, case.bins) for k, v in rank_arrays.items()}
    ess_ratio = float(np.nanmedian(ess)) if ess else math.nan
    n_ranks = sum(v.size for v in rank_arrays.values())
    return SBCResult(case, rank_arrays, pvalues, ess_ratio, seconds, n_ties[0] / max(n_ranks, 1))


# ---------------------------------------------------------------------------- cases
def _rows(n: int, seed: int, low: int, high: int) -> tuple[int, ...]:
    return tuple(int(x) for x in np.random.default_rng(seed).integers(low, high + 1, size=n))


_TINY = dict(cardinalities=(3,), n_values=3, leaf_rows=(1, 3, 8))
_SMALL = dict(cardinalities=(2, 3), n_values=3, leaf_rows=_rows(6, 7, 1, 12))
_SPARSE3 = dict(cardinalities=(2, 2, 3), n_values=2, leaf_rows=_rows(12, 8, 1, 4))
# counts large enough that the +-10 window does not cover the feasible table counts
_WIDE = dict(cardinalities=(2, 5), n_values=4, leaf_rows=_rows(10, 9, 150, 400))

# 40 leaves of ~1,000 rows with large concentrations (prior mean 30): table counts spread far
# beyond +-10, where research before issue 3 measured the window's bias on alpha
_LARGE = dict(cardinalities=(4, 10), n_values=4, leaf_rows=_rows(40, 10, 800, 1200),
              prior_shape=30.0, prior_rate=1.0)

_OVERRELAX = {"overrelax": True}
#: the moves of the adaptive (default) and strict presets (formerly "fast") at SBC's fixed
#: lengths
_FAST_MOVES = {"overrelax": True, "concentration_every": 1}

#: CI: a tiny tree, exact update (plain and overrelaxed), plus a negative control that must be
#: rejected
QUICK_CASES: tuple[SBCCase, ...] = (
    SBCCase("tiny_exact", **_TINY, replications=500, bins=10, seed=1),
    SBCCase("tiny_overrelaxed", **_TINY, replications=500, bins=10, seed=1,
            fit_options=_OVERRELAX),
    SBCCase("tiny_wrong_prior", **_TINY, replications=500, bins=10, seed=1,
            fit_options={"concentration_rate": 0.25}, expect_fail=True),
)

FULL_CASES: tuple[SBCCase, ...] = (
    SBCCase("tiny_exact", **_TINY, seed=1),
    SBCCase("tiny_window", **_TINY, update="window", seed=1),
    SBCCase("small_exact", **_SMALL, seed=2),
    SBCCase("small_window", **_SMALL, update="window", seed=2),
    SBCCase("small_none_exact", **_SMALL, tying="none", seed=3),
    SBCCase("sparse3_sameparent_exact", **_SPARSE3, tying="same-parent", seed=4),
    SBCCase("sparse3_sameparent_window", **_SPARSE3, tying="same-parent", update="window",
            seed=4),
    SBCCase("wide_exact", **_WIDE, seed=5, thin=100, burn_in=2000),
    SBCCase("wide_window", **_WIDE, update="window", seed=5, thin=100, burn_in=2000),
    SBCCase("large_alpha_exact", **_LARGE, seed=6, thin=200, burn_in=2000, replications=500),
    SBCCase("large_alpha_window", **_LARGE, update="window", seed=6, thin=200, burn_in=2000,
            replications=500),
    SBCCase("small_root_reference", **_SMALL, root="reference", seed=2, expect_fail=True),
    # the default and strict presets' moves (overrelaxed, concentrations every iteration)
    SBCCase("tiny_fast", **_TINY, seed=1, fit_options=_FAST_MOVES),
    SBCCase("small_fast", **_SMALL, seed=2, fit_options=_FAST_MOVES),
    SBCCase("small_none_fast", **_SMALL, tying="none", seed=3, fit_options=_FAST_MOVES),
    SBCCase("sparse3_sameparent_fast", **_SPARSE3, tying="same-parent", seed=4,
            fit_options=_FAST_MOVES),
    SBCCase("wide_fast", **_WIDE, seed=5, thin=100, burn_in=2000, fit_options=_FAST_MOVES),
    SBCCase("large_alpha_fast", **_LARGE, seed=6, thin=200, burn_in=2000, replications=500,
            fit_options=_FAST_MOVES),
    # the overrelaxed exact update (overrelax=True) on the same simulations
    SBCCase("tiny_overrelaxed", **_TINY, seed=1, fit_options=_OVERRELAX),
    SBCCase("small_overrelaxed", **_SMALL, seed=2, fit_options=_OVERRELAX),
    SBCCase("small_none_overrelaxed", **_SMALL, tying="none", seed=3, fit_options=_OVERRELAX),
    SBCCase("sparse3_sameparent_overrelaxed", **_SPARSE3, tying="same-parent", seed=4,
            fit_options=_OVERRELAX),
    SBCCase("wide_overrelaxed", **_WIDE, seed=5, thin=100, burn_in=2000,
            fit_options=_OVERRELAX),
    SBCCase("large_alpha_overrelaxed", **_LARGE, seed=6, thin=200, burn_in=2000,
            replications=500, fit_options=_OVERRELAX),
)

ALL_CASES: tuple[SBCCase, ...] = tuple({c.name: c for c in QUICK_CASES + FULL_CASES}.values())


# ---------------------------------------------------------------------------- report
def report_markdown(results: list[SBCResult]) -> str:
    lines = ["| case | setting | replications | tests | min p | threshold | ESS/L (alpha) "
             "| ties | uniform | s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        tag = " (negative control)" if r.case.expect_fail else ""
        lines.append(
            f"| {r.case.name}{tag} | {r.case.describe()} | {r.case.replications} | {r.n_tests} "
            f"| {r.min_p:.3g} | {r.threshold:.2g} | {r.ess_ratio:.2f} | {r.tie_share:.3f} "
            f"| {'yes' if r.passed else '**no**'} | {r.seconds:.1f} |")
    return "\n".join(lines) + "\n"


def plot_ranks(result: SBCResult, path) -> None:
    """Rank histograms with the 99 % band of a uniform histogram (Talts et al., Fig. 1)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    case = result.case
    names = list(result.ranks)
    ncol = min(4, len(names))
    nrow = math.ceil(len(names) / ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(2.6 * ncol, 1.9 * nrow), squeeze=False)
    n = case.replications
    lo, hi = stats.binom.ppf([0.005, 0.995], n, 1.0 / case.bins)
    for ax, name in zip(axes.flat, names, strict=False):
        counts = np.bincount(result.ranks[name] * case.bins // (case.n_draws + 1),
                             minlength=case.bins)
        ax.axhspan(lo, hi, color="0.85")
        ax.axhline(n / case.bins, color="0.5", lw=0.8)
        ax.bar(np.arange(case.bins), counts, width=1.0, color="tab:blue", alpha=0.8)
        ax.set_title(f"{name}  p={result.pvalues[name]:.2g}", fontsize=7)
        ax.set_xticks([])
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[len(names):]:
        ax.axis("off")
    fig.suptitle(f"{case.name}: {case.describe()}", fontsize=7)
    fig.tight_layout()
    save_figure(fig, path, dpi=110)
    plt.close(fig)
