"""The teaching pictures of docs/theory.md and docs/stirling.md, and the S(n, t) table.

    python examples/teaching_figures.py [--out docs/img] [--format png] [--table]

Writes theory_context_tree.png (the paper's Figure 3 redrawn for the bundled car data: a context
tree with each node's counts, mean table counts and estimates, from the teaching sampler),
theory_crd.png (the Chinese restaurant distribution of eq. 8), theory_shrinkage.png (a leaf
shrunk towards its parent as its count grows, exact posterior means) and
theory_alpha_posterior.png (the worked example's concentration: likelihood, priors, cap).
``--format svg`` (or ``pdf``, or ``png,svg``) writes vector files for slides instead of (or
beside) the site's PNGs. ``--table`` prints the Markdown table of S(n, t) shown on
docs/stirling.md. Equation numbers are the paper's (doi:10.1007/s10994-018-5718-0). About a
minute on one core.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
from scipy.special import digamma

from fastpath import load_dataset
from fastpath.counts import ContextTree
from hdpbn_ppl import teaching
from hdpbn_ppl.worked_example import DATASETS, concentration_profile, table_posterior

#: the file formats each figure is written in (``--format``)
FORMATS: list[str] = ["png"]


def _save(fig, stem: Path) -> None:
    for ext in FORMATS:
        fig.savefig(stem.with_suffix(f".{ext}"), dpi=110)


def car_tree() -> tuple[ContextTree, list[str], list[str], list[str]]:
    """P(safety | class, persons) of the car data, as a context tree."""
    x, y = load_dataset("car")
    child, parent = x["safety"].astype(str), x["persons"].astype(str)
    values = sorted(child.unique(), key=["low", "med", "high"].index)
    classes = sorted(y.astype(str).unique(), key=["unacc", "acc", "good", "vgood"].index)
    persons = sorted(parent.unique(), key=["2", "4", "more"].index)
    paths, counts = [], []
    for ci, c in enumerate(classes):
        for pi, p in enumerate(persons):
            rows = (y.astype(str) == c).to_numpy() & (parent == p).to_numpy()
            n = np.array([(child[rows] == v).sum() for v in values])
            if n.sum():
                paths.append([ci, pi])
                counts.append(n)
    tree = ContextTree.from_leaf_counts(np.array(paths), np.array(counts),
                                        [len(classes), len(persons)], len(values),
                                        child_name="safety",
                                        conditioning_names=["class", "persons"])
    return tree, values, classes, persons


def fig_context_tree(out: Path) -> None:
    tree, _, classes, persons = car_tree()
    run = teaching.gibbs(tree, 1500, burn_in=300, seed=1)
    tbar = run.table_counts[run.burn_in:].mean(axis=0)
    nbar = np.zeros_like(tbar)
    nbar[tree.leaves] = tree.counts[tree.leaves]
    for j in range(tree.n_nodes - 1, 0, -1):  # eq. (10) on the mean table counts
        nbar[tree.parent[j]] += tbar[j]
    depth = tree.node_depth
    x = np.zeros(tree.n_nodes)
    leaves = np.arange(tree.n_nodes)[tree.leaves]
    x[leaves] = np.arange(len(leaves))
    for d in range(tree.depth - 1, -1, -1):
        for j in np.flatnonzero(depth == d):
            x[j] = x[np.flatnonzero(tree.parent == j)].mean()
    # left to right: the root on the left, the leaves stacked on the right (legible at page width)
    fig, ax = plt.subplots(figsize=(9, 8.5))
    col = 3.2  # horizontal distance between depths
    for j in range(1, tree.n_nodes):
        p = tree.parent[j]
        ax.plot([col * depth[p], col * depth[j]], [-x[p], -x[j]], color="0.6", lw=1, zorder=1)
        label = (classes[tree.branch_value[j]] if depth[j] == 1
                 else f"persons={persons[tree.branch_value[j]]}")
        ax.text(col * (depth[p] + depth[j]) / 2, -(x[p] + x[j]) / 2, label, fontsize=8,
                ha="center", va="center", color="tab:blue",
                bbox=dict(fc="white", ec="none", pad=0.5))

    def fmt(v, d):
        return "[" + ", ".join(f"{u:.{d}f}" for u in v) + "]"

    for j in range(tree.n_nodes):
        if depth[j] == tree.depth:
            txt = f"n   {fmt(tree.counts[j], 0)}"
        else:
            txt = f"n̄   {fmt(nbar[j], 1)}"
        if j > 0:
            txt += f"\nt̄   {fmt(tbar[j], 1)}"
        txt += f"\nest {fmt(run.probabilities[j], 2)}"
        ax.text(col * depth[j], -x[j], txt, fontsize=8, ha="center", va="center",
                family="monospace", zorder=2,
                bbox=dict(boxstyle="round", fc="#fff8e7" if j else "#e8f0ff", ec="0.4"))
    ax.set_ylim(-len(leaves) + 0.4, 0.6)
    ax.set_xlim(-1.4, col * tree.depth + 1.4)
    ax.axis("off")
    a = run.alpha[run.burn_in:].mean(axis=0)
    ax.set_title("P(safety | class, persons), car data; values [low, med, high]\n"
                 "n: counts (leaves: the data; inside: mean of the sums of the children's t, "
                 "eq. 10)\nt̄: mean table counts; est: estimates (eqs. 12-14); level-tied "
                 f"α₁ = {a[0]:.1f}, α₂ = {a[1]:.1f}\n(posterior means; teaching sampler, "
                 "1,500 iterations)", fontsize=9)
    fig.tight_layout()
    _save(fig, out / "theory_context_tree")
    plt.close(fig)


def fig_crd(out: Path) -> None:
    n = 20
    log_s = teaching.log_stirling_table(n)
    fig, ax = plt.subplots(figsize=(8, 3.6))
    t = np.arange(n + 1)
    for a, c in zip((0.5, 2.0, 10.0, 50.0), ("tab:blue", "tab:orange", "tab:green", "tab:red"),
                    strict=True):
        p = teaching.crd_probabilities(n, a, log_s)
        ax.plot(t[1:], p[1:], "-o", ms=3, color=c, label=f"α = {a:g}")
        m = a * (digamma(a + n) - digamma(a))
        ax.plot([m], [0], "D", color=c, ms=7, clip_on=False)
    ax.set_xlabel("t, number of tables")
    ax.set_ylabel("P(t | n = 20, α)")
    ax.set_xticks(range(1, n + 1))
    ax.set_ylim(0, None)
    ax.legend(frameon=False)
    ax.set_title("Chinese restaurant distribution, eq. (8); diamonds: the mean "
                 "α(ψ(α+n) − ψ(α)) of eq. (15)", fontsize=9)
    fig.tight_layout()
    _save(fig, out / "theory_crd")
    plt.close(fig)


def fig_shrinkage(out: Path) -> None:
    sizes = np.array([1, 2, 3, 5, 8, 12, 20, 30, 50, 80, 120, 200])
    other = np.array([20, 5])
    hdp, root = [], []
    for n0 in sizes:
        ex = table_posterior(np.array([[n0, 0], other]))
        hdp.append(ex.theta[0, 0])
        root.append(ex.phi[0])
    m_est = (sizes + 0.5) / (sizes + 1.0)
    fig, ax = plt.subplots(figsize=(10, 3.8))
    ax.plot(sizes, np.ones_like(sizes, dtype=float), "s-", color="0.5", label="MLE n/N")
    ax.plot(sizes, m_est, "o-", color="tab:blue", label="m-estimate, m = 1 (pulls to 1/K)")
    ax.plot(sizes, hdp, "D-", color="tab:red", label="HDP posterior mean (pulls to the parent)")
    ax.plot(sizes, root, ":", color="tab:red", label="parent (root) posterior mean")
    ax.set_xscale("log")
    ax.set_xlabel("N, rows of the leaf Y = 0 (all with X1 = 0); leaf Y = 1 fixed at [20, 5]")
    ax.set_ylabel("P(X1 = 0 | Y = 0)")
    ax.legend(frameon=False, fontsize=8, loc="lower right")
    ax.set_title("Shrinkage, eq. (14): a small leaf borrows its parent's estimate; "
                 "exact posterior, Gamma(2, 1) prior", fontsize=9)
    fig.tight_layout()
    _save(fig, out / "theory_shrinkage")
    plt.close(fig)


def posterior_on_grid(counts, root: str, prior: str, cap: float, n_grid: int = 1500):
    """Posterior mean of theta and the density of log alpha, on a grid of log alpha up to cap.

    ``prior`` is "gamma21" (Gamma(2, 1)) or "improper" (the paper's nu_0 = mu_0 = 0: 1/alpha).
    """
    s = np.linspace(-12.0, np.log(cap), n_grid)
    a = np.exp(s)
    ll, theta = concentration_profile(counts, a, root=root)
    lp = ll + s + (np.log(a) - a if prior == "gamma21" else -np.log(a))  # d alpha = alpha ds
    w = np.exp(lp - lp.max())
    z = np.trapezoid(w, s)
    return np.trapezoid(w[:, None, None] * theta, s, axis=0) / z, s, w / z, ll


def fig_alpha(out: Path) -> None:
    counts = DATASETS["DS1"]
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(12, 4))
    _, s, w_g, ll = posterior_on_grid(counts, "exact", "gamma21", 4000.0)
    _, _, w_i, _ = posterior_on_grid(counts, "exact", "improper", 4000.0)
    ax1.plot(s / np.log(10), np.exp(ll - ll.max()), color="0.3", label="likelihood L(α) (scaled)")
    ax1.plot(s / np.log(10), w_g / w_g.max(), color="tab:blue",
             label="posterior, Gamma(2, 1) prior")
    ax1.plot(s / np.log(10), w_i / w_i.max(), color="tab:red",
             label="posterior, prior 1/α (ν₀ = μ₀ = 0), cap 4,000\n(in log α: L itself)")
    ax1.set_xlabel("log10 α")
    ax1.set_ylabel("density of log α (scaled to max 1)")
    ax1.set_xlim(-3, np.log10(4000))
    ax1.legend(frameon=False, fontsize=8)
    ax1.set_title("Worked example, dataset 1, exact root", fontsize=9)
    caps = np.array([40, 100, 400, 1000, 4000, 4e4, 4e5, 4e6])
    for root, ls in (("exact", "-"), ("reference", "--")):
        for prior, c in (("gamma21", "tab:blue"), ("improper", "tab:red")):
            v = [posterior_on_grid(counts, root, prior, cap, 800)[0][0, 0] for cap in caps]
            ax2.plot(caps, v, ls, marker="o", ms=3, color=c,
                     label=f"{'Gamma(2, 1)' if prior == 'gamma21' else '1/α'}, {root} root")
    ax2.axhline(0.89, color="0.5", lw=0.8)
    ax2.text(45, 0.892, "printed in the paper: 0.89", fontsize=8, color="0.4")
    ax2.axvline(4000, color="0.8", lw=0.8)
    ax2.set_xscale("log")
    ax2.set_xlabel("cap on α")
    ax2.set_ylabel("P(X1 = 0 | Y = 0)")
    ax2.legend(frameon=False, fontsize=8, loc=(0.42, 0.22))
    ax2.set_title("The estimate moves with the cap only under the improper prior", fontsize=9)
    fig.tight_layout()
    _save(fig, out / "theory_alpha_posterior")
    plt.close(fig)


def stirling_table(n_max: int = 7) -> str:
    log_s = teaching.log_stirling_table(n_max)
    head = "| n \\ t | " + " | ".join(str(t) for t in range(n_max + 1)) + " |"
    rows = [head, "|" + "---|" * (n_max + 2)]
    for n in range(n_max + 1):
        cells = [str(round(float(np.exp(log_s[n, t])))) if t <= n else "" for t in
                 range(n_max + 1)]
        rows.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="docs/img")
    ap.add_argument("--format", default="png",
                    help="comma-separated file formats: png (the site's), svg, pdf (for slides)")
    ap.add_argument("--table", action="store_true", help="only print the S(n, t) table")
    args = ap.parse_args(argv)
    FORMATS[:] = [f.strip() for f in args.format.split(",") if f.strip()]
    if args.table:
        print(stirling_table())
        return
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for f in (fig_crd, fig_shrinkage, fig_alpha, fig_context_tree):
        f(out)
        print("wrote", f.__name__)


if __name__ == "__main__":
    main()
